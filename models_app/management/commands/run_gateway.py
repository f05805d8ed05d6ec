import logging

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections

from models_app.signals import gateway_starting
from viewer_gateway import server
from viewer_gateway.config import require_converter

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Applies migrations, then serves the gateway with Daphne on the configured host and port."

    def handle(self, *args, **options):
        config = settings.VIEWER
        require_converter(config)
        if not config.listens_on_loopback and not config.apiToken:
            logger.warning("the gateway listens on %s without an apiToken: anyone who reaches it can use the API; set apiToken", config.host)
        call_command("migrate", interactive=False, verbosity=0)
        gateway_starting.send(sender=None)
        connections.close_all()
        self.stdout.write(f"gateway on http://{config.host}:{config.port} (config: {config.source}, data: {config.dataDir})")
        self.stdout.flush()
        server.run(config.host, config.port)
