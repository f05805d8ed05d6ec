import logging
import os

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from accounts_app.mode import accounts_enabled
from models_app.signals import gateway_starting
from viewer_gateway import server

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Applies migrations, then serves the gateway (uvicorn, serving/http_server.py) on the configured host and port."

    def handle(self, *args, **options):
        config = settings.VIEWER  # the system checks (viewer_gateway/checks.py) have refused a bad one
        call_command("migrate", interactive=False, verbosity=0)
        if not config.listens_on_loopback and not config.apiToken and not accounts_enabled():
            if os.environ.get("VIEWER_ALLOW_ANONYMOUS_NETWORK") != "1":
                raise CommandError(
                    f"the gateway would listen on {config.host} without an apiToken, so anyone who reaches it could use the API: "
                    "create the first account (manage.py user create NAME --role admin), set apiToken (or VIEWER_API_TOKEN), "
                    "or VIEWER_ALLOW_ANONYMOUS_NETWORK=1 to serve it anonymously on purpose"
                )
            logger.warning("the gateway listens on %s without an apiToken (VIEWER_ALLOW_ANONYMOUS_NETWORK=1): anyone who reaches it can use the API", config.host)
        gateway_starting.send(sender=None)
        connections.close_all()
        self.stdout.write(f"gateway on http://{config.host}:{config.port} (config: {config.source}, data: {config.dataDir})")
        self.stdout.flush()
        server.run(config.host, config.port)
