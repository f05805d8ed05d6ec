"""Failures of a finished check pinned as review issues, deduplicated across re-checks of the model.

Per specification (the default): one issue per failing IDS specification, its failing elements the selection of a
viewpoint that frames them, the requirement in words. Per element (on request): one issue per failing element,
which above PIN_CONFIRM_ABOVE new issues needs the caller's confirmation. Each issue names the check as its source: label
"IDS" and the IDS file's name, topic type "IDS failure" (as in the check's BCF report)."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from api.signatures import Signature
from checks_app import selectors
from checks_app.models import PER_ELEMENT, PER_SPECIFICATION, PIN_CONFIRM_ABOVE, PIN_MODES, Check, PinnedFailure
from core.errors import Invalid
from core.provenance import DEFAULT_AUTHOR, Provenance
from issues_app.models import Issue
from issues_app.services import issue_create, issue_update
from issues_app.services.viewpoints import element_boxes, framed, viewpoint_for_elements
from models_app.models import IfcModel

ISSUE_TITLE_PREFIX = "IDS: "
ELEMENTS_LISTED = 50  # failing elements named in an issue's description (all are selected in its viewpoint)
VIEWPOINT_NAMESPACE = uuid.UUID("3b0f6f2e-5d1c-4c55-9a43-0d8e6b1f2a77")


def specification_key(spec: dict) -> str:
    return (spec.get("identifier") or spec["name"])[:255]


def _failing(result: dict, per: str) -> tuple[dict[tuple, dict], dict[tuple, str], set[tuple]]:
    """({(ids, spec, guid): {spec, failures}}, {checked (ids, spec): its status}, (ids, spec) pairs with truncated
    failures). Per specification every failing specification is one entry with guid ""; per element each failing
    element is one, and a failing specification with no failing element (too few applicable elements) one with ""."""
    failing, checked, truncated = {}, {}, set()
    for spec in result["specifications"]:
        pair = (spec["ids"], specification_key(spec))
        checked[pair] = spec["status"]
        if spec.get("truncated"):
            truncated.add(pair)
        if spec["status"] != "fail":
            continue
        if per == PER_SPECIFICATION or not spec["failures"]:
            failing[(*pair, "")] = {"spec": spec, "failures": spec["failures"]}
            continue
        for failure in spec["failures"]:
            failing.setdefault((*pair, failure["guid"][:64]), {"spec": spec, "failures": []})["failures"].append(failure)
    return failing, checked, truncated


def _required(failures: list[dict]) -> list[str]:
    """What the specification requires, in words: the distinct expectations its failures were measured against."""
    return list(dict.fromkeys(failure["expected"] for failure in failures if failure.get("expected")))


def _element_words(failure: dict) -> str:
    return f"{failure['name'] or failure['type']} ({failure['type']} {failure['guid']})"


def _description(check: Check, spec: dict, failures: list[dict], per: str) -> str:
    lines = [f"IDS check {check.id} ({check.version}) of {spec['ids']}: specification \"{spec['name']}\"."]
    if spec.get("description"):
        lines.append(spec["description"])
    lines += [f"Required: {expected}" for expected in _required(failures)]
    if spec.get("instructions"):
        lines.append(f"Instructions: {spec['instructions']}")
    if not failures:
        lines.append(spec.get("reason") or "the specification fails")
    elif per == PER_SPECIFICATION:
        count = spec.get("failedElements") or len({failure["guid"] for failure in failures})
        lines.append(f"{count} of {spec['applicable']} applicable element(s) fail:")
    lines += [f"- {_element_words(failure)}: found {failure['found']}" for failure in failures[:ELEMENTS_LISTED]]
    if len(failures) > ELEMENTS_LISTED:
        lines.append(f"... and {len(failures) - ELEMENTS_LISTED} more failure(s); the viewpoint selects every failing element")
    return "\n".join(lines)


def _viewpoint(check: Check, key: tuple, failures: list[dict], boxes: dict[str, list[float]]) -> list[dict]:
    guid = str(uuid.uuid5(VIEWPOINT_NAMESPACE, "/".join((check.model_id, *key))))
    viewpoint = viewpoint_for_elements([failure["guid"] for failure in failures], boxes, guid=guid)
    return [viewpoint] if viewpoint else []


def _boxes(check: Check, failing: dict[tuple, dict]) -> dict[str, list[float]]:
    """The boxes of the elements the pin's viewpoints frame, read once for all of them."""
    guids = {guid for item in failing.values() for guid in framed([failure["guid"] for failure in item["failures"]])}
    return element_boxes(check.model_id, guids, check.result.get("locations") or {})


def _issue_data(check: Check, key: tuple, item: dict, per: str, boxes: dict, author: str, provenance: str) -> dict:
    from checks_app.reports import LABEL, TOPIC_TYPE  # here: that module loads the BCF library, ~0.2 s at every process's start

    spec, failures = item["spec"], item["failures"]
    elements = list(dict.fromkeys((failure["guid"], failure["name"], failure["type"]) for failure in failures))
    guid, name, kind = elements[0] if len(elements) == 1 else ("", "", "")
    if not guid and len({element[2] for element in elements}) == 1:
        kind = elements[0][2]
    return {
        "entityId": guid[:64], "entityName": name[:512], "entityType": kind[:128],
        "title": (ISSUE_TITLE_PREFIX + spec["name"])[:512], "comment": _description(check, spec, failures, per),
        "author": author, "provenance": provenance, "topicType": TOPIC_TYPE, "labels": [LABEL, spec["ids"]],
        "viewpoints": _viewpoint(check, key, failures, boxes),
    }


