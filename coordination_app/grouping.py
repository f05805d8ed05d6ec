"""Groups of a run's clashes for the API (?group= of the clash list, pinning per group): the engine's grouping
(coordination_app.engine.grouping) with the answer the routes give to a grouping that names none (40001, `group`)."""

from __future__ import annotations

from coordination_app.engine import grouping
from core.errors import Invalid

GROUPINGS = ("by-proximity:<metres>", *grouping.HOWS)


def grouping_checked(how: str) -> str:
    """The grouping as given when it names one; 40001 naming `group` otherwise."""
    if grouping.valid(how):
        return how
    message = f"{how!r} is not one of {', '.join(GROUPINGS)} (metres > 0)"
    raise Invalid(f"group: {message}", data={"group": [message]})


def group_ids(clashes: list[dict], how: str) -> list[str]:
    """The group id of each clash row ({clashId, a, b, point}), in the same order."""
    found = grouping.group(clashes, grouping_checked(how))
    return [found[index] for index in range(len(clashes))]
