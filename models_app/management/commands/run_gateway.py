import os
import shutil
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Applies migrations, then serves the gateway with Daphne on the configured host and port."

    def handle(self, *args, **options):
        call_command("migrate", interactive=False, verbosity=0)
        config = settings.VIEWER
        daphne = shutil.which("daphne", path=os.path.dirname(sys.executable)) or "daphne"
        self.stdout.write(f"gateway on http://{config.host}:{config.port} (config: {config.source}, data: {config.dataDir})")
        self.stdout.flush()
        os.execv(daphne, [daphne, "-b", config.host, "-p", str(config.port), "--proxy-headers", "viewer_gateway.asgi:application"])
