"""A run's clashes pinned as review issues, and the issues kept in step with later runs.

Pinning (`clash_run_pin_issues`): one issue per present clash of a done run, or one per group of them (grouped as the
clash list groups them); each issue lives on the model of its clash's a element (issues are per model), carries the
clash's facts in its description, the two GlobalIds as components, and a viewpoint aimed at the clash (see
`clash_viewpoint`). Its BCF topic GUID is deterministic (uuid5 of project, test and clash id, or group key), and the
link ClashIssue remembers it: pinning again never makes a second issue; a pinned issue that was resolved while its
clash is present again is reopened. One click must not flood the issue list: a pin that would create more than
PIN_CONFIRM_ABOVE issues is refused (40001 naming `confirm`, with the count) unless the caller confirms it.

Keeping in step (`clash_run_settle_issues`, the receiver of `coordination_app.signals.run_finished`): after a done run
of a test, every issue pinned from that test whose clashes are all gone (resolved, or an element missing) is resolved
with a comment naming the run; a resolved one whose clash is back is reopened with a comment. A run already applied
to a link (re-delivery of the signal) or older than the last one applied changes nothing. These changes are signed
by the clash detection (SYSTEM_SIGNATURE), not by a person.

Coordinates: the clash point is in the project frame (models_app.federation); an issue's viewpoint is in the IFC world
frame of its model (the frame of every viewpoint of that model's issues), so the point and the other model's element
box are brought into it with the inverse of the model's placement.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass

import numpy as np
from django.db import transaction

from api.signatures import Signature
from coordination_app.engine.clashes import moved_boxes
from coordination_app.grouping import group_ids, grouping_checked
from coordination_app.issue_models import ClashIssue
from coordination_app.models import PRESENT, Clash, ClashRun, ClashSighting, ClashTest
from coordination_app.selectors import clash_run_get
from core.errors import Conflict, Invalid
from core.provenance import Provenance
from issues_app.bcf import camera_at_bounds
from issues_app.models import Issue
from issues_app.selectors import element_bounds
from issues_app.services import comment_add, issue_create, issue_update
from issues_app.services.viewpoints import union_bounds
from issues_app.viewpoints import IFC_GUID_RE, clean_viewpoint
from models_app.federation import project_placements
from models_app.selectors import project_of_model

TOPIC_NAMESPACE = uuid.UUID("b6a7f0c4-3f55-4d0e-9a0c-6c2f1e8d4a91")
TOPIC_TYPE = "Clash"
LABEL = "Clash"
PER_CLASH, PER_GROUP = "clash", "group"
PIN_MODES = (PER_CLASH, PER_GROUP)
PIN_CONFIRM_ABOVE = 25  # more new issues than this in one pin need confirm: true (as an IDS check's pin per element)
COLOR_A, COLOR_B = "E8412C", "2C7BE8"  # a element red, b element blue
SECTION_MARGIN = 0.5  # metres the section box reaches beyond the clash point at least
SECTION_REACH = 2.0  # metres the section box reaches beyond the clash point at most (the elements may be long)
CLASHES_LISTED = 50  # clashes named in a group issue's description (all are selected in its viewpoint)
SYSTEM_SIGNATURE = Signature("clash-detection")


# --- the facts of one clash as one run saw it --------------------------------------------------------------------


@dataclass(frozen=True)
class Element:
    model_id: str
    guid: str
    type: str
    name: str
    storey: str

    @classmethod
    def of(cls, side: dict) -> "Element":
        """From a Clash's a or b: {modelId, guid, type, name, storey}."""
        return cls(side["modelId"], side["guid"], side.get("type") or "", side.get("name") or "", side.get("storey") or "")

    def words(self) -> str:
        storey = f", storey {self.storey}" if self.storey else ""
        return f"{self.type} \"{self.name or '(no name)'}\" {self.guid} in model {self.model_id}{storey}"


@dataclass(frozen=True)
class ClashFacts:
    """A clash with the point, depth and distance of one run's sighting (project frame, metres)."""

    clash_id: str
    status: str
    a: Element
    b: Element
    point: tuple[float, float, float]
    depth: float | None
    distance: float | None
    review_status: str = ""
    assigned_to: str = ""

    @classmethod
    def of(cls, sighting: ClashSighting) -> "ClashFacts":
        clash: Clash = sighting.clash
        return cls(
            clash_id=clash.pk, status=sighting.status, a=Element.of(clash.a), b=Element.of(clash.b),
            point=tuple(float(v) for v in (sighting.point or clash.point)), depth=sighting.depth, distance=sighting.distance,
            review_status=clash.review_status, assigned_to=clash.assigned_to,
        )

    def measure(self) -> str:
        if self.depth is not None:
            return f"penetration depth {self.depth * 1000:.0f} mm"
        if self.distance is not None:
            return f"distance {self.distance * 1000:.0f} mm"
        return "duplicate"


