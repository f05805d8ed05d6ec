"""The accounts API's request bodies and answers (docs/api/accounts.md). No answer carries a password or a stored
hash; a token's or a share link's secret appears only in the answer that creates it (built in the view)."""

from rest_framework import serializers

from accounts_app.identity import server_role_of
from accounts_app.models import ApiToken, ProjectMember, ShareLink
from accounts_app.roles import ProjectRole, ServerRole
from accounts_app.services import display_name_of
from api.fields import StrictCharField

SERVER_ROLES = [role.value for role in ServerRole]
PROJECT_ROLES = [role.value for role in ProjectRole]


class UserSerializer(serializers.Serializer):
    username = serializers.CharField(source="get_username")
    email = serializers.CharField(help_text="empty when none was given")
    displayName = serializers.SerializerMethodField()
    role = serializers.SerializerMethodField()
    active = serializers.BooleanField(source="is_active")
    dateJoined = serializers.DateTimeField(source="date_joined")
    lastLogin = serializers.DateTimeField(source="last_login", allow_null=True, help_text="null before the first sign-in")

    def get_displayName(self, user) -> str:
        return display_name_of(user)

    def get_role(self, user) -> str:
        return str(server_role_of(user))


class UserChangeSerializer(serializers.Serializer):
    """PATCH: every field optional; what is missing stays as it is."""

    password = StrictCharField(required=False, write_only=True, trim_whitespace=False, max_length=4096)
    email = serializers.EmailField(required=False, allow_blank=True)
    displayName = StrictCharField(required=False, allow_blank=True, max_length=150)
    role = serializers.ChoiceField(SERVER_ROLES, required=False)


class UserCreateSerializer(UserChangeSerializer):
    username = StrictCharField(max_length=150)
    role = serializers.ChoiceField(SERVER_ROLES, required=False, default=ServerRole.USER.value)


class MeSerializer(serializers.Serializer):
    username = serializers.CharField(source="name")
    displayName = serializers.CharField(source="display_name")
    role = serializers.CharField()
    via = serializers.ChoiceField(["session", "token", "operator", "share-link", "open"])


class TokenCreateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100)
    scope = serializers.ChoiceField(ApiToken.Scope.values)
    expiresAt = serializers.DateTimeField(required=False, allow_null=True, default=None)
    username = StrictCharField(required=False, allow_blank=True, default="", max_length=150, help_text="with password: the account to make the token for, when the request carries no session or token")
    password = StrictCharField(required=False, allow_blank=True, default="", write_only=True, trim_whitespace=False, max_length=4096)


class TokenSerializer(serializers.ModelSerializer):
    tokenId = serializers.CharField(source="id")
    createdAt = serializers.DateTimeField(source="created_at")
    expiresAt = serializers.DateTimeField(source="expires_at")
    lastUsedAt = serializers.DateTimeField(source="last_used_at")
    revoked = serializers.SerializerMethodField()

    class Meta:
        model = ApiToken
        fields = ["tokenId", "name", "scope", "createdAt", "expiresAt", "lastUsedAt", "revoked"]

    def get_revoked(self, token) -> bool:
        return token.revoked_at is not None


class NewTokenSerializer(serializers.Serializer):
    """The answer of POST /auth/tokens: the only time the secret is shown."""

    tokenId = serializers.CharField()
    token = serializers.CharField(help_text="the secret (bmr_...): send it as Authorization: Bearer; it is not shown again")
    name = serializers.CharField()
    scope = serializers.CharField()
    expiresAt = serializers.DateTimeField(allow_null=True)


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.get_username")
    displayName = serializers.SerializerMethodField()

    class Meta:
        model = ProjectMember
        fields = ["username", "displayName", "role"]

    def get_displayName(self, member) -> str:
        return display_name_of(member.user)


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(PROJECT_ROLES)


class ShareLinkCreateSerializer(serializers.Serializer):
    expiresAt = serializers.DateTimeField(help_text="in the future, at most 90 days from now")
    models = serializers.ListField(child=StrictCharField(max_length=40), required=False, default=list, max_length=1000,
                                   help_text="ids of this project's models; none: the whole project")
    downloads = serializers.BooleanField(required=False, default=False)


class ShareLinkSerializer(serializers.ModelSerializer):
    linkId = serializers.CharField(source="id")
    projectId = serializers.CharField(source="project_id")
    models = serializers.ListField(source="model_ids", child=serializers.CharField())
    createdBy = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")
    expiresAt = serializers.DateTimeField(source="expires_at")
    revokedAt = serializers.DateTimeField(source="revoked_at")

    class Meta:
        model = ShareLink
        fields = ["linkId", "projectId", "models", "downloads", "createdBy", "createdAt", "expiresAt", "revokedAt"]

    def get_createdBy(self, link) -> str:
        return link.created_by.get_username() if link.created_by else ""


class NewShareLinkSerializer(ShareLinkSerializer):
    """The answer of POST .../share-links: the only time the link's address (with its secret) is shown."""

    url = serializers.SerializerMethodField()

    class Meta(ShareLinkSerializer.Meta):
        fields = [*ShareLinkSerializer.Meta.fields, "url"]

    def get_url(self, link) -> str:
        return self.context["url"]
