"""A check's failures pinned as review issues: by default one issue per failing specification, its failing elements
selected by a viewpoint whose camera frames them, the requirement in words, the IDS check as its source; per element
on request, confirmed above a threshold; pinning again changes nothing but what the check changed."""

import json
import math

import pytest

from checks_app.models import PIN_CONFIRM_ABOVE, PinnedFailure
from issues_app.models import Issue
from models_app.storage import model_dir
from tests.checks.conftest import EXAMPLE_IDS, WALL_GUIDS, fire_ids, write_walls_ifc
from tests.helpers import sample

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

PATTERN = "[0-9]+.*"


def pin(api, model_id, check_id, **body):
    response = api.post(f"/api/v1/models/{model_id}/checks/{check_id}/issues", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()["data"]


def issues(api, model_id) -> list[dict]:
    return api.get(f"/api/v1/models/{model_id}/issues").json()["data"]


def selection(issue: dict) -> list[str]:
    return sorted(component["ifc_guid"] for component in issue["viewpoints"][0]["components"]["selection"])


def looked_at(viewpoint: dict) -> list[float]:
    """The point on the camera's line of sight nearest to the box centre the test expects (for the framing check)."""
    camera = viewpoint["perspective_camera"]
    return [camera["camera_view_point"][a] for a in "xyz"], [camera["camera_direction"][a] for a in "xyz"]


def distance_to_line(point, eye, direction) -> float:
    norm = math.sqrt(sum(d * d for d in direction))
    unit = [d / norm for d in direction]
    offset = [p - e for p, e in zip(point, eye)]
    along = sum(o * u for o, u in zip(offset, unit))
    return math.dist(point, [e + u * along for e, u in zip(eye, unit)])


def test_one_issue_per_failing_specification_with_its_elements_in_a_framing_viewpoint(api, make_model, put_ids, start_check):
    model = make_model(fire_ratings={"A": "REI60", "B": "60 min"})  # A fails the pattern, B passes, C has no value
    bounds = {WALL_GUIDS["A"]: [0.0, -0.1, 0.0, 4.0, 0.1, 3.0], WALL_GUIDS["C"]: [10.0, -0.1, 0.0, 14.0, 0.1, 3.0]}
    (model_dir(model.id) / "element-bounds.json").write_text(json.dumps(bounds))  # what the conversion writes
    put_ids("fire.ids", fire_ids().replace(b"REI[0-9]+", PATTERN.encode()))
    check = start_check(model.id, {"ids": ["fire.ids"]})
    (spec,) = check["result"]["specifications"]
    assert spec["requirements"] == [f"FireRating data shall be matching the pattern {PATTERN} and in the dataset Pset_WallCommon"]
    assert "{'" not in json.dumps(spec)  # ifctester's sentences name a restriction in words

    answer = pin(api, model.id, check["checkId"], author="anna")
    assert [(e["ids"], e["specification"], e["guid"], e["elements"]) for e in answer["created"]] == [("fire.ids", "Walls have a fire rating", "", 2)]
    (issue,) = issues(api, model.id)
    assert issue["title"] == "IDS: Walls have a fire rating" and issue["author"] == "anna"
    assert selection(issue) == sorted([WALL_GUIDS["A"], WALL_GUIDS["C"]])
    assert issue["viewpoints"][0]["components"]["visibility"]["default_visibility"] is True
    eye, direction = looked_at(issue["viewpoints"][0])
    assert distance_to_line([7.0, 0.0, 1.5], eye, direction) < 1e-6  # aimed at the centre of the two walls' box
    assert math.dist(eye, [7.0, 0.0, 1.5]) > 7.0 and direction[2] < 0  # from above, far enough to see both
    assert issue["camera"] is not None and issue["entityId"] == "" and issue["entityType"] == "IfcWall"
    # the source is the check, the requirement in words, never a Python repr
    assert issue["labels"] == ["IDS", "fire.ids"] and issue["topicType"] == "IDS failure" and issue["provenance"] == {"source": "UI"}
    assert f"Required: Pset_WallCommon.FireRating matching the pattern {PATTERN}" in issue["comment"]
    assert "{'" not in issue["comment"] and "2 of 3 applicable element(s) fail" in issue["comment"]
    assert "Wall A (IfcWall 0aaaaaaaaaaaaaaaaaaaaa): found REI60" in issue["comment"] and "found no such property set" in issue["comment"]


def test_pinning_again_duplicates_nothing_and_follows_the_check(api, make_model, put_ids, start_check):
    model = make_model(fire_ratings={"A": "REI60"})
    put_ids("fire.ids", fire_ids())
    first = start_check(model.id, {"ids": ["fire.ids"]})
    created = pin(api, model.id, first["checkId"])["created"]
    assert len(created) == 1 and created[0]["elements"] == 2
    again = pin(api, model.id, first["checkId"])
    assert (again["created"], [e["issueId"] for e in again["unchanged"]]) == ([], [created[0]["issueId"]])
    (issue,) = issues(api, model.id)
    assert selection(issue) == sorted([WALL_GUIDS["B"], WALL_GUIDS["C"]])  # located by their placements (no bounds file)

    write_walls_ifc(model_dir(model.id) / "model.ifc", fire_ratings={"A": "REI60", "B": "REI30"})  # B fixed
    second = start_check(model.id, {"ids": ["fire.ids"]})
    assert [e["issueId"] for e in pin(api, model.id, second["checkId"])["unchanged"]] == [created[0]["issueId"]]
    (issue,) = issues(api, model.id)
    assert selection(issue) == [WALL_GUIDS["C"]] and len(issue["viewpoints"]) == 1

    # per element beside it: its own issues; the specification's issue is not resolved by their pin
    per_element = pin(api, model.id, second["checkId"], per="element")
    assert [e["guid"] for e in per_element["created"]] == [WALL_GUIDS["C"]] and per_element["resolved"] == []
    element_issue = Issue.objects.get(entity_id=WALL_GUIDS["C"])
    assert element_issue.viewpoints[0]["components"]["selection"] == [{"ifc_guid": WALL_GUIDS["C"]}]

    write_walls_ifc(model_dir(model.id) / "model.ifc", fire_ratings={"A": "REI60", "B": "REI30", "C": "REI90"})  # all pass
    third = start_check(model.id, {"ids": ["fire.ids"]})
    assert [e["issueId"] for e in pin(api, model.id, third["checkId"])["resolved"]] == [created[0]["issueId"]]
    assert Issue.objects.count() == 2 and PinnedFailure.objects.count() == 2


def test_per_element_above_the_threshold_needs_a_confirmation(api, make_model, put_ids, start_check):
    model = make_model(sample("AC20-FZK-Haus.ifc"))
    put_ids("basics.ids", EXAMPLE_IDS.read_bytes())
    check = start_check(model.id, {"ids": ["basics.ids"]})
    failing = [spec for spec in check["result"]["specifications"] if spec["status"] == "fail"]
    elements = sum(len({f["guid"] for f in spec["failures"]}) or 1 for spec in failing)
    assert elements > PIN_CONFIRM_ABOVE

    refused = api.post(f"/api/v1/models/{model.id}/checks/{check['checkId']}/issues", {"per": "element"}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (400, 40001)
    assert f"would create {elements} issues" in refused.json()["message"] and "confirm" in refused.json()["message"]
    assert refused.json()["data"] == {"issues": elements, "confirmAbove": PIN_CONFIRM_ABOVE}
    assert Issue.objects.count() == 0 and PinnedFailure.objects.count() == 0
    bad = api.post(f"/api/v1/models/{model.id}/checks/{check['checkId']}/issues", {"per": "storey"}, format="json")
    assert bad.json()["code"] == 40001 and Issue.objects.count() == 0
    for not_an_object in (["per", "element"], "element", 5):  # read as {} before: pinned per specification
        refused = api.post(f"/api/v1/models/{model.id}/checks/{check['checkId']}/issues", not_an_object, format="json")
        assert (refused.status_code, refused.json()["code"]) == (400, 40001) and Issue.objects.count() == 0

    by_spec = pin(api, model.id, check["checkId"])
    assert len(by_spec["created"]) == len(failing) and Issue.objects.count() == len(failing)
    walls = next(issue for issue in issues(api, model.id) if issue["title"] == "IDS: Walls have a fire rating")
    fire = next(spec for spec in failing if spec["name"] == "Walls have a fire rating")
    assert selection(walls) == sorted({f["guid"] for f in fire["failures"]}) and len(selection(walls)) == fire["failedElements"] > 1
    assert "Required: Pset_WallCommon.FireRating with a value" in walls["comment"]

    confirmed = pin(api, model.id, check["checkId"], per="element", confirm=True)
    assert len(confirmed["created"]) == elements - sum(1 for spec in failing if not spec["failures"])  # those pinned already
    assert Issue.objects.count() == len(failing) + len(confirmed["created"])
    assert pin(api, model.id, check["checkId"], per="element")["created"] == []  # nothing new: no confirmation needed


def test_the_viewpoint_service_frames_the_union_of_the_boxes():
    from issues_app.services.viewpoints import FRAMED_ELEMENTS, viewpoint_for_elements

    guids = [f"{index:022d}" for index in range(FRAMED_ELEMENTS + 5)]
    boxes = {guid: [index, 0.0, 0.0, index + 1.0, 1.0, 1.0] for index, guid in enumerate(guids)}
    boxes[guids[-1]] = [1e6, 1e6, 1e6, 1e6 + 1, 1e6 + 1, 1e6 + 1]  # beyond the framed ones: does not pull the camera away
    viewpoint = viewpoint_for_elements([*guids, "#12"], boxes, guid="00000000-0000-4000-8000-000000000000")
    assert [c["ifc_guid"] for c in viewpoint["components"]["selection"]] == guids  # all selected, "#12" is no GlobalId
    eye, direction = looked_at(viewpoint)
    assert distance_to_line([FRAMED_ELEMENTS / 2, 0.5, 0.5], eye, direction) < 1e-6
    assert viewpoint_for_elements(guids, {}, guid="00000000-0000-4000-8000-000000000000") is None