def done_run(run: ClashRun) -> ClashRun:
    """The run, when its clashes are there to pin or report; Conflict while it is queued or running, or when it failed
    or was cancelled."""
    if run.status != ClashRun.Status.DONE:
        detail = f": {run.error}" if run.error else ""
        raise Conflict(f"run {run.pk} is {run.status}{detail}; its clashes exist once it is done")
    return run


def present_facts(run: ClashRun, *, approved: bool = True) -> list[ClashFacts]:
    """The clashes the run found present, by clash id; without the approved ones (accepted as they are) when
    approved=False."""
    sightings = ClashSighting.objects.filter(run=run, status__in=PRESENT).select_related("clash")
    if not approved:
        sightings = sightings.exclude(clash__review_status=Clash.Review.APPROVED)
    return sorted((ClashFacts.of(s) for s in sightings), key=lambda f: f.clash_id)


# --- topic GUID, title, description and viewpoint ---------------------------------------------------------------


def clash_topic_guid(test: ClashTest, key: str) -> str:
    """The BCF topic GUID of a clash's (key = clash id) or a group's (key = group key) issue: the same on every pin
    and in every report."""
    return str(uuid.uuid5(TOPIC_NAMESPACE, f"{test.project_id}/{test.name}/{key}"))


def clash_title(test: ClashTest, clashes: list[ClashFacts], group_label: str = "") -> str:
    if group_label:
        return f"Clashes ({test.name}): {group_label}, {len(clashes)} clash(es)"[:512]
    only = clashes[0]
    return f"Clash ({test.name}): {only.a.type} {only.a.name or only.a.guid} / {only.b.type} {only.b.name or only.b.guid}"[:512]


def clash_description(test: ClashTest, run: ClashRun, clashes: list[ClashFacts]) -> str:
    """The clash facts in words: test, type, both elements, depth or distance, point, run."""
    kind = {"hard": "hard clash", "clearance": f"clearance under {test.distance:g} m", "duplicate": "duplicate"}.get(test.kind, test.kind)
    lines = [f"Clash test \"{test.name}\" ({kind}, tolerance {test.tolerance:g} m), run {run.pk}."]
    for facts in clashes[:CLASHES_LISTED]:
        point = ", ".join(f"{v:.3f}" for v in facts.point)
        review = f", {facts.review_status}" if facts.review_status else ""
        lines += [
            f"- {facts.clash_id} ({facts.status}{review}): {facts.measure()} at ({point}) (project frame, m)",
            f"  a: {facts.a.words()}",
            f"  b: {facts.b.words()}",
        ]
    if len(clashes) > CLASHES_LISTED:
        lines.append(f"... and {len(clashes) - CLASHES_LISTED} more clash(es); the viewpoint selects every element")
    return "\n".join(lines)


def _inverse_placement(placements: dict[str, np.ndarray], model_id: str) -> np.ndarray:
    return np.linalg.inv(placements.get(model_id, np.eye(4)))


def _moved_box(box: list[float], matrix: np.ndarray) -> list[float]:
    return moved_boxes(np.array([box], dtype=float), matrix)[0].tolist()


def section_box(point: list[float], boxes: list[list[float]]) -> list[float]:
    """The box the section planes cut out: the elements' boxes around the point, at most SECTION_REACH and at least
    SECTION_MARGIN beyond the point on every side."""
    low = [point[i] - SECTION_MARGIN for i in range(3)]
    high = [point[i] + SECTION_MARGIN for i in range(3)]
    for box in boxes:
        for i in range(3):
            low[i] = min(low[i], max(box[i], point[i] - SECTION_REACH))
            high[i] = max(high[i], min(box[i + 3], point[i] + SECTION_REACH))
    return [*low, *high]


def clipping_planes(box: list[float]) -> list[dict]:
    """Six planes around the box, each normal pointing out of it (BCF: towards the side that is clipped away)."""
    planes = []
    for axis, name in enumerate("xyz"):
        for side, sign in ((box[axis], -1.0), (box[axis + 3], 1.0)):
            location = {a: (box[i] + box[i + 3]) / 2 for i, a in enumerate("xyz")}
            location[name] = side
            planes.append({"location": location, "direction": {a: (sign if a == name else 0.0) for a in "xyz"}})
    return planes


