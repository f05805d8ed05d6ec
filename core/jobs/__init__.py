"""One engine for the durable jobs of every app (model conversions, version geometry, IDS checks): a job is a row
with a state, a worker and its heartbeat, attempts and progress; an app registers a JobKind per kind of row in its
AppConfig.ready(), and one django-tasks task runs any kind on the kind's queue. See docs/architecture/jobs.md."""

from core.jobs.kinds import AGAIN, JobKind, kind_named, kinds_on, on_first_call, register
from core.jobs.lifecycle import claim, finish, progress_writer, run, take
from core.jobs.recovery import recover
from core.jobs.tasks import enqueue, waiting_args

__all__ = [
    "AGAIN", "JobKind", "claim", "enqueue", "finish", "kind_named", "kinds_on", "on_first_call", "progress_writer", "recover", "register",
    "run", "take", "waiting_args",
]
