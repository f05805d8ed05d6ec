"""What a process of the gateway loads as Django starts: the apps register their job kinds and receivers without
importing the engines behind them (the chat agent's LLM client, ifctester, the BCF library, the clash engine, numpy,
ifcopenshell), which cost a second of processor time at every start of every worker and manage.py command; nor does
the gateway's URLconf load the engines that read models (ifcopenshell: ~150 ms per gateway); a use case named by
on_first_call is imported when it is first called."""

import json
import os
import subprocess
import sys

from core.jobs import on_first_call
from tests.e2e.stack import ROOT

ENGINES = ("openai", "ifctester", "xmlschema", "bcf", "numpy", "ifcopenshell", "psycopg")


# what the gateway's every route and view may not load with them (read models and run checks elsewhere, or lazily:
# deepdiff on the first diff of plan files)
MODEL_ENGINES = ("openai", "ifctester", "xmlschema", "ifcopenshell", "deepdiff")


def loaded_after(tmp_path, start: str, engines: tuple[str, ...], config: dict | None = None) -> list[str]:
    code = f"import django, json, sys; django.setup(); {start}; print(json.dumps([m for m in {engines!r} if m in sys.modules]))"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIEWER_", "DJANGO_"))}
    env.update(DJANGO_SETTINGS_MODULE="viewer_gateway.settings", VIEWER_DATA_DIR=str(tmp_path))
    if config is not None:
        (tmp_path / "server_config.json").write_text(json.dumps(config))
        env["VIEWER_CONFIG"] = str(tmp_path / "server_config.json")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_django_starts_without_the_engines(tmp_path):
    assert loaded_after(tmp_path, "pass", ENGINES) == []


def test_the_gateway_loads_every_route_without_a_model_reading_engine(tmp_path):
    start = "import viewer_gateway.asgi; from django.urls import get_resolver; assert get_resolver().url_patterns"
    assert loaded_after(tmp_path, start, MODEL_ENGINES) == []


def test_a_worker_checks_the_configuration_without_loading_the_gateways_routes(tmp_path):
    """The worker commands run the configuration's system checks (a bad configuration stops them, tests/gateway/
    test_config.py) but not the URL configuration's, which imported every view: half of a worker's start."""
    start = ("from models_app.management.commands.conversion_worker import Command; Command.handle = lambda *args, **options: None; "
             "Command().run_from_argv(['manage.py', 'conversion_worker'])")  # its start as manage.py runs it, up to its work
    assert loaded_after(tmp_path, start, ("viewer_gateway.urls", "rest_framework.views")) == []
    assert loaded_after(tmp_path, "from django.core.management import call_command; call_command('check')", ("viewer_gateway.urls",)) == [
        "viewer_gateway.urls"]


def test_the_gateway_loads_the_agent_as_it_starts_and_the_openai_client_only_with_a_language_model(tmp_path):
    start = "from chat_app.apps import load_agent; load_agent(sender=None)"  # the gateway's start (gateway_starting)
    assert loaded_after(tmp_path, start, ("chat_app.agent.turn", "openai")) == ["chat_app.agent.turn"]
    configured = {"llmAPIKey": "key", "llmBaseURL": "http://127.0.0.1:9/v1", "llmModel": "model"}
    assert loaded_after(tmp_path, start, ("chat_app.agent.turn", "openai"), configured) == ["chat_app.agent.turn", "openai"]


def test_a_use_case_named_by_its_path_is_imported_on_its_first_call():
    module = "tests.jobs.first_call_target"
    sys.modules.pop(module, None)
    double = on_first_call(f"{module}.double")
    assert module not in sys.modules
    assert double(21) == 42 and module in sys.modules
    assert double.__name__ == f"{module}.double"