def _component_list(guids) -> list[dict]:
    return [{"ifc_guid": guid} for guid in dict.fromkeys(guids) if IFC_GUID_RE.match(guid)]


def clash_bounds(clashes: list[ClashFacts]) -> dict[tuple[str, str], list[float]]:
    """(model id, GlobalId) -> the element's box in its model's IFC world frame, for the elements of the clashes that
    have one (one read of each model's element-bounds.json)."""
    wanted: dict[str, set[str]] = {}
    for facts in clashes:
        for element in (facts.a, facts.b):
            wanted.setdefault(element.model_id, set()).add(element.guid)
    return {(model_id, guid): box for model_id, guids in wanted.items() for guid, box in element_bounds(model_id, guids).items()}


def clash_viewpoint(model_id: str, clashes: list[ClashFacts], placements: dict[str, np.ndarray], bounds: dict[tuple[str, str], list[float]], *,
                    guid: str) -> dict:
    """A BCF-API 3.0 viewpoint of the clashes, in the IFC world frame of `model_id`: both elements of each clash
    selected and coloured (a red, b blue), every other element hidden (BCF 3.0 has no X-ray), six clipping planes
    boxing the clash point and its elements (a group: the section boxes of all its points together), a camera
    looking at that box. Coordinates in the project frame are brought into the model's frame; `bounds` are
    clash_bounds' boxes."""
    to_model = _inverse_placement(placements, model_id)
    sections = []
    for facts in clashes:
        point = (to_model @ np.array([*facts.point, 1.0]))[:3].tolist()
        boxes = [
            _moved_box(bounds[(element.model_id, element.guid)], to_model @ placements.get(element.model_id, np.eye(4)))
            for element in (facts.a, facts.b) if (element.model_id, element.guid) in bounds
        ]
        sections.append(section_box(point, boxes))
    box = union_bounds(sections)
    a_guids, b_guids = [c.a.guid for c in clashes], [c.b.guid for c in clashes]
    shown = _component_list([*a_guids, *b_guids])
    coloring = [{"color": color, "components": items} for color, items in ((COLOR_A, _component_list(a_guids)), (COLOR_B, _component_list(b_guids))) if items]
    raw = {
        "guid": guid, "perspective_camera": camera_at_bounds(box), "clipping_planes": clipping_planes(box),
        "components": {
            "selection": shown, "coloring": coloring,
            "visibility": {"default_visibility": False, "exceptions": shown,
                           "view_setup_hints": {"spaces_visible": False, "space_boundaries_visible": False, "openings_visible": False}},
        },
    }
    return clean_viewpoint(raw, "viewpoint", set(), lambda: guid)


def viewpoint_guid(topic_guid: str) -> str:
    """The GUID of the viewpoint a clash topic is made with."""
    return str(uuid.uuid5(TOPIC_NAMESPACE, topic_guid))


# --- pinning ------------------------------------------------------------------------------------------------------


@dataclass
class Pin:
    """What one issue is made of: its key (clash id, or the group's key), its clashes and, for a group, a label."""

    key: str
    clashes: list[ClashFacts]
    label: str = ""


def _group_label(group_id: str) -> str:
    """A group id of coordination_app.grouping in words: "storey:Level 1" -> "storey Level 1"."""
    kind, _, rest = group_id.partition(":")
    return f"{kind} {rest.replace('|', ' / ')}"


def _pins(clashes: list[ClashFacts], per: str, how: str | None) -> list[Pin]:
    """One pin per clash, or per group of the grouping `how` (keyed by the grouping and the group's id, which stays
    the same for the same clashes)."""
    if per == PER_CLASH:
        return [Pin(facts.clash_id, [facts]) for facts in clashes]
    rows = [{"clashId": f.clash_id, "a": asdict(f.a) | {"modelId": f.a.model_id}, "b": asdict(f.b) | {"modelId": f.b.model_id}, "point": f.point}
            for f in clashes]
    members: dict[str, list[ClashFacts]] = {}
    for facts, group_id in zip(clashes, group_ids(rows, how)):
        members.setdefault(group_id, []).append(facts)
    return [Pin(f"{how}/{group_id}", items, _group_label(group_id)) for group_id, items in members.items()]


def _entry(link: ClashIssue) -> dict:
    return {"issueId": link.issue_id, "modelId": link.issue.model_id, "topicGuid": link.topic_guid, "clashIds": list(link.clash_ids)}


