"""The gateway's configuration checks (viewer_gateway/checks.py), in process: what `manage.py check` and every
command that runs the checks report. tests/gateway/test_config.py runs the commands themselves."""

import dataclasses

from django.core.checks import run_checks
from django.core.management import get_commands

from viewer_gateway.checks import CONFIGURATION_TAG


def gateway_errors():
    return [(error.id, error.msg, error.hint) for error in run_checks(tags=[CONFIGURATION_TAG])]


def test_a_readable_configuration_with_a_runnable_converter_passes():
    assert gateway_errors() == []


def test_a_configuration_that_could_not_be_read_is_error_e001_naming_the_key(settings):
    settings.VIEWER_CONFIG_ERROR = "trashRetentionDays: must not be negative (0 purges at the next purge run), got -1"
    [(error_id, message, hint)] = gateway_errors()
    assert error_id == "gateway.E001" and message.startswith("trashRetentionDays:")
    assert hint.startswith("correct the key trashRetentionDays in ") and hint.endswith(" or the environment variable VIEWER_TRASH_RETENTION_DAYS")


def test_a_file_that_is_not_json_is_error_e001_naming_the_file(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("VIEWER_CONFIG", str(tmp_path / "server_config.json"))
    settings.VIEWER_CONFIG_ERROR = f"{tmp_path / 'server_config.json'}: the top level must be a JSON object"
    [(error_id, _, hint)] = gateway_errors()
    assert (error_id, hint) == ("gateway.E001", f"correct the configuration file {tmp_path / 'server_config.json'} (VIEWER_CONFIG)")


def test_a_converter_that_cannot_run_is_error_e002_naming_the_key(settings):
    settings.VIEWER = dataclasses.replace(settings.VIEWER, nodeBin="no-such-node-binary")
    [(error_id, message, hint)] = gateway_errors()
    assert error_id == "gateway.E002" and message.startswith("nodeBin: 'no-such-node-binary' is not an executable")
    assert hint.startswith("correct the key nodeBin in ")


def test_run_gateway_is_the_gateway_apps_command():
    assert get_commands()["run_gateway"] == "viewer_gateway"
