"""Pinned clash issues follow the runs: the receiver of coordination_app.signals.run_finished (connected when the
app is ready, in every process that runs clash runs)."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from coordination_app.signals import run_finished

logger = logging.getLogger(__name__)


@receiver(run_finished, dispatch_uid="coordination_app.issue_receivers.settle_pinned_issues")
def settle_pinned_issues(sender, run_id: str, staged: bool = False, **kwargs) -> None:
    """Resolves the pinned issues whose clashes the run let go and reopens those whose clash is back; a run on a
    staged product changes nothing. A failure here is logged, never the run's failure (its results are saved)."""
    if staged:
        return
    # imported here: the coordination services load the clash engine (numpy, ifcopenshell), ~0.2 s that every process
    # would pay as the app loads, though only clash workers run clash runs
    from coordination_app.services.pinning import clash_run_settle_issues

    try:
        clash_run_settle_issues(run_id)
    except Exception:  # noqa: BLE001 - the run is done whatever its issues do
        logger.exception("the issues pinned from the clashes of run %s could not be resolved or reopened", run_id)
