from django.apps import AppConfig
from django.core import checks


class GatewayConfig(AppConfig):
    """The project shell as an installed app: its system checks and the run_gateway command."""

    name = "viewer_gateway"
    label = "gateway"
    verbose_name = "Gateway"

    def ready(self):
        from viewer_gateway.checks import CONFIGURATION_TAG, configuration_check, converter_check

        checks.register(configuration_check, CONFIGURATION_TAG)
        checks.register(converter_check, CONFIGURATION_TAG)
