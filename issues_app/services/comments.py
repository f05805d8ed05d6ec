"""Use cases of an issue's comment thread: add, change, delete (each one moves the issue's modifiedAt)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts_app.audit import audit_record
from api.principal import Principal
from api.signatures import Signature
from core.errors import Invalid
from core.provenance import DEFAULT_AUTHOR
from issues_app.models import Comment, Issue
from issues_app.selectors import comment_of_issue, issue_get
from models_app.selectors import project_of_model

COMMENT_MAX_CHARS = 10_000


def _check_viewpoint_guid(issue: Issue, viewpoint_guid: str | None) -> None:
    if viewpoint_guid and viewpoint_guid not in {viewpoint["guid"] for viewpoint in issue.viewpoints or ()}:
        raise Invalid(f"viewpointGuid {viewpoint_guid} is not a viewpoint of issue {issue.id}")


def _touch_issue(issue: Issue, author: Signature | None) -> None:
    """A comment change is a change of the topic: modifiedAt moves (which also refreshes the cached issue list)."""
    issue.modified_at = timezone.now()
    fields = ["modified_at", "updated_at"]
    if author:
        issue.modified_author, issue.modified_author_verified = author.author, author.verified
        fields += ["modified_author", "modified_author_verified"]
    issue.save(update_fields=fields)


def _locked_issue(model_id: str, issue_id: str) -> Issue:
    issue_get(model_id, issue_id)
    return Issue.objects.select_for_update().get(pk=issue_id)


def _audit_comment(by: Principal | None, action: str, issue: Issue, comment: Comment, changes: list) -> None:
    """comment.create / comment.update in the audit trail (the BCF API's comment events read them)."""
    if by is not None:
        audit_record(by, action, object=f"comment:{comment.guid}", project_id=project_of_model(issue.model_id),
                     detail={"topic_guid": issue.bcf_topic_guid, "comment_guid": comment.guid, "changes": changes})


def comment_add(*, model_id: str, issue_id: str, text: str, author: str = DEFAULT_AUTHOR, viewpoint_guid: str | None = None,
                signature: Signature | None = None, by: Principal | None = None) -> Comment:
    """A new comment at the end of the issue's thread; viewpoint_guid must name one of the issue's viewpoints.
    `signature`, when given, signs it instead of `author`."""
    signature = signature or Signature(author or DEFAULT_AUTHOR)
    if not (text or "").strip():
        raise Invalid("text: a comment needs text")
    if len(text) > COMMENT_MAX_CHARS:
        raise Invalid(f"text: at most {COMMENT_MAX_CHARS} characters")
    with transaction.atomic():
        issue = _locked_issue(model_id, issue_id)
        _check_viewpoint_guid(issue, viewpoint_guid)
        comment = Comment.objects.create(issue=issue, text=text, author=signature.author, author_verified=signature.verified,
                                         viewpoint_guid=viewpoint_guid or "")
        _touch_issue(issue, signature)
    _audit_comment(by, "comment.create", issue, comment, [["text", None, text], ["viewpoint_guid", None, viewpoint_guid or ""]])
    return comment


def comment_update(*, model_id: str, issue_id: str, comment_id: str, changes: dict, signature: Signature | None = None,
                   by: Principal | None = None) -> Comment:
    """changes: text, viewpointGuid (None or "" removes the reference), modifiedAuthor. A real change sets
    modifiedDate and modifiedAuthor (`signature`, else changes' modifiedAuthor); nothing given changes nothing."""
    if "text" in changes and not (changes["text"] or "").strip():
        raise Invalid("text: a comment needs text")
    if len(changes.get("text") or "") > COMMENT_MAX_CHARS:
        raise Invalid(f"text: at most {COMMENT_MAX_CHARS} characters")
    with transaction.atomic():
        issue = _locked_issue(model_id, issue_id)
        comment = comment_of_issue(issue, comment_id)
        if "viewpointGuid" in changes:
            _check_viewpoint_guid(issue, changes["viewpointGuid"])
        fields, before = [], {"text": comment.text, "viewpoint_guid": comment.viewpoint_guid}
        if "text" in changes and changes["text"] != comment.text:
            comment.text = changes["text"]
            fields.append("text")
        if "viewpointGuid" in changes and (changes["viewpointGuid"] or "") != comment.viewpoint_guid:
            comment.viewpoint_guid = changes["viewpointGuid"] or ""
            fields.append("viewpoint_guid")
        if fields:
            comment.modified_date = timezone.now()
            signature = signature or Signature(changes.get("modifiedAuthor") or DEFAULT_AUTHOR)
            comment.modified_author, comment.modified_author_verified = signature.author, signature.verified
            comment.save(update_fields=[*fields, "modified_date", "modified_author", "modified_author_verified"])
            _touch_issue(issue, signature)
            _audit_comment(by, "comment.update", issue, comment, [[field, before[field], getattr(comment, field)] for field in fields])
    return comment


def comment_delete(*, model_id: str, issue_id: str, comment_id: str, by: Principal | None = None) -> None:
    """Deletes the comment; `by` (who deletes) is recorded in the audit trail."""
    with transaction.atomic():
        issue = _locked_issue(model_id, issue_id)
        comment = comment_of_issue(issue, comment_id)
        comment.delete()
        _touch_issue(issue, None)
    if by is not None:
        audit_record(by, "comment.delete", object=f"comment:{comment.guid}", project_id=project_of_model(issue.model_id),
                     detail={"title": issue.title, "issue": issue.id, "author": comment.author})
