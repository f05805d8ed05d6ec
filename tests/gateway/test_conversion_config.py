"""Configuration of conversion confinement: memory cap, cgroup root and the explicit opt-in to run without one."""

import json
from pathlib import Path

import pytest

from models_app.conversion.sandbox import ConversionLimits
from viewer_gateway.config import ConfigError, load_config


def config_from(tmp_path, values: dict, **environ):
    path = tmp_path / "server_config.json"
    path.write_text(json.dumps(values))
    return load_config({"VIEWER_CONFIG": str(path), **environ})


def test_defaults_cap_memory_and_fail_closed(tmp_path):
    config = config_from(tmp_path, {})
    limits = ConversionLimits.from_config(config)
    assert (config.conversionMemoryMB, config.conversionAllowNoCgroup) == (4096, False)
    assert limits.memory_bytes == 4096 * 2**20 and limits.cgroup_root == "/sys/fs/cgroup" and not limits.allow_no_cgroup


def test_the_opt_in_comes_from_the_file_or_the_environment(tmp_path):
    assert config_from(tmp_path, {"conversionAllowNoCgroup": True}).conversionAllowNoCgroup is True
    assert config_from(tmp_path, {}, VIEWER_CONVERSION_ALLOW_NO_CGROUP="1").conversionAllowNoCgroup is True
    assert config_from(tmp_path, {"conversionAllowNoCgroup": True}, VIEWER_CONVERSION_ALLOW_NO_CGROUP="0").conversionAllowNoCgroup is False


@pytest.mark.parametrize("values, environ, key", [
    ({"conversionAllowNoCgroup": "yes please"}, {}, "conversionAllowNoCgroup"),
    ({"conversionAllowNoCgroup": 1}, {}, "conversionAllowNoCgroup"),
    ({}, {"VIEWER_CONVERSION_ALLOW_NO_CGROUP": "maybe"}, "conversionAllowNoCgroup"),
    ({"conversionMemoryMB": 0}, {}, "conversionMemoryMB"),
    ({"conversionMemoryMB": 1.5}, {}, "conversionMemoryMB"),
    ({"conversionMemoryMB": True}, {}, "conversionMemoryMB"),
])
def test_malformed_values_name_the_key(tmp_path, values, environ, key):
    with pytest.raises(ConfigError) as refused:
        config_from(tmp_path, values, **environ)
    assert str(refused.value).startswith(key)


def test_a_relative_cgroup_root_is_resolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert config_from(tmp_path, {"conversionCgroupRoot": "cg"}).conversionCgroupRoot == Path(tmp_path / "cg").resolve()
