"""Gateway configuration: server_config.json plus the environment overrides of the spec.

The file's path comes from VIEWER_CONFIG (default ./server_config.json); relative paths inside it are resolved
against the process working directory. A missing file means defaults; a malformed one (ConfigError, naming the
offending key) is reported by the system check gateway.E001 (viewer_gateway/checks.py), and by this module's command
line with one line and exit 2. Keys starting with "_" are comments. Without `converterScript` the converter
shipped in this checkout is used (the spec's default ../converter/convert.js only fits a checkout beside the data).
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

from models_app.conversion import SHIPPED_CONVERTER
from sandboxing.limits import FALSE_WORDS, TRUE_WORDS

DEFAULT_CONFIG_PATH = "./server_config.json"
LOOPBACK_HOST_NAMES = ("127.0.0.1", "localhost", "[::1]")


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class GatewayConfig:
    host: str = "127.0.0.1"
    port: int = 8090
    dataDir: Path = Path("../data")
    nodeBin: str = "node"
    converterScript: Path = SHIPPED_CONVERTER
    maxUploadMB: float = 200
    pgDSN: str = ""
    editServiceURL: str = "http://127.0.0.1:8100"
    apiToken: str = ""
    corsOrigins: tuple[str, ...] = ("http://localhost:5173", "http://localhost:8080")
    llmAPIKey: str = ""
    llmBaseURL: str = ""
    llmModel: str = ""
    # Extensions beyond the spec's table (documented in the README).
    llmContextTokens: int = 64000
    llmPricePerMTokIn: float = 0
    llmPricePerMTokOut: float = 0
    llmPricePerMTokCachedIn: float = 0
    conversionTimeoutSeconds: float = 1800
    conversionWorkers: int = 2
    conversionMemoryMB: int = 4096
    conversionCgroupRoot: Path = Path("/sys/fs/cgroup")
    conversionAllowNoCgroup: bool = False
    editServiceTimeoutSeconds: float = 300
    redisURL: str = ""
    allowedHosts: tuple[str, ...] = ()
    trustedProxies: tuple[str, ...] = ()
    # docs/operations/gateway-hardening.md: failed bearer-token attempts per client address and window, open event
    # streams per client address
    tokenFailureLimit: int = 20
    tokenFailureWindowSeconds: int = 60
    maxStreamsPerClient: int = 20
    trashRetentionDays: int = 30
    # single sign-on with an OpenID Connect provider (docs/security/single-sign-on.md); off while oidcIssuer is empty
    oidcIssuer: str = ""
    oidcClientId: str = ""
    oidcClientSecret: str = ""
    oidcName: str = "single sign-on"
    oidcUsernameClaim: str = "preferred_username"
    oidcGroupsClaim: str = ""
    oidcAdminGroups: tuple[str, ...] = ()
    oidcGuestGroups: tuple[str, ...] = ()
    oidcScopes: str = "openid email profile"
    source: str = field(default="defaults", compare=False)

    @property
    def max_upload_bytes(self) -> int:
        return int(self.maxUploadMB * 1024 * 1024)

    @property
    def oidc_enabled(self) -> bool:
        return bool(self.oidcIssuer)

    @property
    def listens_on_loopback(self) -> bool:
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return self.host == "localhost"

    @cached_property
    def trusted_proxy_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return tuple(ipaddress.ip_network(entry, strict=False) for entry in self.trustedProxies)

    def allowed_host_names(self) -> list[str]:
        """Host header values the gateway answers (Django ALLOWED_HOSTS), against DNS rebinding: the loopback names,
        the listen address unless it is a wildcard, and `allowedHosts` (names a reverse proxy or users reach it by)."""
        names = [*LOOPBACK_HOST_NAMES, *self.allowedHosts]
        if self.host not in ("0.0.0.0", "::", "[::]", ""):
            names.append(f"[{self.host}]" if ":" in self.host else self.host)
        return list(dict.fromkeys(names))


# key -> (accepted JSON types, converter)
_KEYS = {
    "host": ((str,), str),
    "port": ((int,), int),
    "dataDir": ((str,), Path),
    "nodeBin": ((str,), str),
    "converterScript": ((str,), Path),
    "maxUploadMB": ((int, float), float),
    "pgDSN": ((str,), str),
    "editServiceURL": ((str,), lambda v: v.rstrip("/")),
    "apiToken": ((str,), str),
    "corsOrigins": ((str, list), None),
    "llmAPIKey": ((str,), str),
    "llmBaseURL": ((str,), str),
    "llmModel": ((str,), str),
    "llmContextTokens": ((int,), int),
    "llmPricePerMTokIn": ((int, float), float),
    "llmPricePerMTokOut": ((int, float), float),
    "llmPricePerMTokCachedIn": ((int, float), float),
    "conversionTimeoutSeconds": ((int, float), float),
    "conversionWorkers": ((int,), int),
    "conversionMemoryMB": ((int,), int),
    "conversionCgroupRoot": ((str,), Path),
    "conversionAllowNoCgroup": ((bool,), bool),
    "editServiceTimeoutSeconds": ((int, float), float),
    "redisURL": ((str,), str),
    "allowedHosts": ((str, list), None),
    "trustedProxies": ((str, list), None),
    "tokenFailureLimit": ((int,), int),
    "tokenFailureWindowSeconds": ((int,), int),
    "maxStreamsPerClient": ((int,), int),
    "trashRetentionDays": ((int,), int),
    "oidcIssuer": ((str,), None),
    "oidcClientId": ((str,), str),
    "oidcClientSecret": ((str,), str),
    "oidcName": ((str,), str),
    "oidcUsernameClaim": ((str,), str),
    "oidcGroupsClaim": ((str,), str),
    "oidcAdminGroups": ((str, list), None),
    "oidcGuestGroups": ((str, list), None),
    "oidcScopes": ((str,), None),
}

_ENV_OVERRIDES = {
    "pgDSN": "VIEWER_PG_DSN",
    "editServiceURL": "VIEWER_EDIT_SERVICE_URL",
    "apiToken": "VIEWER_API_TOKEN",
    "corsOrigins": "VIEWER_CORS_ORIGINS",
    "redisURL": "VIEWER_REDIS_URL",
    "allowedHosts": "VIEWER_ALLOWED_HOSTS",
    "trustedProxies": "VIEWER_TRUSTED_PROXIES",
    "conversionAllowNoCgroup": "VIEWER_CONVERSION_ALLOW_NO_CGROUP",
    "trashRetentionDays": "VIEWER_TRASH_RETENTION_DAYS",
    # Not in the spec's table: the provider's client secret is better kept out of the file.
    "oidcIssuer": "VIEWER_OIDC_ISSUER",
    "oidcClientId": "VIEWER_OIDC_CLIENT_ID",
    "oidcClientSecret": "VIEWER_OIDC_CLIENT_SECRET",
    # Not in the spec's table: lets `make run` give gateway and edit service one data directory.
    "dataDir": "VIEWER_DATA_DIR",
}


def _string_list(key: str, value: str | list) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not all(isinstance(item, str) for item in items):
        raise ConfigError(f"{key}: every item must be a string")
    return tuple(item.strip().rstrip("/") for item in items if item.strip())


def _proxy_networks(value: str | list) -> tuple[str, ...]:
    entries = _string_list("trustedProxies", value)
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ConfigError(f"trustedProxies: {entry!r} is not an IP address or network (e.g. 10.0.0.5 or 10.0.0.0/24)") from None
    return entries


def _oidc_issuer(value: str) -> str:
    if not value:
        return ""
    parts = urlsplit(value)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if not parts.hostname or parts.query or parts.fragment or not (parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        raise ConfigError(f"oidcIssuer: expected the provider's https:// issuer URL (http only on loopback), without query or fragment, got {json.dumps(value)}")
    return value


def _oidc_scopes(value: str) -> str:
    scopes = value.split()
    if "openid" not in scopes:
        raise ConfigError(f"oidcScopes: must include \"openid\", got {json.dumps(value)}")
    return " ".join(scopes)


def _oidc_problem(config: GatewayConfig) -> str | None:
    """What single sign-on lacks to work, naming the key; None when it is off or complete."""
    if not config.oidcIssuer:
        return None
    for key in ("oidcClientId", "oidcClientSecret", "oidcUsernameClaim"):
        if not getattr(config, key).strip():
            return f"{key}: required with oidcIssuer (the client registered at the provider)"
    return None


def _convert(key: str, value):
    accepted, converter = _KEYS[key]
    if accepted == (bool,) and isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        value = value.strip().lower() in TRUE_WORDS  # from the environment
    if (isinstance(value, bool) and bool not in accepted) or not isinstance(value, accepted):
        names = " or ".join(dict.fromkeys("number" if t in (int, float) else {str: "string", list: "list", bool: "true or false"}[t] for t in accepted))
        raise ConfigError(f"{key}: expected {names}, got {json.dumps(value)}")
    if key in ("corsOrigins", "allowedHosts"):
        return _string_list(key, value)
    if key == "trustedProxies":
        return _proxy_networks(value)
    if key in ("oidcAdminGroups", "oidcGuestGroups"):
        return _string_list(key, value)
    if key == "oidcIssuer":
        return _oidc_issuer(value.strip())
    if key == "oidcScopes":
        return _oidc_scopes(value)
    if key in ("port", "conversionWorkers", "maxUploadMB", "tokenFailureLimit", "tokenFailureWindowSeconds", "maxStreamsPerClient", "conversionTimeoutSeconds", "editServiceTimeoutSeconds", "conversionMemoryMB") and value <= 0:
        raise ConfigError(f"{key}: must be positive, got {value}")
    if key == "llmContextTokens" and value < 2000:
        raise ConfigError(f"{key}: must be at least 2000 (a turn needs room for the prompt, the tools and an answer), got {value}")
    if key == "trashRetentionDays" and value < 0:
        raise ConfigError(f"{key}: must not be negative (0 purges at the next purge run), got {value}")
    if key.startswith("llmPricePerMTok") and value < 0:
        raise ConfigError(f"{key}: must not be negative, got {value}")
    return converter(value)


def _resolve(path: Path) -> Path:
    return path if path.is_absolute() else (Path.cwd() / path).resolve()


def config_path(environ=None) -> Path:
    environ = os.environ if environ is None else environ
    return Path(environ.get("VIEWER_CONFIG") or DEFAULT_CONFIG_PATH)


def load_config(environ=None) -> GatewayConfig:
    environ = os.environ if environ is None else environ
    path = config_path(environ)
    values: dict = {}
    source = "defaults"
    if path.exists():
        source = str(path)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: the top level must be a JSON object")
        for key, value in raw.items():
            if key.startswith("_"):
                continue
            if key not in _KEYS:
                raise ConfigError(f"{key}: unknown configuration key in {path}")
            values[key] = _convert(key, value)
    for key, env_name in _ENV_OVERRIDES.items():
        if environ.get(env_name):
            raw_value = environ[env_name]
            if _KEYS[key][0] == (int,) and raw_value.strip().isdigit():
                raw_value = int(raw_value)  # an environment value is always text
            values[key] = _convert(key, raw_value)
    config = GatewayConfig(**values, source=source)
    if problem := _oidc_problem(config):
        raise ConfigError(problem)
    return GatewayConfig(
        **{
            **{k: getattr(config, k) for k in _KEYS},
            "dataDir": _resolve(config.dataDir),
            "converterScript": _resolve(config.converterScript),
            "conversionCgroupRoot": _resolve(config.conversionCgroupRoot),
            "source": source,
        }
    )


def converter_problem(config: GatewayConfig) -> str | None:
    """Why conversions cannot run with this configuration, naming the key to fix; None when they can."""
    if shutil.which(config.nodeBin) is None:
        return f"nodeBin: {config.nodeBin!r} is not an executable on PATH (install node >= 18 or set nodeBin)"
    if config.converterScript == SHIPPED_CONVERTER and not SHIPPED_CONVERTER.is_file():
        return f"converterScript: the shipped converter {SHIPPED_CONVERTER} is not built yet (make setup builds it)"
    if not config.converterScript.is_file():
        return f"converterScript: {config.converterScript} does not exist (leave the key out to use {SHIPPED_CONVERTER})"
    return None


def where_to_fix(problem: str) -> str:
    """Where to fix a problem whose message starts with the key it is about ("maxUploadMB: expected number ...")."""
    key = problem.split(":", 1)[0]
    if key not in _KEYS:
        return f"correct the configuration file {config_path()} (VIEWER_CONFIG)"
    override = f" or the environment variable {_ENV_OVERRIDES[key]}" if key in _ENV_OVERRIDES else ""
    return f"correct the key {key} in {config_path()}{override}"


def load_config_or_defaults() -> tuple[GatewayConfig, str | None]:
    """The configuration, and why it could not be read (None when it could). With a malformed configuration the
    defaults stand in, only so that Django can start far enough to report the problem (system check gateway.E001)."""
    try:
        return load_config(), None
    except ConfigError as exc:
        return GatewayConfig(), str(exc)


def _exit_with(message: str) -> None:
    sys.stderr.write(f"configuration error: {message}\n")
    raise SystemExit(2)


if __name__ == "__main__":
    # `python -m viewer_gateway.config KEY` prints one resolved value; `--check-converter` checks the converter
    # (both used by the Makefile, before any Django process starts): one line and exit 2 on a problem.
    try:
        cfg = load_config()
    except ConfigError as exc:
        _exit_with(str(exc))
    if sys.argv[1:] == ["--check-converter"]:
        if problem := converter_problem(cfg):
            _exit_with(problem)
    else:
        print(getattr(cfg, sys.argv[1]) if len(sys.argv) > 1 else cfg)
