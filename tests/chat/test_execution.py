"""Tool calls run off the event loop; an aborted call reports exactly what it committed, also after the abort."""

import asyncio
import threading
import time

import pytest
from asgiref.sync import async_to_sync

from chat_app import events, services
from chat_app.agent.execution import run_tool
from chat_app.agent.loop import TurnContext
from chat_app.agent.tools import Tool, ToolCall, ToolResult, object_schema
from chat_app.models import Message, Part, sortable_id
from core import cancellation
from tests.helpers import poll

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


def test_a_tool_runs_off_the_loop_and_an_aborted_one_reports_what_it_committed():
    session = services.session_open(title="abort")
    message = Message.objects.create(id=sortable_id("msg_"), session=session, role="assistant", info={})
    part = {"id": sortable_id("prt_"), "sessionID": session.id, "messageID": message.id, "type": "tool", "callID": "call_1", "tool": "slow",
            "state": {"status": "running", "input": {}, "time": {"start": 1}}}
    Part.objects.create(id=part["id"], message=message, type="tool", data=part)
    gate, ran_in = threading.Event(), {}

    def slow(call):
        ran_in["thread"] = threading.current_thread().name
        cancellation.record("saved ifc model m_0000000000000001 v3")  # before the abort
        gate.wait(10)
        cancellation.record("saved ifc model m_0000000000000001 v4")  # an outside service finished after it
        return ToolResult("done", title="built", frames=[("viewer.committed", {"modelId": "m_0000000000000001", "kind": "ifc", "version": "v4"})])

    ctx = TurnContext(session_id=session.id, turn_id=None, user_message_id="", llm=None, tools={})
    tool = Tool("slow", "", object_schema(), slow)

    async def abort_while_it_works():
        task = asyncio.get_running_loop().create_task(run_tool(tool, ToolCall(ctx, {}), part))
        await asyncio.sleep(0.3)
        loop_was_free = time.monotonic()
        await asyncio.sleep(0.01)  # the loop runs other work while the tool blocks its thread
        assert time.monotonic() - loop_was_free < 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async_to_sync(abort_while_it_works)()
    assert ran_in["thread"].startswith("tool") and part["state"]["metadata"]["committed"] == ["saved ifc model m_0000000000000001 v3"]
    part["state"] = {"status": "error", "input": {}, "error": "Tool execution aborted", "metadata": {**part["state"]["metadata"], "interrupted": True}}
    Part.objects.filter(pk=part["id"]).update(data=part)  # what the loop does right after the cancellation
    gate.set()
    metadata = poll(lambda: Part.objects.get(pk=part["id"]).data["state"]["metadata"], lambda metadata: "completedAfterAbort" in metadata, timeout=10)
    assert metadata["committed"] == ["saved ifc model m_0000000000000001 v3", "saved ifc model m_0000000000000001 v4"]
    assert metadata["completedAfterAbort"]["title"] == "built" and metadata["interrupted"] is True
    # the late result's frames follow its part's update
    assert poll(lambda: events.frames_after(session.id, 0)[-1].event, lambda last: last == "viewer.committed", timeout=10)
