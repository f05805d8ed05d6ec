"""Review-record tools: issues (created with provenance AI) and property overrides, through the same serializers
and services as the REST API."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError

from chat_app.agent.tools import MODEL_ID, Tool, ToolError, ToolResult, bound_model_id, in_thread, json_output, object_schema
from issues_app import services
from issues_app.serializers import ChangeEntrySerializer, IssueInputSerializer, IssuePatchSerializer, IssueSerializer, PropertiesUpdateSerializer
from viewer_gateway.envelope import ApiError
from viewer_gateway.provenance import AGENT_AUTHOR, Provenance

AI = {"source": Provenance.AI.value}


def _validated(serializer_class, data: dict) -> dict:
    serializer = serializer_class(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        raise ToolError(f"invalid arguments: {exc.detail}") from None
    return serializer.validated_data


async def _call(function, *args, **kwargs):
    try:
        return await in_thread(lambda: function(*args, **kwargs))()
    except ApiError as exc:
        raise ToolError(str(exc.detail)) from None


def _issue_summary(issue: dict) -> dict:
    return {k: issue[k] for k in ("id", "title", "status", "entityId", "entityName", "comment")}


async def _list_issues(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    issues = await _call(lambda: IssueSerializer(services.issue_list(model_id), many=True).data)
    if arguments.get("status"):
        issues = [i for i in issues if i["status"] == arguments["status"]]
    return ToolResult(json_output([_issue_summary(i) for i in issues]), title=f"{len(issues)} issue(s)", metadata={"modelId": model_id, "count": len(issues)})


async def _create_issue(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    data = _validated(IssueInputSerializer, {
        **{k: arguments[k] for k in ("entityId", "entityName", "entityType", "title", "comment", "camera") if k in arguments},
        "author": AGENT_AUTHOR, "provenance": AI,
    })
    issue = await _call(lambda: IssueSerializer(services.issue_create(model_id=model_id, data=data)).data)
    return ToolResult(json_output(_issue_summary(issue)), title=f"pinned issue {issue['id']}: {issue['title']}", metadata={"modelId": model_id, "issue": issue})


async def _update_issue(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    changes = _validated(IssuePatchSerializer, {k: arguments[k] for k in ("title", "comment", "status") if k in arguments})
    issue = await _call(lambda: IssueSerializer(services.issue_update(model_id=model_id, issue_id=arguments["issueId"], changes=changes)).data)
    return ToolResult(json_output(_issue_summary(issue)), title=f"updated issue {issue['id']} ({issue['status']})", metadata={"modelId": model_id, "issue": issue})


async def _get_overrides(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    overrides = await _call(services.override_set, model_id)
    return ToolResult(json_output(overrides), title=f"overrides of {len(overrides)} element(s)", metadata={"modelId": model_id})


async def _set_overrides(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    data = _validated(PropertiesUpdateSerializer, {"entityName": arguments.get("entityName", ""), "fields": arguments["fields"], "author": AGENT_AUTHOR, "provenance": AI})
    effective = await _call(
        services.entity_properties_update, model_id=model_id, entity_id=arguments["entityId"], entity_name=data["entityName"],
        fields=data["fields"], author=AGENT_AUTHOR, provenance=Provenance.AI.value,
    )
    return ToolResult(json_output(effective), title=f"set overrides of {arguments['entityId']}", metadata={"modelId": model_id, "entityId": arguments["entityId"], "effective": effective})


async def _list_changes(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    limit = arguments.get("limit", 50)
    entries = await _call(lambda: ChangeEntrySerializer(services.change_log(model_id)[:limit], many=True).data)
    return ToolResult(json_output(entries), title=f"{len(entries)} change(s)", metadata={"modelId": model_id})


async def _migrate_overrides(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    result = await _call(services.overrides_migrate, model_id=model_id, author=AGENT_AUTHOR, provenance=Provenance.AI.value)
    return ToolResult(json_output(result), title=f"migrated {len(result['migrated'])}, failed {len(result['failed'])}", metadata={"modelId": model_id, **result})


VECTOR = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
FIELDS = {"type": "object", "additionalProperties": {"type": "string"}, "description": "Name, Description, Classification, FireRating, Comments; '' clears"}

REVIEW_TOOLS = [
    Tool("list_issues", "Review issues of the model (optionally by status).", object_schema({**MODEL_ID, "status": {"type": "string", "enum": ["open", "checking", "resolved"]}}), _list_issues),
    Tool("create_issue", "Pin a review issue to an element (provenance AI).", object_schema({
        **MODEL_ID, "entityId": {"type": "string"}, "entityName": {"type": "string"}, "entityType": {"type": "string"},
        "title": {"type": "string", "minLength": 1}, "comment": {"type": "string"},
        "camera": object_schema({"eye": VECTOR, "look": VECTOR, "up": VECTOR}, ("eye", "look", "up")),
    }, ("title",)), _create_issue),
    Tool("update_issue", "Change an issue's title, comment or status (open, checking, resolved).", object_schema({
        **MODEL_ID, "issueId": {"type": "string", "pattern": "^i_[0-9a-f]{12}$"}, "title": {"type": "string"}, "comment": {"type": "string"},
        "status": {"type": "string", "enum": ["open", "checking", "resolved"]},
    }, ("issueId",)), _update_issue),
    Tool("get_overrides", "The model's property overrides {entityId: {field: value}}.", object_schema(MODEL_ID), _get_overrides),
    Tool("set_overrides", "Override whitelisted properties of an element without changing the IFC.", object_schema({
        **MODEL_ID, "entityId": {"type": "string", "minLength": 1}, "entityName": {"type": "string"}, "fields": FIELDS,
    }, ("entityId", "fields")), _set_overrides),
    Tool("list_changes", "The model's change log, newest first.", object_schema({**MODEL_ID, "limit": {"type": "integer", "minimum": 1, "maximum": 500}}), _list_changes),
    Tool("migrate_overrides", "Turn the model's overrides into build-script edits saved as one version.", object_schema(MODEL_ID), _migrate_overrides),
]
