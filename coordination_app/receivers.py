"""What the coordination app does when the models app announces something: a model that became ready re-runs the
automatic clash tests that name it."""

import logging

from django.dispatch import receiver

from models_app.signals import model_ready

logger = logging.getLogger(__name__)


@receiver(model_ready, dispatch_uid="coordination-automatic-runs")
def automatic_runs(sender, model_id: str, **kwargs) -> None:
    """Queues the automatic tests' runs; a failure here is logged, never the conversion's."""
    from coordination_app.services import queue_automatic_runs  # here: see issue_receivers (the clash engine's imports)

    try:
        queue_automatic_runs(model_id)
    except Exception:  # noqa: BLE001 - the model is ready whatever happens to its clash runs
        logger.exception("automatic clash runs of %s could not be queued", model_id)
