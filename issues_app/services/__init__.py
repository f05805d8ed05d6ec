"""Use cases of the review records, one module per sub-domain: issues, comments, overrides and the change log, the
BCF export. The reads are in issues_app.selectors; the multi-step use cases (BCF import, migration of the
overrides) have a module each in issues_app.use_cases."""

from issues_app.services.bcf_exchange import issues_export_bcf
from issues_app.services.comments import (
    COMMENT_MAX_CHARS,
    comment_add,
    comment_delete,
    comment_update,
)
from issues_app.services.issues import (
    SCREENSHOT_MAX_BYTES,
    issue_create,
    issue_delete,
    issue_update,
)
from issues_app.services.overrides import (
    entity_properties_update,
    record_version_changes,
)

__all__ = [
    "COMMENT_MAX_CHARS",
    "SCREENSHOT_MAX_BYTES",
    "comment_add",
    "comment_delete",
    "comment_update",
    "entity_properties_update",
    "issue_create",
    "issue_delete",
    "issue_update",
    "issues_export_bcf",
    "record_version_changes",
]