def _issue_data(test: ClashTest, run: ClashRun, pin: Pin, viewpoint: dict, provenance: str) -> dict:
    single = pin.clashes[0].a if len(pin.clashes) == 1 else None
    return {
        "entityId": single.guid if single else "", "entityName": (single.name if single else "")[:512], "entityType": (single.type if single else "")[:128],
        "title": clash_title(test, pin.clashes, pin.label), "comment": clash_description(test, run, pin.clashes),
        "provenance": provenance, "topicType": TOPIC_TYPE, "labels": [LABEL, test.name], "viewpoints": [viewpoint],
        "assignedTo": pin.clashes[0].assigned_to if len(pin.clashes) == 1 else "",
    }


def _existing_link(topic_guid: str, per: str, pin: Pin, links: list[ClashIssue]) -> ClashIssue | None:
    """The link of this pin: the one with its topic GUID, else (a group whose key moved, e.g. a proximity group that
    lost its first clash) a group link of the same grouping holding one of its clashes."""
    for link in links:
        if link.topic_guid == topic_guid:
            return link
    if per == PER_GROUP:
        grouping, ids = pin.key.partition("/")[0], {facts.clash_id for facts in pin.clashes}
        for link in links:
            if link.per == PER_GROUP and link.group_key.partition("/")[0] == grouping and ids & set(link.clash_ids):
                return link
    return None


def _models_still_in_project(run: ClashRun, project_id: str) -> None:
    """Conflict when a model the run clashed has left the test's project since: its issues would be written into
    another project's model (where the caller may have no role)."""
    for entry in run.model_versions:
        if project_of_model(entry["modelId"]) != project_id:
            raise Conflict(f"model {entry['modelId']} of run {run.pk} is no longer in project {project_id}: "
                           "its clashes cannot be pinned here; change the test and run it again")


def _refuse_flood(new: int, per: str) -> None:
    """Invalid (40001 naming confirm, data {issues, confirmAbove}) when a pin would create more than PIN_CONFIRM_ABOVE
    issues without the caller's confirmation."""
    advice = "or pin per group (one issue per group of clashes)" if per == PER_CLASH else "or choose a coarser grouping"
    raise Invalid(f"confirm: pinning per {per} would create {new} issues (more than {PIN_CONFIRM_ABOVE}): send confirm: true to create them, "
                  f"{advice}", data={"field": "confirm", "issues": new, "confirmAbove": PIN_CONFIRM_ABOVE})


def clash_run_pin_issues(*, project_id: str, name: str, run_id: str, per: str = PER_CLASH, group: str | None = None,
                         signature: Signature | None = None, provenance: str = Provenance.UI.value, confirm: bool = False) -> dict:
    """Pins the present clashes of a done run as issues, one per clash (per="clash") or per group (per="group" with
    group = by-proximity:<m> | storey | element | classes): a clash (group) without an issue gets one (created), one
    whose issue was resolved reopens it (reopened), one with an open issue leaves it as it is (unchanged; a group's
    issue takes in its new clashes). Issues of this test whose clashes this run no longer has are resolved
    (resolved). Answers {created, reopened, resolved, unchanged}: [{issueId, modelId, topicGuid, clashIds}]. More than
    PIN_CONFIRM_ABOVE new issues need confirm=True (Invalid otherwise, nothing changed). One transaction; signed by
    `signature` (the caller)."""
    if per not in PIN_MODES:
        raise Invalid(f"per: one of {', '.join(PIN_MODES)}, got {per!r}")
    if per == PER_GROUP:
        group = grouping_checked(group or "")
    run = clash_run_get(project_id, name, run_id)
    done_run(run)
    if run.staged:
        raise Conflict(f"run {run.pk} ran on a staged product: its clashes are not recorded, so they cannot be pinned")
    test = run.test
    _models_still_in_project(run, test.project_id)
    clashes = present_facts(run, approved=False)
    pins = _pins(clashes, per, group)
    placements = project_placements(test.project_id) if pins else {}
    bounds = clash_bounds(clashes)
    answer = {"created": [], "reopened": [], "resolved": [], "unchanged": []}
    with transaction.atomic():
        ClashTest.objects.select_for_update().get(pk=test.pk)  # one pin of a test at a time
        links = list(ClashIssue.objects.select_related("issue", "last_run").filter(test=test))
        new = sum(_existing_link(clash_topic_guid(test, pin.key), per, pin, links) is None for pin in pins)
        if new > PIN_CONFIRM_ABOVE and not confirm:
            _refuse_flood(new, per)
        for pin in pins:
            topic_guid = clash_topic_guid(test, pin.key)
            ids = [facts.clash_id for facts in pin.clashes]
            link = _existing_link(topic_guid, per, pin, links)
            if link is None:
                model_id = pin.clashes[0].a.model_id
                viewpoint = clash_viewpoint(model_id, pin.clashes, placements, bounds, guid=viewpoint_guid(topic_guid))
                issue = issue_create(model_id=model_id, data=_issue_data(test, run, pin, viewpoint, provenance), signature=signature)
                Issue.objects.filter(pk=issue.pk).update(bcf_topic_guid=topic_guid)
                link = ClashIssue.objects.create(issue=issue, test=test, topic_guid=topic_guid, per=per, group_key=pin.key if per == PER_GROUP else "",
                                                 clash_ids=ids, last_run=run)
                links.append(link)
                answer["created"].append(_entry(link))
                continue
            link.clash_ids = sorted(set(link.clash_ids) | set(ids))  # a group's issue takes in the group's new clashes
            if link.issue.status == Issue.Status.RESOLVED:
                _set_status(link, Issue.Status.OPEN, signature, f"Reopened when the clashes of run {run.pk} were pinned: {', '.join(ids)} present.")
                answer["reopened"].append(_entry(link))
            else:
                answer["unchanged"].append(_entry(link))
            _applied(link, run)
        present = set(ClashSighting.objects.filter(run=run, status__in=PRESENT).values_list("clash_id", flat=True))
        for link in links:
            if link.issue.status != Issue.Status.RESOLVED and not present & set(link.clash_ids):
                _set_status(link, Issue.Status.RESOLVED, signature, f"Resolved when the clashes of run {run.pk} were pinned: its clashes are gone.")
                _applied(link, run)
                answer["resolved"].append(_entry(link))
    return answer


