"""Schemathesis against both OpenAPI documents, on the real processes: no answer is a 5xx, and every answer fits
the schema its operation documents. Bounded in examples per operation so the suite stays well inside CI's limit.

Cases run as generated (ids of nothing, odd bodies) and, for reading operations, again against a real model whose
build script is saved, so the deeper code paths are fuzzed too."""

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance
from schemathesis.checks import not_a_server_error

from tests.e2e.stack import Stack
from tests.edit_service.conftest import example
from tests.helpers import MINIMAL_IFC

pytestmark = pytest.mark.e2e

TOKEN = "fuzz-token"
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance]
FUZZ_SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.fixture(scope="module")
def fuzz_stack(tmp_path_factory):
    running = Stack(tmp_path_factory.mktemp("fuzz"), token=TOKEN, workers=1).start()
    model_id = running.api("POST", "/api/v1/models", files={"file": ("a.ifc", MINIMAL_IFC)}).json()["data"]["id"]
    running.api("PUT", f"/api/v1/models/{model_id}/script", json={"script": example("small_house")})
    running.api("POST", f"/api/v1/models/{model_id}/script/save", json={"note": "v1"})
    running.real_model_id = model_id
    yield running
    running.stop()


def _call_twice(case, base_url: str, real_model_id: str, headers: dict) -> None:
    case.call_and_validate(base_url=base_url, headers=headers, checks=CHECKS)
    if case.method in ("GET", "POST") and "model_id" in (case.path_parameters or {}) and not case.path.endswith("/retry"):
        case.path_parameters["model_id"] = real_model_id
        case.call_and_validate(base_url=base_url, headers=headers, checks=CHECKS)


def fuzz(schema, base_url: str, real_model_id: str, headers: dict) -> tuple[list[str], int]:
    """Runs every operation of the schema; returns one line per operation that failed a check, and the number of
    cases run."""
    failures, cases = [], 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @FUZZ_SETTINGS
        def run(case):
            nonlocal cases
            cases += 1
            _call_twice(case, base_url, real_model_id, headers)

        try:
            run()
        except Exception as exc:  # noqa: BLE001 - collect every operation's failure, then report them all
            failures.append(f"{operation.method.upper()} {operation.path}: {str(exc).strip()[:1500]}")
    return failures, cases


def test_gateway_never_fails_and_keeps_its_schema(fuzz_stack):
    schema = schemathesis.openapi.from_url(f"{fuzz_stack.url}/api/v1/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"})
    failures, cases = fuzz(schema, fuzz_stack.url, fuzz_stack.real_model_id, {"Authorization": f"Bearer {TOKEN}"})
    assert failures == [], "\n\n".join(failures)
    assert cases >= 5 * len(schema.raw_schema["paths"]), cases


def test_edit_service_never_fails_and_keeps_its_schema(fuzz_stack):
    schema = schemathesis.openapi.from_url(f"{fuzz_stack.edit_url}/openapi.json")
    failures, cases = fuzz(schema, fuzz_stack.edit_url, fuzz_stack.real_model_id, fuzz_stack.edit_headers)
    assert failures == [], "\n\n".join(failures)
    assert cases >= 5 * len(schema.raw_schema["paths"]), cases


def test_the_fuzzed_model_survived_in_a_consistent_state(fuzz_stack):
    """After all of it the seeded model still answers, and its saved version is intact."""
    response = fuzz_stack.edit_call("GET", f"/models/{fuzz_stack.real_model_id}/versions", timeout=30)
    assert response.status_code == 200 and response.json()["versions"][0]["version"] == "v1"
