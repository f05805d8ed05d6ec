"""The agent's put_script reads the PARAMS of the script it stages (for the drawing-source check) in a capped child
(core.script_analysis), never in the gateway process: over the size limit it is refused before anything is parsed,
and what the child cannot analyse is a tool error, not a crash of the gateway's turn."""

import ast
from types import SimpleNamespace

import pytest

from chat_app import services
from chat_app.agent import script_tools
from chat_app.agent.tools import ToolCall, ToolError

pytestmark = [pytest.mark.django_db(transaction=True)]

FOREIGN_SOURCE = 'PARAMS = {"source": {"model": "m_00000000000000ff", "version": "v1"}}\n\n\ndef build(params, out_path):\n    pass\n'


def put_script(session_id: str, script: str):
    return script_tools.put_script(ToolCall(SimpleNamespace(session_id=session_id), {"script": script}, model_id="m_00000000000000aa"))


@pytest.fixture
def session_id():
    return services.session_open(title="alone").id


def test_a_script_over_the_size_limit_is_refused_before_it_is_parsed(session_id):
    with pytest.raises(ToolError, match="scripts may be at most 256 KB"):
        put_script(session_id, FOREIGN_SOURCE + "x = 1\n" * 60_000)


def test_the_params_are_read_outside_the_gateway_process(session_id, monkeypatch):
    parsed_here, parse = [], ast.parse

    def watched(source, *args, **kwargs):
        parsed_here.append(source)
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", watched)
    with pytest.raises(ToolError, match="not a drawing of this session's project"):  # the child read PARAMS["source"]
        put_script(session_id, FOREIGN_SOURCE)
    assert FOREIGN_SOURCE not in parsed_here


def test_a_script_the_child_cannot_analyse_is_a_tool_error(session_id):
    with pytest.raises(ToolError, match="too complex to analyse"):
        put_script(session_id, FOREIGN_SOURCE + "X = " + "-" * 100_000 + "1\n")