# --- keeping pinned issues in step with later runs ----------------------------------------------------------------


def _set_status(link: ClashIssue, status: str, signature: Signature | None, comment: str) -> None:
    """The linked issue's status changed, with a comment saying why, both signed by `signature`."""
    model_id, issue_id = link.issue.model_id, link.issue_id
    link.issue = issue_update(model_id=model_id, issue_id=issue_id, changes={"status": status}, signature=signature)
    comment_add(model_id=model_id, issue_id=issue_id, text=comment, signature=signature)


def _applied(link: ClashIssue, run: ClashRun) -> None:
    """Records that the run was applied to the link; the latest run applied never moves back to an older one."""
    if link.last_run is None or link.last_run.created_at <= run.created_at:
        link.last_run = run
    link.save(update_fields=["clash_ids", "last_run", "updated_at"])


def _status_words(link: ClashIssue, statuses: dict[str, str]) -> str:
    return ", ".join(f"{clash_id} {statuses.get(clash_id, 'not found')}" for clash_id in link.clash_ids)


def clash_run_settle_issues(run_id: str) -> dict:
    """After a done run: resolves each issue pinned from its test whose clashes the run has all gone (resolved,
    missing, or not seen), with a comment naming the run, and reopens a resolved one with a clash that came back
    (new in this run: gone in the run before), with a comment; an issue a person resolved while its clash is still
    there (active) stays resolved. A link the run (or a later run) was already applied to is left as it is, so a second delivery
    of the same run adds nothing. Signed by the clash detection. Answers {resolved: [issue ids], reopened: [...]}."""
    run = ClashRun.objects.select_related("test").filter(pk=run_id).first()
    done = {"resolved": [], "reopened": []}
    if run is None or run.status != ClashRun.Status.DONE or run.staged:
        return done
    statuses = dict(ClashSighting.objects.filter(run=run).values_list("clash_id", "status"))
    with transaction.atomic():
        for link in ClashIssue.objects.select_for_update(of=("self",)).select_related("issue", "last_run").filter(test=run.test):
            if link.last_run is not None and (link.last_run_id == run.pk or link.last_run.created_at > run.created_at):
                continue
            present = [clash_id for clash_id in link.clash_ids if statuses.get(clash_id) in PRESENT]
            back = [clash_id for clash_id in present if statuses[clash_id] == Clash.Status.NEW]  # gone in the run before, here again
            named = f"clash run {run.pk} of test \"{run.test.name}\""
            if not present and link.issue.status != Issue.Status.RESOLVED:
                _set_status(link, Issue.Status.RESOLVED, SYSTEM_SIGNATURE, f"Resolved by {named}: its clashes are gone ({_status_words(link, statuses)}).")
                done["resolved"].append(link.issue_id)
            elif back and link.issue.status == Issue.Status.RESOLVED:  # an issue a person resolved while its clash stays is left so
                _set_status(link, Issue.Status.OPEN, SYSTEM_SIGNATURE, f"Reopened by {named}: {', '.join(back)} present again ({_status_words(link, statuses)}).")
                done["reopened"].append(link.issue_id)
            _applied(link, run)
    return done
