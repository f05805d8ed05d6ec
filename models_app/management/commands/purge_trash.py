from django.core.management.base import BaseCommand, CommandError

from core.errors import ApplicationError
from models_app import trash_services
from api.principal import Principal

COMMAND_PRINCIPAL = Principal("manage.py purge_trash")


class Command(BaseCommand):
    help = ("Purges the trash: what is past its purgeAt by default, everything with --all, or the given items with --id. "
            "Files and records go for good; the change log and the deletion records stay.")

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", dest="everything", help="purge everything in the trash now")
        parser.add_argument("--id", action="append", dest="item_ids", default=[], metavar="ID", help="a model id (m_...) or project id (p_...) in the trash; repeatable")

    def handle(self, *args, everything, item_ids, **options):
        if everything and item_ids:
            raise CommandError("give --id or --all, not both")
        if item_ids:
            for item_id in item_ids:
                try:
                    trash_services.trash_purge(item_id, by=COMMAND_PRINCIPAL)
                except ApplicationError as exc:
                    raise CommandError(exc.message) from None
                self.stdout.write(f"{item_id}: purged")
            purged = item_ids
        else:
            purged = [deletion.target_id for deletion in trash_services.trash_purge_due(by=COMMAND_PRINCIPAL, everything=everything)]
            for item_id in purged:
                self.stdout.write(f"{item_id}: purged")
        self.stdout.write(f"{len(purged)} trash item(s) purged")
