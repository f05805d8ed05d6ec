"""People and access: a person's server role, project memberships, personal API tokens, share links and the audit
trail. Django's own User is the account (sign-in, password hashing, the admin); Account adds what this service needs."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

from accounts_app.roles import ProjectRole, ServerRole


class Account(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account")
    role = models.CharField(max_length=8, choices=[(r.value, r.value) for r in ServerRole], default=ServerRole.USER)
    display_name = models.CharField(max_length=150, blank=True, default="")
    # the OpenID Connect issuer's id for this person (the configured matching claim), when they signed in that way
    external_subject = models.CharField(max_length=255, null=True, blank=True, unique=True)

    def __str__(self):
        return f"{self.user.get_username()} ({self.role})"


class ProjectMember(models.Model):
    project = models.ForeignKey("models_app.Project", on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=[(r.value, r.value) for r in ProjectRole])
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_project")]

    def __str__(self):
        return f"{self.user.get_username()} in {self.project_id} as {self.role}"


def new_token_id() -> str:
    return "tok_" + secrets.token_hex(6)


class ApiToken(models.Model):
    """A personal API token. The secret is shown once; only its SHA-256 is kept (a 256-bit random secret needs no
    slow hash: there is nothing to guess from it)."""

    class Scope(models.TextChoices):
        READ = "read"
        WRITE = "write"

    id = models.CharField(primary_key=True, max_length=20, default=new_token_id, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=5, choices=Scope.choices)
    secret_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.id}) of {self.user.get_username()}"


def new_link_id() -> str:
    return "shl_" + secrets.token_hex(6)


class ShareLink(models.Model):
    """A read-only way into one project (or some of its models) for people without an account, until it expires or
    is revoked. Like a token, only the secret's SHA-256 is kept."""

    id = models.CharField(primary_key=True, max_length=20, default=new_link_id, editable=False)
    project = models.ForeignKey("models_app.Project", on_delete=models.CASCADE, related_name="share_links")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    model_ids = models.JSONField(default=list, blank=True, help_text="the models it opens; empty: all of the project's")
    downloads = models.BooleanField(default=False, help_text="whether the IFC files may be downloaded through it")
    secret_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]


class AuditEvent(models.Model):
    """Who did what, when, from where. Plain values, no foreign keys: the record outlives the user and the object."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    username = models.CharField(max_length=150, db_index=True)
    via = models.CharField(max_length=12)
    action = models.CharField(max_length=40, db_index=True)
    object = models.CharField(max_length=200, blank=True, default="")
    project_id = models.CharField(max_length=18, blank=True, default="", db_index=True)
    ip = models.CharField(max_length=45, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.object}"
