"""Plan files through the API: read, write, versions, diff, errors (a cad project: deliver builds no model)."""

import copy

import pytest

from models_app import project_services
from models_app.models import IfcModel
from plans_app.diff import diff_documents
from plans_app.models import PlanVersion
from plans_app.use_cases.deliver import Built, building_document
from tests.e2e.stack import free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

PLAN = {
    "schema": "plan/1", "title": "Small house", "units": "m",
    "storeys": [{"id": "S0", "name": "Ground floor", "elevation": 0.0, "height": 3.0}],
    "rooms": [{"id": "R101", "name": "Living", "storey": "S0", "use": "living", "area": 24.0, "outline": [[0, 0], [6, 0], [6, 4], [0, 4]]}],
    "requirements": [{"id": "REQ-1", "kind": "area", "target": "R101", "text": "Living >= 20 m2", "value": 20.0, "status": "open"}],
}
SUPPLEMENT = {"schema": "bim_supplement/1", "elementTypes": {"IfcWall": {"FireRating": "F90", "Classification": "EF_25_10"}}}


@pytest.fixture
def project():
    return project_services.project_create(title="Plans", kind="cad")


def url(project, tail):
    return f"/api/v1/projects/{project.id}/{tail}"


def test_read_before_any_write_is_null(api, project):
    for name in ("plan", "bim_supplement", "building"):
        response = api.get(url(project, name))
        assert response.json() == {"code": 0, "message": "ok", "data": None}


def test_put_writes_one_version_per_change_and_reads_back(api, project):
    first = api.put(url(project, "plan"), PLAN, format="json").json()["data"]
    assert first == {"name": "plan", "version": "v1", "changed": True}
    assert api.put(url(project, "plan"), PLAN, format="json").json()["data"] == {"name": "plan", "version": "v1", "changed": False}
    assert api.put(url(project, "bim_supplement"), SUPPLEMENT, format="json").json()["data"]["version"] == "v2"
    read = api.get(url(project, "plan"))
    assert read.json()["data"] == PLAN and read["ETag"] == '"v2"'
    history = api.get(url(project, "plan_history")).json()["data"]
    assert [(v["version"], v["changed"], v["operation"]) for v in history["versions"]] == [("v1", ["plan"], "put"), ("v2", ["bim_supplement"], "put")]
    assert history["current"] == "v2"


def test_if_match_guards_against_a_lost_update(api, project):
    api.put(url(project, "plan"), PLAN, format="json")
    stale = api.put(url(project, "plan"), {**PLAN, "title": "x"}, format="json", HTTP_IF_MATCH='"v0"')
    assert (stale.status_code, stale.json()["code"]) == (409, 40900)
    assert api.put(url(project, "plan"), {**PLAN, "title": "x"}, format="json", HTTP_IF_MATCH='"v1"').json()["data"]["version"] == "v2"


def test_the_diff_of_a_hand_made_pair_is_exact(api, project):
    api.put(url(project, "plan"), PLAN, format="json")
    changed = copy.deepcopy(PLAN)
    changed["rooms"].insert(0, {"id": "R100", "name": "Hall", "storey": "S0", "area": 5.0})
    changed["rooms"][1]["area"] = 26.5
    changed["storeys"][0]["name"] = "Ground"
    del changed["requirements"]
    api.put(url(project, "plan"), changed, format="json")
    diff = api.get(url(project, "plan_history/v1/v2/diff")).json()["data"]
    assert diff["changes"] == [
        {"file": "plan", "path": "$.requirements", "kind": "removed", "old": PLAN["requirements"], "new": None},
        {"file": "plan", "path": "$.rooms[R100]", "kind": "added", "old": None, "new": changed["rooms"][0]},
        {"file": "plan", "path": "$.rooms[R101].area", "kind": "changed", "old": 24.0, "new": 26.5},
        {"file": "plan", "path": "$.storeys[S0].name", "kind": "changed", "old": "Ground floor", "new": "Ground"},
    ]
    assert diff["stats"] == {"added": 1, "removed": 1, "changed": 2}
    assert api.get(url(project, "plan_history/v2/current/diff")).json()["data"]["changes"] == []
    against_nothing = api.get(url(project, "plan_history/v1/v1/diff")).json()["data"]
    assert against_nothing["changes"] == [] and against_nothing["base"] == "v1"


def test_lists_without_ids_compare_by_position():
    assert diff_documents({"a": [1, 2]}, {"a": [1, 3]}) == [{"path": "$.a[1]", "kind": "changed", "old": 2, "new": 3}]


