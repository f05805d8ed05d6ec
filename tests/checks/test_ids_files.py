"""IDS files of a project: PUT/GET/DELETE /api/v1/projects/{projectId}/ids/{name}, GET .../ids, and bad inputs."""

import pytest

from checks_app.models import IdsDocument, IdsFile
from tests.checks.conftest import EXAMPLE_IDS, fire_ids

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


def test_put_list_get_replace_delete(api, project, put_ids):
    created = put_ids("fire.ids", fire_ids())
    assert created.status_code == 200, created.content
    data = created.json()["data"]
    assert (data["name"], data["title"], data["specifications"], data["created"]) == ("fire.ids", "Fire ratings", 1, True)

    assert put_ids("basics.ids", EXAMPLE_IDS.read_bytes()).json()["data"]["specifications"] == 13
    listing = api.get(f"/api/v1/projects/{project.id}/ids").json()
    assert listing["code"] == 0 and [item["name"] for item in listing["data"]] == ["basics.ids", "fire.ids"]

    one = api.get(f"/api/v1/projects/{project.id}/ids/fire.ids").json()["data"]
    assert one["content"] == fire_ids().decode() and one["sha256"] == data["sha256"]

    replaced = put_ids("fire.ids", fire_ids(title="Fire ratings v2")).json()["data"]
    assert (replaced["created"], replaced["title"]) == (False, "Fire ratings v2")
    assert IdsDocument.objects.count() == 2  # the replaced content is not kept when nothing uses it

    assert api.delete(f"/api/v1/projects/{project.id}/ids/fire.ids").json() == {"code": 0, "message": "ok", "data": None}
    assert api.get(f"/api/v1/projects/{project.id}/ids/fire.ids").json()["code"] == 40400
    assert IdsDocument.objects.count() == 1


def test_the_plan_file_route_does_not_take_the_ids_routes(api, project):
    response = api.get(f"/api/v1/projects/{project.id}/ids")
    assert response.status_code == 200 and response.json()["data"] == []


def test_invalid_ids_names_the_line_and_the_rule_and_changes_nothing(api, project, put_ids):
    bad = fire_ids().replace(b'minOccurs="0"', b'minOccurs="none"')
    response = put_ids("fire.ids", bad)
    body = response.json()
    assert response.status_code == 400 and body["code"] == 40001
    assert "line 6" in body["message"] and "XSD rule" in body["message"] and "minOccurs" in body["message"], body["message"]

    wrong_order = fire_ids().replace(b"<info><title>Fire ratings</title></info>", b"<info><author>x@y.z</author><title>T</title></info>")
    message = put_ids("fire.ids", wrong_order).json()["message"]
    assert "line 3" in message and "title" in message, message
    assert not IdsFile.objects.exists() and not IdsDocument.objects.exists()


BAD_UPLOADS = [
    (b"", "empty"),
    (b"this is not xml", "not well-formed XML: line 1"),
    (b"<ids xmlns='http://standards.buildingsmart.org/IDS'><info>", "not well-formed XML"),
    (b"<plan/>", "root element"),
    (b'<?xml version="1.0"?><!DOCTYPE ids [<!ENTITY lol "lol">]><ids xmlns="http://standards.buildingsmart.org/IDS"/>', "DTD"),
]


@pytest.mark.parametrize("body, reason", BAD_UPLOADS)
def test_not_an_ids_file(put_ids, body, reason):
    response = put_ids("x.ids", body)
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert reason in response.json()["message"]
    assert not IdsFile.objects.exists()


def test_too_large(put_ids):
    padding = b"<!--" + b"x" * (5 * 1024 * 1024) + b"-->"
    response = put_ids("big.ids", fire_ids().replace(b"<specifications>", padding + b"<specifications>"))
    assert (response.status_code, response.json()["code"]) == (400, 40002)
    assert "5 MB" in response.json()["message"]
    assert not IdsFile.objects.exists()


@pytest.mark.parametrize("name", ["..", ".hidden", "-x.ids", "a b.ids", "a..ids", "x" * 101, "fire.ids%00", "a%2Fb.ids", "%2e%2e"])
def test_names_outside_the_pattern(api, project, put_ids, name):
    response = put_ids(name, fire_ids())
    assert response.status_code in (400, 404), response.content
    assert response.json()["code"] in (40001, 40400)
    assert api.get(f"/api/v1/projects/{project.id}/ids/{name}").json()["code"] == 40400
    assert not IdsFile.objects.exists()


