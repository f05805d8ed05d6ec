"""The audit trail's API: a project's events for its owners, every event for server admins (docs/security/audit.md).
Who may call which is decided by the access middleware (routes project-audit: own, audit: administer)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts_app.audit_selectors import MAX_PAGE_SIZE, PAGE_SIZE, audit_events
from accounts_app.models import AuditEvent
from api.views import validated

CURSOR_HELP = ("the next page: the id of the last event of this page (events after it, newest first), or an ISO 8601 "
               "timestamp (events before it)")


@extend_schema_field(OpenApiTypes.STR)
class AuditCursorField(serializers.Field):
    """An event id (digits) or an ISO 8601 timestamp."""

    def to_internal_value(self, data):
        value = str(data).strip()
        if value.isdigit() and len(value) < 19:
            return int(value)
        try:
            return serializers.DateTimeField().to_internal_value(value)
        except serializers.ValidationError:
            raise serializers.ValidationError("an event id or an ISO 8601 timestamp (2026-01-31T12:00:00Z)") from None


class AuditQuerySerializer(serializers.Serializer):
    since = serializers.DateTimeField(required=False, help_text="ISO 8601 (2026-01-31T12:00:00Z): events at or after it")
    user = serializers.CharField(required=False, max_length=150, help_text="the username (or operator, api-token, local-user)")
    action = serializers.CharField(required=False, max_length=40, help_text="one action (model.delete) or a family (model)")
    before = AuditCursorField(required=False, help_text=CURSOR_HELP)
    limit = serializers.IntegerField(required=False, default=PAGE_SIZE, min_value=1, max_value=MAX_PAGE_SIZE,
                                     help_text=f"events per page (default {PAGE_SIZE}, at most {MAX_PAGE_SIZE})")


class AdminAuditQuerySerializer(AuditQuerySerializer):
    project = serializers.CharField(required=False, max_length=18, help_text="a project id: only its events")


class AuditEventSerializer(serializers.ModelSerializer):
    projectId = serializers.SerializerMethodField(help_text="the project it happened in; null outside any project")

    class Meta:
        model = AuditEvent
        fields = ["id", "at", "username", "via", "action", "object", "ip", "projectId", "detail"]
        read_only_fields = fields

    def get_projectId(self, event: AuditEvent) -> str | None:
        return event.project_id or None


BAD_QUERY = OpenApiResponse(description="40001: a query parameter that does not parse (the message names it)")


class ProjectAuditView(APIView):
    @extend_schema(parameters=[AuditQuerySerializer], responses={200: AuditEventSerializer(many=True), 400: BAD_QUERY},
                   summary="The project's audit trail, newest first (owners); kept after the objects it names are deleted")
    def get(self, request, project_id):
        query = validated(AuditQuerySerializer, request.query_params)
        return Response(AuditEventSerializer(audit_events(project=project_id, **query), many=True).data)


class AuditView(APIView):
    @extend_schema(parameters=[AdminAuditQuerySerializer], responses={200: AuditEventSerializer(many=True), 400: BAD_QUERY},
                   summary="The whole audit trail, newest first (server admins)")
    def get(self, request):
        query = validated(AdminAuditQuerySerializer, request.query_params)
        return Response(AuditEventSerializer(audit_events(**query), many=True).data)
