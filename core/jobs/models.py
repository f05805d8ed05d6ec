from django.db import models


class JobState(models.Model):
    """The bookkeeping a job row carries besides its state field (which each kind names, with its own values): the
    worker running it (core.identity.process_identity) and its last sign of life, how often a worker took it (the
    attempt cap bounds the re-runs of a job whose worker keeps dying), and its progress."""

    worker = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    progress_phase = models.CharField(max_length=32, blank=True, default="queued")
    progress_percent = models.PositiveSmallIntegerField(default=0)

    class Meta:
        abstract = True
