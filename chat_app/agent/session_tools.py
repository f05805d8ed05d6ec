"""Tools about the chat session itself."""

from __future__ import annotations

from chat_app import selectors
from chat_app.agent.tools import Tool, ToolResult, in_thread, json_output, object_schema


async def _session_info(ctx, arguments: dict) -> ToolResult:
    info = await in_thread(selectors.session_overview)(ctx.session_id)
    model = info.get("model")
    title = f"{info['project']['title']} ({info['project']['kind']})" if info.get("project") else "session without a project"
    if model:
        title += f", model {model['name']} {model['status']}"
    return ToolResult(json_output(info), title=title, metadata=info)


SESSION_INFO = Tool(
    name="session_info",
    description="The session's project (id, title, kind), its bound model (id, name, conversion status) and the project's models.",
    parameters=object_schema(),
    run=_session_info,
)