@pytest.mark.parametrize(
    "name, document, path",
    [
        ("plan", {"schema": "plan/1", "rooms": [{"id": "R1", "name": "x"}]}, "$.rooms[0]"),
        ("plan", {"schema": "plan/2"}, "$.schema"),
        ("plan", {"schema": "plan/1", "storeys": [{"id": "S0", "name": "G", "elevation": "low", "height": 3}]}, "$.storeys[0].elevation"),
        ("bim_supplement", {"schema": "bim_supplement/1", "elementTypes": {"Wall": {}}}, "$.elementTypes"),
        ("bim_supplement", {"schema": "bim_supplement/1", "elements": {"w1": {"Colour": "red"}}}, "$.elements.w1"),
        ("plan", [1, 2], "$"),
    ],
)
def test_schema_violations_are_40001_with_the_path_and_write_nothing(api, project, name, document, path):
    response = api.put(url(project, name), document, format="json")
    body = response.json()
    assert (response.status_code, body["code"]) == (400, 40001)
    assert body["data"]["errors"][0]["path"] == path and path in body["message"]
    assert PlanVersion.objects.count() == 0


def test_bad_json_unknown_names_projects_and_versions(api, project):
    assert api.generic("PUT", url(project, "plan"), "{nope", content_type="application/json").json()["code"] == 40001
    assert api.put(url(project, "drawings"), PLAN, format="json").json()["code"] == 40400
    assert api.get("/api/v1/projects/p_0000000000000000/plan").json()["code"] == 40400
    assert api.get("/api/v1/projects/../plan").status_code == 404
    assert api.get(url(project, "plan_history/v9/current/diff")).json()["code"] == 40400
    assert api.get(url(project, "plan_history/latest/current/diff")).json()["code"] == 40001
    assert PlanVersion.objects.count() == 0


def test_a_body_over_5_mb_is_40002(api, project):
    big = {**PLAN, "notes": "x" * (5 * 1024 * 1024 + 10)}
    response = api.put(url(project, "plan"), big, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40002)


def test_deliver_that_cannot_build_writes_nothing(api, project, viewer_config):
    viewer_config(editServiceURL=f"http://127.0.0.1:{free_port()}")  # nothing listens
    api.put(url(project, "plan"), PLAN, format="json")
    response = api.post(url(project, "deliver"), {"plan": PLAN, "bimSupplement": SUPPLEMENT}, format="json")
    assert (response.status_code, response.json()["code"]) == (502, 50200)
    assert PlanVersion.objects.count() == 1 and IfcModel.objects.count() == 0  # no drawing left behind either


def test_the_building_names_every_model_the_delivery_built():
    built = [Built("m_0000000000000001", "dxf", "v2", {"added": 1, "removed": 0, "changed": 4}), Built("m_0000000000000002", "ifc", "v3")]
    building = building_document(PLAN, SUPPLEMENT, plan_version="v5", built=built)
    assert building["model"] == {"modelId": "m_0000000000000002", "version": "v3", "format": "ifc"}
    assert [m["modelId"] for m in building["models"]] == ["m_0000000000000001", "m_0000000000000002"] and building["models"][0]["changes"]["changed"] == 4
    assert building["requirements"] == [{"id": "REQ-1", "status": "met", "evidence": "area 24.0 >= 20.0"}]
    assert building["storeys"][0]["rooms"] == [{"id": "R101", "name": "Living", "area": 24.0, "designKey": "space:R101"}]


def test_deliver_checks_cross_references_and_writes_nothing(api, project):
    broken = copy.deepcopy(PLAN)
    broken["rooms"][0]["storey"] = "S9"
    broken["rooms"].append(dict(broken["rooms"][0]))
    response = api.post(url(project, "deliver"), {"plan": broken, "bimSupplement": SUPPLEMENT}, format="json").json()
    assert response["code"] == 40001
    assert {e["path"] for e in response["data"]["errors"]} == {"$.rooms[R101]", "$.rooms[R101].storey"}
    assert api.post(url(project, "deliver"), {"plan": PLAN}, format="json").json()["code"] == 40001
    assert PlanVersion.objects.count() == 0


def test_deleting_the_project_deletes_its_plan_versions(api, project):
    api.put(url(project, "plan"), PLAN, format="json")
    project_services.project_delete(project.id)
    assert PlanVersion.objects.count() == 0


def test_a_delivery_holds_the_project_lock_so_no_edit_is_staged_meanwhile(project):
    import threading

    from core.errors import Conflict
    from models_app.project_services import project_lock

    outcome = {}

    def edit_meanwhile():
        try:
            with project_lock(project.id, exclusive=False, wait_seconds=0.3):
                outcome["edit"] = "ran"
        except Conflict as exc:
            outcome["edit"] = str(exc.detail)

    with project_lock(project.id, exclusive=True):
        with project_lock(project.id, exclusive=False):  # the delivery's own edits (re-entrant)
            pass
        thread = threading.Thread(target=edit_meanwhile)
        thread.start()
        thread.join()
    assert "busy" in outcome["edit"]
    edit_meanwhile()
    assert outcome["edit"] == "ran"