def _refresh_viewpoint(issue: Issue, made: list[dict]) -> None:
    """The pin's own viewpoint follows the check (the failing elements change); the reviewers' viewpoints stay."""
    if not made:
        return
    mine = made[0]
    current = [viewpoint for viewpoint in issue.viewpoints if viewpoint["guid"] == mine["guid"]]
    if not current or (current[0]["components"], current[0]["perspective_camera"]) == (mine["components"], mine["perspective_camera"]):
        return
    viewpoints = [{**mine, "snapshot": viewpoint.get("snapshot")} if viewpoint["guid"] == mine["guid"] else viewpoint for viewpoint in issue.viewpoints]
    issue_update(model_id=issue.model_id, issue_id=issue.id, changes={"viewpoints": viewpoints})


def _pin_entry(link: PinnedFailure, elements: int) -> dict:
    return {"issueId": link.issue_id, "ids": link.ids_name, "specification": link.specification, "guid": link.guid, "elements": elements}


def _gone(key: tuple, failing: dict, checked: dict, truncated: set, per: str) -> bool:
    """Whether a pinned failure is no longer found by this check. A specification-wide pin (guid "") goes when its
    specification passes; an element's pin (only managed per element) when the element no longer fails. Specifications
    this check did not check, or that keep fewer failures than they have, never resolve a pin by absence."""
    pair = key[:2]
    if key in failing or pair not in checked or pair in truncated:
        return False
    if key[2] == "":
        return checked[pair] != "fail"
    return per == PER_ELEMENT


def check_pin_issues(*, model_id: str, check_id: str, author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value,
                     per: str = PER_SPECIFICATION, confirm: bool = False, signature: Signature | None = None) -> dict:
    """Pins the failures of a finished check as review issues, one per failing specification (per="specification")
    or per failing element (per="element"), deduplicated across re-checks of the model: a failure with an open issue
    is left as it is (unchanged; its viewpoint follows the failing elements), one whose issue was resolved is reopened,
    a new one gets an issue (created), and the issue of a failure this check no longer finds is resolved. Per element,
    more than PIN_CONFIRM_ABOVE new issues need confirm=True (Invalid otherwise, nothing changed). One transaction holding
    the model's row. The issues are signed by `signature` (the caller's account, api.signatures), else by `author`."""
    if per not in PIN_MODES:
        raise Invalid(f"per must be one of {', '.join(PIN_MODES)}, got {per!r}")
    check = selectors.done_check_get(model_id, check_id)
    failing, checked, truncated = _failing(check.result, per)
    boxes = _boxes(check, failing)
    answer = {"created": [], "reopened": [], "resolved": [], "unchanged": []}
    with transaction.atomic():
        model = IfcModel.objects.select_for_update().get(pk=check.model_id)
        links = {(link.ids_name, link.specification, link.guid): link for link in PinnedFailure.objects.select_related("issue").filter(model=model)}
        new = [key for key in failing if key not in links]
        if per == PER_ELEMENT and len(new) > PIN_CONFIRM_ABOVE and not confirm:
            raise Invalid(
                f"pinning per element would create {len(new)} issues (one per failing element, more than {PIN_CONFIRM_ABOVE}): "
                "send confirm: true to create them, or pin per specification (one issue per failing specification)",
                data={"issues": len(new), "confirmAbove": PIN_CONFIRM_ABOVE},
            )
        for key, item in failing.items():
            elements = len({failure["guid"] for failure in item["failures"]})
            link = links.get(key)
            if link is None:
                issue = issue_create(model_id=model.id, data=_issue_data(check, key, item, per, boxes, author, provenance), signature=signature)
                link = PinnedFailure.objects.create(model=model, ids_name=key[0], specification=key[1], guid=key[2], issue=issue, last_check=check)
                answer["created"].append(_pin_entry(link, elements))
                continue
            if link.issue.status == Issue.Status.RESOLVED:
                issue_update(model_id=model.id, issue_id=link.issue_id, changes={"status": Issue.Status.OPEN}, signature=signature)
                answer["reopened"].append(_pin_entry(link, elements))
            else:
                answer["unchanged"].append(_pin_entry(link, elements))
            _refresh_viewpoint(link.issue, _viewpoint(check, key, item["failures"], boxes))
            PinnedFailure.objects.filter(pk=link.pk).update(last_check=check, updated_at=timezone.now())
        for key, link in links.items():
            if _gone(key, failing, checked, truncated, per) and link.issue.status != Issue.Status.RESOLVED:
                issue_update(model_id=model.id, issue_id=link.issue_id, changes={"status": Issue.Status.RESOLVED}, signature=signature)
                answer["resolved"].append(_pin_entry(link, 0))
    return answer