@pytest.mark.parametrize("project_id", ["p_0000000000000000", "p_x", "../p", "%2e%2e"])
def test_unknown_or_malformed_project(api, put_ids, project_id):
    assert put_ids("fire.ids", fire_ids(), project_id=project_id).json()["code"] == 40400
    assert api.get(f"/api/v1/projects/{project_id}/ids").json()["code"] == 40400
    assert api.delete(f"/api/v1/projects/{project_id}/ids/fire.ids").json()["code"] == 40400


def test_unknown_name(api, project):
    assert api.get(f"/api/v1/projects/{project.id}/ids/nope.ids").json()["code"] == 40400
    assert api.delete(f"/api/v1/projects/{project.id}/ids/nope.ids").json()["code"] == 40400


def test_the_routes_need_the_token(api, project, viewer_config):
    viewer_config(apiToken="secret")
    assert api.get(f"/api/v1/projects/{project.id}/ids").status_code == 401
    assert api.generic("PUT", f"/api/v1/projects/{project.id}/ids/fire.ids", fire_ids(), content_type="application/xml").status_code == 401


def test_a_valid_ids_is_told_valid_by_libxml2_and_an_invalid_one_still_names_its_rule(monkeypatch):
    """A valid upload is validated by libxml2 alone (~0.2 ms): neither ifctester's reading through xmlschema (~13 ms)
    nor the validating pass that finds a violation's line and rule; an invalid one goes through both."""
    from checks_app.engine import ids_engine, ids_schema

    readings, passes = [], []
    load_ids, first_violation = ids_engine.load_ids, ids_schema._first_violation
    monkeypatch.setattr(ids_engine, "load_ids", lambda text: readings.append(text) or load_ids(text))
    monkeypatch.setattr(ids_schema, "_first_violation", lambda root: passes.append(root) or first_violation(root))
    info = ids_schema.validate_ids(EXAMPLE_IDS.read_bytes())
    assert (info.specifications, readings, passes) == (13, [], [])
    assert info.title and info.title == ids_schema.validated_by_ifctester(EXAMPLE_IDS.read_bytes()).title
    readings.clear()
    with pytest.raises(ids_schema.IdsInvalid, match=r"^line 6: .*minOccurs.*XSD rule"):
        ids_schema.validate_ids(fire_ids().replace(b'minOccurs="0"', b'minOccurs="none"'))
    assert len(readings) == 1 and len(passes) == 1


def _outcome(validate, data: bytes) -> tuple:
    from checks_app.engine.ids_schema import IdsInvalid

    try:
        return ("kept", validate(data))
    except IdsInvalid as exc:
        return ("refused", str(exc))


def test_libxml2_accepts_and_refuses_what_ifctester_s_reading_does_on_the_official_cases():
    """Every IDS of the official test cases (287 pairs and the 27 invalid- files), this project's examples and the
    bad uploads of these tests: the same files kept (same text, title and number of specifications) and refused (same
    message) as by xmlschema's validation and ifctester's reading alone."""
    from checks_app.engine.ids_schema import validate_ids, validated_by_ifctester
    from tests.checks.test_conformance import CASES_DIR

    if not CASES_DIR.is_dir():
        pytest.skip(f"{CASES_DIR} not available")
    files = sorted(CASES_DIR.glob("*/*.ids")) + sorted(EXAMPLE_IDS.parent.glob("*.ids"))
    uploads = [path.read_bytes() for path in files] + [body for body, _ in BAD_UPLOADS] + [
        fire_ids().replace(b'minOccurs="0"', b'minOccurs="none"'), fire_ids().replace(b"<title>", b"<title> spaced <!-- a comment --> title ")]
    assert len(files) >= 314
    kept = 0
    for data in uploads:
        expected = _outcome(validated_by_ifctester, data)
        assert _outcome(validate_ids, data) == expected, data[:300]
        kept += expected[0] == "kept"
    assert 280 < kept < len(uploads)  # both ways are tried


def test_the_gateway_builds_the_ids_validator_as_it_starts():
    """ifctester and the validator are loaded on first use (not by every process of the gateway), and by the gateway
    as it starts, so that its first upload does not wait for them."""
    from checks_app.engine import ids_schema
    from models_app.signals import gateway_starting

    ids_schema._libxml2_schema.cache_clear()
    gateway_starting.send(sender=None)
    assert ids_schema._libxml2_schema.cache_info().currsize == 1
