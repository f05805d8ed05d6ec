"""A check for the agent: a short account of its failures, and the check as the API shows it."""

from __future__ import annotations

from checks_app import selectors
from checks_app.models import Check


def failures_explain(*, model_id: str, check_id: str, examples_per_specification: int = 5) -> dict:
    """A short account of a check for a language model: the state, and per failing specification what it asks
    (requirements, instructions), how many elements fail and a few examples with found and expected values.
    `text` says the same in a few lines."""
    check = selectors.check_get(model_id, check_id)
    state = {"checkId": check.id, "modelId": check.model_id, "version": check.version, "status": check.status,
             "progress": {"phase": check.progress_phase, "percent": check.progress_percent}}
    if check.status == Check.Status.FAILED:
        return {**state, "error": check.error, "text": f"Check {check.id} failed: {check.error}"}
    if check.status != Check.Status.DONE:
        return {**state, "text": f"Check {check.id} is {check.status} ({check.progress_phase} {check.progress_percent}%); ask again when it is done."}
    result = check.result
    failing = []
    for spec in result["specifications"]:
        if spec["status"] != "fail":
            continue
        failing.append({
            "specification": spec["name"], "ids": spec["ids"], "reason": spec["reason"], "applicable": spec["applicable"],
            "failedElements": spec["failedElements"], "requirements": spec["requirements"], "instructions": spec.get("instructions", ""),
            "examples": [{key: failure[key] for key in ("guid", "name", "type", "requirement", "found", "expected")} for failure in spec["failures"][:examples_per_specification]],
        })
    summary = result["summary"]
    lines = [f"Check {check.id} of model {check.model_id} ({check.version}"
             + (", with overrides" if check.include_overrides else "") + f"): {summary['passed']} of {summary['specifications']} specifications pass."]
    for item in failing:
        lines.append(f"FAIL {item['specification']} ({item['ids']}): {item['failedElements']} of {item['applicable']} elements fail"
                     + (f"; {item['reason']}" if item["reason"] and not item["failedElements"] else "") + ".")
        for example in item["examples"][:2]:
            lines.append(f"  e.g. {example['type']} {example['guid']} {example['name']!r}: {example['requirement']}; found {example['found']}, expected {example['expected']}")
    return {**state, "summary": summary, "failing": failing, "text": "\n".join(lines)}


def check_get(*, model_id: str, check_id: str) -> dict:
    """The check as GET /api/v1/models/{id}/checks/{checkId} shows it (with `result` when done), for callers outside
    HTTP such as the agent's tools."""
    from checks_app.serializers import CheckDetailSerializer

    return dict(CheckDetailSerializer(selectors.check_get(model_id, check_id)).data)
