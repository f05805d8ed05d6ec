from django.core.management import call_command
from django.core.management.base import BaseCommand

from models_app import services
from models_app.tasks import CONVERSION_QUEUE


class Command(BaseCommand):
    help = "Runs one conversion worker (IFC -> XKT + metadata.json); resumes conversions interrupted by a crash."

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between polls of an empty queue")

    def handle(self, *args, **options):
        services.remove_deleted_model_leftovers()
        recovered = services.recover_interrupted_conversions()
        if recovered:
            self.stdout.write(f"re-queued interrupted conversions: {', '.join(recovered)}")
        call_command("db_worker", queue_name=CONVERSION_QUEUE, interval=options["interval"], startup_delay=False)
