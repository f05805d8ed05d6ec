from django.core.management.base import BaseCommand, CommandError

from core.errors import ApplicationError
from models_app import services


class Command(BaseCommand):
    help = "Re-queues conversions: failed models by default, every model with --all, or the given model ids."

    def add_arguments(self, parser):
        parser.add_argument("model_ids", nargs="*", help="model ids (m_ + 16 hex)")
        parser.add_argument("--all", action="store_true", dest="include_all", help="re-convert every model")

    def handle(self, *args, model_ids, include_all, **options):
        if model_ids and include_all:
            raise CommandError("give model ids or --all, not both")
        try:
            models = services.retry_conversions(model_ids=model_ids, include_all=include_all)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        for model in models:
            self.stdout.write(f"{model.id} {model.name}: re-queued")
        self.stdout.write(f"{len(models)} conversion(s) re-queued")
