"""The gateway's configuration problems as Django system checks: `manage.py check` reports them, and every command
that runs the checks (run_gateway and the workers among them) refuses to start on one, with the same message."""

from django.conf import settings
from django.core.checks import Error

from core.system_checks import CONFIGURATION_TAG  # noqa: F401 - the gateway registers its checks under it
from viewer_gateway.config import converter_problem, where_to_fix


def configuration_check(app_configs=None, **kwargs) -> list[Error]:
    """A configuration that could not be read; the settings stand on the defaults meanwhile."""
    problem = settings.VIEWER_CONFIG_ERROR
    return [Error(problem, hint=where_to_fix(problem), id="gateway.E001")] if problem else []


def converter_check(app_configs=None, **kwargs) -> list[Error]:
    """A converter the conversions cannot run (only once the configuration could be read)."""
    problem = None if settings.VIEWER_CONFIG_ERROR else converter_problem(settings.VIEWER)
    return [Error(problem, hint=where_to_fix(problem), id="gateway.E002")] if problem else []
