"""Failures of a finished check pinned as review issues, deduplicated across re-checks of the model."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from checks_app import selectors
from checks_app.models import Check, PinnedFailure
from core.provenance import DEFAULT_AUTHOR, Provenance
from issues_app.models import Issue
from issues_app.services import issue_create, issue_update
from models_app.models import IfcModel

ISSUE_TITLE_PREFIX = "IDS: "


def specification_key(spec: dict) -> str:
    return (spec.get("identifier") or spec["name"])[:255]


def _failing_elements(result: dict) -> tuple[dict[tuple, dict], set[tuple], set[tuple]]:
    """({(ids, spec, guid): {spec, failures}}, checked (ids, spec) pairs, (ids, spec) pairs with truncated failures).
    A failing specification with no failing element (too few applicable elements) is one entry with guid ""."""
    failing, checked, truncated = {}, set(), set()
    for spec in result["specifications"]:
        pair = (spec["ids"], specification_key(spec))
        checked.add(pair)
        if spec.get("truncated"):
            truncated.add(pair)
        if spec["status"] != "fail":
            continue
        if not spec["failures"]:
            failing[(*pair, "")] = {"spec": spec, "failures": []}
        for failure in spec["failures"]:
            failing.setdefault((*pair, failure["guid"][:64]), {"spec": spec, "failures": []})["failures"].append(failure)
    return failing, checked, truncated


def _issue_data(check: Check, spec: dict, failures: list[dict], author: str, provenance: str) -> dict:
    lines = [f"IDS check {check.id} ({check.version}) of {spec['ids']}: specification \"{spec['name']}\"."]
    if spec.get("instructions"):
        lines.append(f"Instructions: {spec['instructions']}")
    if not failures:
        lines.append(spec.get("reason") or "the specification fails")
    for failure in failures:
        lines.append(f"- {failure['requirement']}: found {failure['found']}; expected {failure['expected']}")
    first = failures[0] if failures else {"guid": "", "name": "", "type": ""}
    return {
        "entityId": first["guid"][:64], "entityName": first["name"][:512], "entityType": first["type"][:128],
        "title": (ISSUE_TITLE_PREFIX + spec["name"])[:512], "comment": "\n".join(lines), "author": author, "provenance": provenance,
    }


def _pin_entry(link: PinnedFailure) -> dict:
    return {"issueId": link.issue_id, "ids": link.ids_name, "specification": link.specification, "guid": link.guid}


def check_pin_issues(*, model_id: str, check_id: str, author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value) -> dict:
    """Pins the failures of a finished check as review issues, one per failing (IDS file, specification, element),
    deduplicated across re-checks of the model: a failure with an open issue is left as it is (unchanged), one whose
    issue was resolved is reopened, a new one gets an issue (created), and the issue of a failure this check no
    longer finds (the specification was checked and the element passes or is gone) is resolved. Specifications with
    more failures than a result keeps are never resolved by absence. One transaction holding the model's row."""
    check = selectors.done_check_get(model_id, check_id)
    failing, checked, truncated = _failing_elements(check.result)
    answer = {"created": [], "reopened": [], "resolved": [], "unchanged": []}
    with transaction.atomic():
        model = IfcModel.objects.select_for_update().get(pk=check.model_id)
        links = {(link.ids_name, link.specification, link.guid): link for link in PinnedFailure.objects.select_related("issue").filter(model=model)}
        for key, item in failing.items():
            link = links.get(key)
            if link is None:
                issue = issue_create(model_id=model.id, data=_issue_data(check, item["spec"], item["failures"], author, provenance))
                link = PinnedFailure.objects.create(model=model, ids_name=key[0], specification=key[1], guid=key[2], issue=issue, last_check=check)
                answer["created"].append(_pin_entry(link))
                continue
            if link.issue.status == Issue.Status.RESOLVED:
                issue_update(model_id=model.id, issue_id=link.issue_id, changes={"status": Issue.Status.OPEN})
                answer["reopened"].append(_pin_entry(link))
            else:
                answer["unchanged"].append(_pin_entry(link))
            PinnedFailure.objects.filter(pk=link.pk).update(last_check=check, updated_at=timezone.now())
        for key, link in links.items():
            if key in failing or key[:2] not in checked or key[:2] in truncated:
                continue
            if link.issue.status != Issue.Status.RESOLVED:
                issue_update(model_id=model.id, issue_id=link.issue_id, changes={"status": Issue.Status.RESOLVED})
                answer["resolved"].append(_pin_entry(link))
    return answer
