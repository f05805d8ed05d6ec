"""People in the admin: the account's server role and display name on Django's user page (the role decides the
superuser and staff flags, so those are not edited apart), personal tokens (never their secrets), project members and
share links."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from accounts_app import audit_admin  # noqa: F401  (registers the audit trail's read-only page)
from accounts_app.models import Account, ApiToken, ProjectMember, ShareLink
from accounts_app.services import server_role_sync
from api.admin import ReadOnlyAdminMixin

User = get_user_model()


class AccountInline(admin.StackedInline):
    model = Account
    can_delete = False
    fields = ["role", "display_name", "external_subject"]
    readonly_fields = ["external_subject"]
    verbose_name_plural = "account"


class PeopleUserAdmin(UserAdmin):
    inlines = [AccountInline]
    list_display = ["username", "email", "account_role", "is_active", "last_login"]
    list_filter = ["account__role", "is_active"]
    fieldsets = [
        (None, {"fields": ["username", "password"]}),
        ("Personal info", {"fields": ["first_name", "last_name", "email"]}),
        ("Status", {"fields": ["is_active", "last_login", "date_joined"]}),
    ]
    readonly_fields = ["last_login", "date_joined"]

    @admin.display(description="server role", ordering="account__role")
    def account_role(self, user):
        account = getattr(user, "account", None)
        return account.role if account else ("admin" if user.is_superuser else "user")

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        server_role_sync(form.instance)


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, PeopleUserAdmin)


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Shown and deleted here, made only through the API (its secret is shown once, to its owner)."""

    deletable = True
    list_display = ["id", "name", "user", "scope", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["scope"]
    search_fields = ["id", "name", "user__username"]
    fields = readonly_fields = ["id", "name", "user", "scope", "created_at", "expires_at", "last_used_at", "revoked_at"]


@admin.register(ProjectMember)
class ProjectMemberAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "added_at"]
    list_filter = ["role"]
    search_fields = ["project__id", "project__title", "user__username"]
    raw_id_fields = ["project", "user"]


@admin.register(ShareLink)
class ShareLinkAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Shown and deleted here, made through the API (its secret is shown once, to the owner who made it)."""

    deletable = True
    list_display = ["id", "project", "created_by", "downloads", "created_at", "expires_at", "revoked_at"]
    search_fields = ["id", "project__id"]
    fields = readonly_fields = ["id", "project", "created_by", "model_ids", "downloads", "created_at", "expires_at", "revoked_at"]
