"""The link from clashes to the review issue pinned for them (coordination_app.services.pinning); imported by
coordination_app.models so Django registers it with the app's other models."""

from __future__ import annotations

from django.db import models

from issues_app.models import Issue


class ClashIssue(models.Model):
    """The issue pinned for one clash (per="clash") or one group of clashes (per="group") of a test: pinning again
    finds it by its topic GUID instead of making a second issue, and later runs resolve or reopen it. Deleting the
    issue deletes the link (a later pin makes a new issue)."""

    issue = models.OneToOneField(Issue, on_delete=models.CASCADE, related_name="clash_link")
    test = models.ForeignKey("coordination.ClashTest", on_delete=models.CASCADE, related_name="issue_links")
    topic_guid = models.CharField(max_length=36, help_text="the issue's BCF topic GUID: uuid5 of project, test and clash id or group key")
    per = models.CharField(max_length=8, help_text="clash | group")
    group_key = models.CharField(max_length=300, blank=True, default="", help_text="grouping/key of a group's issue, e.g. storey/storey:Level 1")
    clash_ids = models.JSONField(default=list, help_text="the clashes the issue stands for")
    last_run = models.ForeignKey("coordination.ClashRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                 help_text="the latest run applied to the issue (pinned from, or resolved / reopened by)")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["test", "topic_guid"], name="one_issue_per_clash_topic")]

    def __str__(self):
        return f"{self.topic_guid} -> {self.issue_id} ({len(self.clash_ids)} clash(es))"
