"""The chat's structure: tools registered by name, personas that name registered tools and have their prompt file,
frame names shared with the web client from one file, tool states from one set of constructors."""

import json
import re
from pathlib import Path

from chat_app import frames
from chat_app.agent import registry
from chat_app.agent.delegate_tools import PERSONA_TOOLS
from chat_app.agent.prompts import prompt
from chat_app.parts import tool_completed, tool_error, tool_pending, tool_running

ROOT = Path(__file__).resolve().parents[2]


def test_every_tool_module_is_imported_by_the_registry():
    modules = {path.stem for path in (ROOT / "chat_app" / "agent").glob("*_tools.py")}
    registry_source = (ROOT / "chat_app" / "agent" / "registry.py").read_text()
    imported = set(re.findall(r"^\s+(\w+_tools),$", registry_source, re.MULTILINE))
    assert modules and imported == modules
    assert {"ask_user", "delegate", "run_script", "find_elements", "run_ids_check", "read_plan", "session_info"} <= set(registry.all_tools())


def test_every_persona_has_its_prompt_and_names_registered_tools_only():
    tools = registry.all_tools()
    for persona, names in PERSONA_TOOLS.items():
        assert prompt(f"persona-{persona}").startswith(f"You are the {persona}.")
        assert set(names) <= set(tools), f"{persona} names unknown tools: {set(names) - set(tools)}"
        assert "delegate" not in names and "ask_user" not in names
    assert prompt("main").startswith("You are the modelling assistant") and not prompt("main").endswith("\n")


def test_the_web_client_takes_the_frame_names_from_the_shared_file():
    names = json.loads((ROOT / "chat_app" / "frames.json").read_text())
    assert {getattr(frames, constant) for constant in names} == set(names.values())
    chat_js = (ROOT / "frontend" / "src" / "chat.js").read_text()
    assert 'from "../../chat_app/frames.json"' in chat_js
    handled = re.findall(r"case FRAMES\.(\w+):", chat_js)
    assert len(handled) >= 12 and set(handled) <= set(names), handled
    assert not [name for name in names.values() if f'case "{name}"' in chat_js]
    quoted = set(re.findall(r'"([a-z]+(?:\.[a-z_]+)+)"', chat_js))
    assert not quoted & set(names.values()), f"frame names written out in chat.js: {quoted & set(names.values())}"


def test_a_tool_state_keeps_the_calls_input_and_start_to_its_end():
    pending = tool_pending({"a": 1}, '{"a": 1}')
    assert pending == {"status": "pending", "input": {"a": 1}, "raw": '{"a": 1}'}
    running = tool_running({"a": 1}, metadata={"permitted": "once"})
    assert running["status"] == "running" and running["metadata"] == {"permitted": "once"}
    start = running["time"]["start"]
    completed = tool_completed(running, {"a": 1}, "done", title="t", metadata={})
    assert list(completed) == ["status", "input", "output", "title", "metadata", "time"]
    assert completed["time"]["start"] == start <= completed["time"]["end"]
    failed = tool_error(running, "broken", metadata={"interrupted": True})
    assert failed["status"] == "error" and failed["input"] == {"a": 1} and failed["error"] == "broken"
    assert failed["time"]["start"] == start and failed["metadata"] == {"interrupted": True}
    assert tool_error(pending, "held")["time"]["start"] <= tool_error(pending, "held")["time"]["end"]
