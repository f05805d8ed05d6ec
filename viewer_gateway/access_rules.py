"""The access rule of every route: which capability each method needs (accounts_app.roles.Capability). Read by the
access middleware (viewer_gateway/access.py), which decides, and by the edge (viewer_gateway/edge.py), which lets
public routes through without a token before the body is read."""

from __future__ import annotations

from accounts_app.roles import Capability

PUBLIC, SIGNED_IN, ACCOUNT, CREATE, ADMINISTER = (
    Capability.PUBLIC, Capability.SIGNED_IN, Capability.ACCOUNT, Capability.CREATE, Capability.ADMINISTER,
)
VIEW, REVIEW, EDIT, OWN, DOWNLOAD = Capability.VIEW, Capability.REVIEW, Capability.EDIT, Capability.OWN, Capability.DOWNLOAD


class OAuthRule(dict[str, Capability]):
    """The rule of a route a BCF client's OAuth2 token may call (the BCF and Foundation APIs); on any other route that
    is not public the token is refused, whatever its user's role: the user allowed a client to sync issues, not to
    upload, edit, share, delete or administer (access of some of those kinds would outlive the token, its revoke and
    the client's application)."""


# URL name -> {method: capability}. HEAD and OPTIONS take GET's rule. "SIGNED_IN" on a list means the view shows only
# what the caller may see (accounts_app.policy.visible_project_ids); on a create whose scope is named in the body, the
# use case asks accounts_app.policy.require for it.
ROUTE_RULES: dict[str, dict[str, Capability]] = {
    # pages and documents that need no identity
    "web-client": {"GET": PUBLIC},
    "docs": {"GET": PUBLIC},
    "openapi": {"GET": SIGNED_IN},  # the schema needs the token, as before accounts
    "sign-in": {"GET": PUBLIC, "POST": PUBLIC},
    "sign-out": {"POST": PUBLIC},
    "share-open": {"GET": PUBLIC},
    "oidc_authentication_init": {"GET": PUBLIC},
    "oidc_authentication_callback": {"GET": PUBLIC},
    "oidc_logout": {"GET": PUBLIC, "POST": PUBLIC},
    # people
    "users": {"GET": ADMINISTER, "POST": ADMINISTER},
    "user-detail": {"GET": ADMINISTER, "PATCH": ADMINISTER, "DELETE": ADMINISTER},
    "auth-me": {"GET": SIGNED_IN},
    "auth-capabilities": {"GET": SIGNED_IN},
    "auth-password": {"POST": ACCOUNT},
    # POST authenticates by session, token, or username + password in the body (throttled like the sign-in)
    "auth-tokens": {"GET": SIGNED_IN, "POST": PUBLIC},
    "auth-token-detail": {"DELETE": ACCOUNT},
    "project-members": {"GET": VIEW},
    "project-member": {"PUT": OWN, "DELETE": OWN},
    "share-links": {"GET": OWN, "POST": OWN},
    "share-link": {"GET": OWN, "DELETE": OWN},
    "project-audit": {"GET": OWN},
    "audit": {"GET": ADMINISTER},
    # models
    "model-list": {"GET": SIGNED_IN, "POST": CREATE},
    "model-detail": {"GET": VIEW, "DELETE": OWN},
    "model-retry": {"POST": EDIT},
    "model-download": {"GET": DOWNLOAD},
    "model-revisions": {"GET": VIEW, "POST": EDIT},
    "model-version-geometry": {"GET": VIEW, "POST": VIEW},
    "model-xkt": {"GET": VIEW},
    "model-metadata": {"GET": VIEW},
    "model-render": {"GET": VIEW},
    "model-version-xkt": {"GET": VIEW},
    "model-version-metadata": {"GET": VIEW},
    # coordination: a project's models, their federation, clash tests, runs and clashes (coordination_app). Adding a
    # model to a project is scoped by the model (its owner may move it); the use case also asks EDIT of the project.
    "project-model": {"PUT": OWN, "DELETE": EDIT},
    "project-federation": {"GET": VIEW},
    "clash-tests": {"GET": VIEW},
    "clash-test": {"GET": VIEW, "PUT": EDIT, "DELETE": EDIT},
    "clash-runs": {"GET": VIEW, "POST": REVIEW},
    "clash-run": {"GET": VIEW},
    "clash-run-cancel": {"POST": REVIEW},
    "clash-list": {"GET": VIEW},
    "clash-detail": {"PATCH": REVIEW},
    "clash-run-issues": {"POST": REVIEW},
    "clash-run-report": {"GET": VIEW},
    "trash-list": {"GET": SIGNED_IN},
    "trash-restore": {"POST": OWN},
    "trash-item": {"DELETE": OWN},
    # the build script and its versions (the edit service behind the gateway's proxy)
    "edit-proxy-script": {"GET": VIEW, "PUT": EDIT},
    "edit-proxy-script-params": {"GET": VIEW},
    "edit-proxy-script-undo": {"POST": EDIT},
    "edit-proxy-script-redo": {"POST": EDIT},
    "edit-proxy-script-discard": {"POST": EDIT},
    "edit-proxy-script-run": {"POST": EDIT},
    "edit-proxy-script-save": {"POST": EDIT},
    "edit-proxy-script-rollback": {"POST": EDIT},
    "edit-proxy-script-diff": {"POST": VIEW},
    "edit-proxy-script-staging-diff": {"GET": VIEW},
    "edit-proxy-script-locate": {"GET": VIEW},
    "edit-proxy-scripts": {"GET": VIEW},
    "edit-proxy-edit-pending": {"GET": VIEW, "DELETE": EDIT},
    "edit-proxy-edit-history": {"GET": VIEW},
    "edit-proxy-edit-versions": {"GET": VIEW},
    "edit-proxy-edit-diff": {"POST": VIEW},
    # review
    "issue-list": {"GET": VIEW, "POST": REVIEW},
    "issues-bcf-export": {"GET": VIEW},
    "issues-bcf-import": {"POST": REVIEW},
    "issue-detail": {"PATCH": REVIEW, "DELETE": REVIEW},
    "comment-list": {"GET": VIEW, "POST": REVIEW},
    "comment-detail": {"PATCH": REVIEW, "DELETE": REVIEW},
    "issue-screenshot": {"GET": VIEW},
    "override-set": {"GET": VIEW},
    "overrides-migrate": {"POST": EDIT},
    "entity-properties": {"PUT": EDIT},
    "change-log": {"GET": VIEW},
    # IDS checks
    "ids-file-list": {"GET": VIEW},
    "ids-file": {"GET": VIEW, "PUT": REVIEW, "DELETE": REVIEW},
    "check-list": {"GET": VIEW, "POST": REVIEW},
    "check-detail": {"GET": VIEW},
    "check-report-html": {"GET": VIEW},
    "check-report-bcf": {"GET": VIEW},
    "check-issues": {"POST": REVIEW},
    # plans
    "plan-history": {"GET": VIEW},
    "plan-diff": {"GET": VIEW},
    "plan-deliver": {"POST": EDIT},
    "plan-file": {"GET": VIEW, "PUT": EDIT},
    # BCF API 3.0 and the Foundation API (bcfapi_app; OAuth2 by django-oauth-toolkit), docs/decisions/0010: OAuthRule
    "bcf-versions": OAuthRule({"GET": PUBLIC}),
    "bcf-auth": OAuthRule({"GET": PUBLIC}),
    "bcf-current-user": OAuthRule({"GET": SIGNED_IN}),
    "oauth2-authorize": {"GET": PUBLIC, "POST": PUBLIC},
    "oauth2-token": {"POST": PUBLIC},
    "oauth2-revoke": {"POST": PUBLIC},
    "bcf-projects": OAuthRule({"GET": SIGNED_IN}),
    "bcf-project": OAuthRule({"GET": VIEW, "PUT": OWN}),
    "bcf-extensions": OAuthRule({"GET": VIEW}),
    "bcf-files-information": OAuthRule({"GET": VIEW}),
    "bcf-topics": OAuthRule({"GET": VIEW, "POST": REVIEW}),
    "bcf-topics-events": OAuthRule({"GET": VIEW}),
    "bcf-comments-events": OAuthRule({"GET": VIEW}),
    "bcf-topic": OAuthRule({"GET": VIEW, "PUT": REVIEW, "DELETE": REVIEW}),
    "bcf-topic-files": OAuthRule({"GET": VIEW, "PUT": REVIEW}),
    "bcf-related-topics": OAuthRule({"GET": VIEW, "PUT": REVIEW}),
    "bcf-topic-events": OAuthRule({"GET": VIEW}),
    "bcf-document-references": OAuthRule({"GET": VIEW, "POST": REVIEW}),
    "bcf-document-reference": OAuthRule({"PUT": REVIEW}),
    "bcf-comments": OAuthRule({"GET": VIEW, "POST": REVIEW}),
    "bcf-comment": OAuthRule({"GET": VIEW, "PUT": REVIEW, "DELETE": REVIEW}),
    "bcf-comment-events": OAuthRule({"GET": VIEW}),
    "bcf-viewpoints": OAuthRule({"GET": VIEW, "POST": REVIEW}),
    "bcf-viewpoint": OAuthRule({"GET": VIEW, "DELETE": REVIEW}),
    "bcf-viewpoint-snapshot": OAuthRule({"GET": VIEW}),
    "bcf-viewpoint-bitmap": OAuthRule({"GET": VIEW}),
    "bcf-viewpoint-selection": OAuthRule({"GET": VIEW}),
    "bcf-viewpoint-coloring": OAuthRule({"GET": VIEW}),
    "bcf-viewpoint-visibility": OAuthRule({"GET": VIEW}),
    "bcf-documents": OAuthRule({"GET": VIEW, "POST": REVIEW}),
    "bcf-document": OAuthRule({"GET": VIEW}),
    # the agent: its session is its project's; talking to it is editing, reading it is viewing
    "chat-projects": {"POST": CREATE},
    "chat-project": {"GET": VIEW, "DELETE": OWN},
    "chat-sessions": {"GET": SIGNED_IN, "POST": SIGNED_IN},
    "chat-messages": {"GET": VIEW, "POST": EDIT},
    "chat-events": {"GET": VIEW},
    "chat-answer": {"POST": EDIT},
    "chat-abort": {"POST": EDIT},
}

def route_capability(url_name: str | None, method: str) -> Capability | None:
    rule = ROUTE_RULES.get(url_name or "")
    if rule is None:
        return None
    return rule.get("GET" if method in ("HEAD", "OPTIONS") else method)


