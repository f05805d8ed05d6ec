"""Review-record tools: issues (created with provenance AI), their BCF topic fields and comment threads, and property
overrides, through the same serializers and services as the REST API."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError

from chat_app.agent.tools import ToolCall, ToolError, ToolResult, agent_tool, call_service, json_output, object_schema
from accounts_app.roles import Capability
from core.provenance import Provenance
from issues_app import selectors, services
from issues_app.serializers import (
    ChangeEntrySerializer,
    CommentSerializer,
    IssueInputSerializer,
    IssuePatchSerializer,
    IssueSerializer,
    PropertiesUpdateSerializer,
)
from issues_app.use_cases import migrate_overrides as migration

AI = {"source": Provenance.AI.value}
VECTOR = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
FIELDS = {"type": "object", "additionalProperties": {"type": "string"}, "description": "Name, Description, Classification, FireRating, Comments; '' clears"}
STATUS = {"type": "string", "enum": ["open", "checking", "resolved"]}
ISSUE_ID = {"type": "string", "pattern": "^i_[0-9a-f]{12}$"}
COMMENT_ID = {"type": "string", "description": "the comment's id (a lowercase UUID)"}
# BCF topic fields the agent may set on an issue (the same names as the REST API)
TOPIC_FIELDS = {
    "priority": {"type": "string"}, "assignedTo": {"type": "string"}, "labels": {"type": "array", "items": {"type": "string"}},
    "dueDate": {"type": ["string", "null"], "description": "ISO 8601, or null to clear"}, "topicType": {"type": "string"}, "stage": {"type": "string"},
}


def _validated(serializer_class, data: dict) -> dict:
    serializer = serializer_class(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        raise ToolError(f"invalid arguments: {exc.detail}") from None
    return serializer.validated_data


def _issue_summary(issue: dict) -> dict:
    return {k: issue[k] for k in ("id", "title", "status", "entityId", "entityName", "comment", "priority", "assignedTo", "labels", "dueDate")}


@agent_tool("list_issues", "Review issues of the model (optionally by status).", {"status": STATUS}, takes_model=True)
def list_issues(call: ToolCall) -> ToolResult:
    issues = call_service(lambda: IssueSerializer(selectors.issue_list(call.model_id), many=True).data)
    if call.arguments.get("status"):
        issues = [i for i in issues if i["status"] == call.arguments["status"]]
    return ToolResult(json_output([_issue_summary(i) for i in issues]), title=f"{len(issues)} issue(s)", metadata={"modelId": call.model_id, "count": len(issues)})


@agent_tool("create_issue", "Pin a review issue to an element (provenance AI).", {
    "entityId": {"type": "string"}, "entityName": {"type": "string"}, "entityType": {"type": "string"},
    "title": {"type": "string", "minLength": 1}, "comment": {"type": "string"},
    "camera": object_schema({"eye": VECTOR, "look": VECTOR, "up": VECTOR}, ("eye", "look", "up")),
}, ("title",), takes_model=True, capability=Capability.REVIEW)
def create_issue(call: ToolCall) -> ToolResult:
    data = _validated(IssueInputSerializer, {
        **{k: call.arguments[k] for k in ("entityId", "entityName", "entityType", "title", "comment", "camera") if k in call.arguments},
        "provenance": AI,
    })
    issue = call_service(lambda: IssueSerializer(services.issue_create(model_id=call.model_id, data=data, signature=call.signature)).data)
    return ToolResult(json_output(_issue_summary(issue)), title=f"pinned issue {issue['id']}: {issue['title']}", metadata={"modelId": call.model_id, "issue": issue})


@agent_tool("update_issue", "Change an issue's title, comment, status (open, checking, resolved) or topic fields (priority, assignee, labels, due date, type, stage).", {
    "issueId": ISSUE_ID, "title": {"type": "string"}, "comment": {"type": "string"}, "status": STATUS, **TOPIC_FIELDS,
}, ("issueId",), takes_model=True, capability=Capability.REVIEW)
def update_issue(call: ToolCall) -> ToolResult:
    changes = _validated(IssuePatchSerializer, {k: v for k, v in call.arguments.items() if k not in ("issueId", "modelId")})
    issue = call_service(lambda: IssueSerializer(services.issue_update(model_id=call.model_id, issue_id=call.arguments["issueId"], changes=changes,
                                                                       signature=call.signature)).data)
    return ToolResult(json_output(_issue_summary(issue)), title=f"updated issue {issue['id']} ({issue['status']})", metadata={"modelId": call.model_id, "issue": issue})


@agent_tool("list_comments", "The comment thread of an issue, oldest first.", {"issueId": ISSUE_ID}, ("issueId",), takes_model=True)
def list_comments(call: ToolCall) -> ToolResult:
    comments = call_service(lambda: CommentSerializer(selectors.comment_list(call.model_id, call.arguments["issueId"]), many=True).data)
    return ToolResult(json_output(comments), title=f"{len(comments)} comment(s) on {call.arguments['issueId']}", metadata={"modelId": call.model_id, "count": len(comments)})


@agent_tool("add_comment", "Add a comment to an issue's thread (signed by the agent for the user), optionally about one of its viewpoints.", {
    "issueId": ISSUE_ID, "text": {"type": "string", "minLength": 1}, "viewpointGuid": {"type": "string"},
}, ("issueId", "text"), takes_model=True, capability=Capability.REVIEW)
def add_comment(call: ToolCall) -> ToolResult:
    comment = call_service(lambda: CommentSerializer(services.comment_add(
        model_id=call.model_id, issue_id=call.arguments["issueId"], text=call.arguments["text"], signature=call.signature,
        viewpoint_guid=call.arguments.get("viewpointGuid"))).data)
    return ToolResult(json_output(comment), title=f"commented on {call.arguments['issueId']}", metadata={"modelId": call.model_id, "comment": comment})


@agent_tool("edit_comment", "Change the text of a comment (recorded as modified by the agent).", {
    "issueId": ISSUE_ID, "commentId": COMMENT_ID, "text": {"type": "string", "minLength": 1},
}, ("issueId", "commentId", "text"), takes_model=True, capability=Capability.REVIEW)
def edit_comment(call: ToolCall) -> ToolResult:
    comment = call_service(lambda: CommentSerializer(services.comment_update(
        model_id=call.model_id, issue_id=call.arguments["issueId"], comment_id=call.arguments["commentId"],
        changes={"text": call.arguments["text"]}, signature=call.signature)).data)
    return ToolResult(json_output(comment), title=f"edited a comment on {call.arguments['issueId']}", metadata={"modelId": call.model_id, "comment": comment})


@agent_tool("delete_comment", "Delete a comment from an issue's thread (the user is asked for permission).", {
    "issueId": ISSUE_ID, "commentId": COMMENT_ID,
}, ("issueId", "commentId"), takes_model=True, irreversible=True, capability=Capability.REVIEW)
def delete_comment(call: ToolCall) -> ToolResult:
    call_service(services.comment_delete, model_id=call.model_id, issue_id=call.arguments["issueId"], comment_id=call.arguments["commentId"])
    return ToolResult("deleted", title=f"deleted a comment on {call.arguments['issueId']}", metadata={"modelId": call.model_id})


@agent_tool("get_overrides", "The model's property overrides {entityId: {field: value}}.", takes_model=True)
def get_overrides(call: ToolCall) -> ToolResult:
    overrides = call_service(selectors.overrides_of_model, call.model_id)
    return ToolResult(json_output(overrides), title=f"overrides of {len(overrides)} element(s)", metadata={"modelId": call.model_id})


@agent_tool("set_overrides", "Override whitelisted properties of an element without changing the IFC.", {
    "entityId": {"type": "string", "minLength": 1}, "entityName": {"type": "string"}, "fields": FIELDS,
}, ("entityId", "fields"), takes_model=True, capability=Capability.EDIT)
def set_overrides(call: ToolCall) -> ToolResult:
    entity_id = call.arguments["entityId"]
    data = _validated(PropertiesUpdateSerializer, {"entityName": call.arguments.get("entityName", ""), "fields": call.arguments["fields"], "provenance": AI})
    effective = call_service(services.entity_properties_update, model_id=call.model_id, entity_id=entity_id, entity_name=data["entityName"],
                             fields=data["fields"], provenance=Provenance.AI.value, signature=call.signature)
    return ToolResult(json_output(effective), title=f"set overrides of {entity_id}", metadata={"modelId": call.model_id, "entityId": entity_id, "effective": effective})


@agent_tool("list_changes", "The model's change log, newest first.", {"limit": {"type": "integer", "minimum": 1, "maximum": 500}}, takes_model=True)
def list_changes(call: ToolCall) -> ToolResult:
    limit = call.arguments.get("limit", 50)
    entries = call_service(lambda: ChangeEntrySerializer(selectors.change_entries_of_model(call.model_id)[:limit], many=True).data)
    return ToolResult(json_output(entries), title=f"{len(entries)} change(s)", metadata={"modelId": call.model_id})


@agent_tool("migrate_overrides", "Turn the model's overrides into build-script edits saved as one version (the user is asked for permission).",
            takes_model=True, irreversible=True, capability=Capability.EDIT)
def migrate_overrides(call: ToolCall) -> ToolResult:
    result = call_service(migration.migrate_overrides, model_id=call.model_id, provenance=Provenance.AI.value, signature=call.signature)
    return ToolResult(json_output(result), title=f"migrated {len(result['migrated'])}, failed {len(result['failed'])}", metadata={"modelId": call.model_id, **result})
