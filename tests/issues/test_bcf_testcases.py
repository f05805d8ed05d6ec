"""buildingSMART's official BCF 3.0 test cases (../shared/bcf-testcases): every case imports with its fields, comments
and complete viewpoints; the export validates against the official XSDs; import -> export -> import reproduces every
topic, comment and viewpoint element by element."""

import datetime
import io
import json
import zipfile
from xml.etree import ElementTree

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from issues_app.models import Comment, Issue
from models_app.models import IfcModel
from models_app.storage import model_dir
from tests.issues import bcf_xml

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

CASES = [path.stem for path in bcf_xml.testcases()] or ["(bcf-testcases missing)"]

# what each case is about, written from the files by hand (the generic checks below read the XML independently)
EXPECTED = {
    "Document_reference_internal": {"topics": 1, "comments": 1, "assignedTo": "OtherUser@doe.com", "exceptions": 2, "default_visibility": True, "documents": 1},
    "DueDate": {"topics": 1, "viewpoints": 0, "dueDate": "2021-03-15T11:00:00Z", "assignedTo": "Architect@example.com"},
    "Labels": {"topics": 1, "labels": ["Architects"], "comments": 1},
    "Milestone": {"topics": 1, "stage": "February", "comment": "This topic has a milestone", "modifiedAuthor": "Architect@example.com"},
    "Minimum_information": {"topics": 1, "viewpoints": 0, "comments": 0, "modifiedAt": None, "topicType": "ERROR"},
    "Related_topics_with_both_topics_in_the_same_file": {"topics": 2, "viewpoints": 0, "comments": 1, "relatedTopics": {"Related topic B": ["c69c8879-bd4a-4182-a759-f3c8c5b47c94"]}},
    "Topics_with_different_models_visible": {"topics": 2},
    "User_assignment": {"topics": 1, "assignedTo": "Architect@example.com"},
    "all_components_and_spaces_visible": {"topics": 1, "spaces_visible": True, "exceptions": 0, "field_of_view": 35.98339777135764},
    "all_parts_except_one_visible": {"topics": 1, "default_visibility": False, "exceptions": 36},
    "all_parts_of_curtain_walls_visible": {"topics": 1, "default_visibility": False, "exception_guids": ["2_hQ1Rixj6lgHTra$L72O4"]},
    "component_selection": {"topics": 1, "selection": ["0KkZ20so9BsO1d1hFcfLOl", "1XbKhGD91DvhOpYZbhzGTI", "3D9pjHJ0HCnggyepvsht8s"], "exceptions": 2, "view_to_world_scale": 18.97427487373352},
    "document_reference_external": {"topics": 1, "url": "http://www.buildingsmart-tech.org/specifications/bcf-releases/bcfxml-v1/markup.xsd/at_download/file"},
    "one_part_of_decomposed_object_visible": {"topics": 1, "default_visibility": False, "exception_guids": ["32HeOfyn55zOiSkf6rlfHs"]},
    "orthogonal_camera": {"topics": 1, "view_to_world_scale": 12.079612252278443, "assignedTo": "Architect@example.com"},
    "perspective_camera": {"topics": 1, "field_of_view": 29.39495760413827, "exceptions": 2},
    "single_invisible_wall": {"topics": 1, "default_visibility": True, "exception_guids": ["1E8YkwPMfB$h99jtn_uAjI"]},
    "single_visible_space": {"topics": 1, "default_visibility": False, "exception_guids": ["1bbI761TbBCOoIa5Kt6PXt"], "field_of_view": 56.0},
    "single_visible_wall": {"topics": 1, "default_visibility": False, "exception_guids": ["1XbKhGD91DvhOpYZbhzGTI"], "view_to_world_scale": 9.673289179801941},
}


@pytest.fixture(scope="session")
def architectural_metadata():
    """metaObjects of the test cases' Architectural.ifc, as the conversion writes them (id, name, type)."""
    bcf_xml.require_testcases()
    import ifcopenshell

    ifc = ifcopenshell.open(str(bcf_xml.TESTCASES_DIR / "Architectural.ifc"))
    return {"metaObjects": [{"id": p.GlobalId, "name": p.Name or "", "type": p.is_a()} for p in ifc.by_type("IfcRoot") if hasattr(p, "GlobalId")]}


@pytest.fixture
def make_model(architectural_metadata):
    def make(name="Architectural.ifc"):
        record = IfcModel.objects.create(name=name, status="ready")
        model_dir(record.id).mkdir(parents=True)
        (model_dir(record.id) / "metadata.json").write_text(json.dumps(architectural_metadata))
        return record

    return make


def import_archive(api, model_id, data: bytes):
    response = api.post(f"/api/v1/models/{model_id}/issues/bcf", {"file": SimpleUploadedFile("x.bcfzip", data)}, format="multipart")
    assert response.status_code == 200, response.content[:500]
    return response.json()["data"]


def export(api, model_id) -> bytes:
    response = api.get(f"/api/v1/models/{model_id}/issues.bcfzip")
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def case_bytes(case: str) -> bytes:
    bcf_xml.require_testcases()
    return (bcf_xml.TESTCASES_DIR / f"{case}.bcf").read_bytes()


def _instant(text: str | None) -> str | None:
    if not text:
        return None
    moment = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment.astimezone(datetime.timezone.utc).isoformat()


def _api_instant(text: str | None) -> str | None:
    return _instant(text) if text else None


def _xyz(element) -> dict:
    return {axis.lower(): float(element.findtext(axis)) for axis in "XYZ"}


def _components(element) -> list[dict]:
    result = []
    for component in element.findall("Component") if element is not None else ():
        item = {"ifc_guid": component.get("IfcGuid")}
        for tag, key in (("OriginatingSystem", "originating_system"), ("AuthoringToolId", "authoring_tool_id")):
            if component.findtext(tag):
                item[key] = component.findtext(tag)
        result.append(item)
    return result


def expected_viewpoint(files: dict, folder: str, view_point) -> dict:
    """The API form of one viewpoint, read from the archive with ElementTree."""
    visinfo = ElementTree.fromstring(files[f"{folder}/{view_point.findtext('Viewpoint')}"])
    cameras = {}
    for tag, key, last, last_key in (("PerspectiveCamera", "perspective_camera", "FieldOfView", "field_of_view"), ("OrthogonalCamera", "orthogonal_camera", "ViewToWorldScale", "view_to_world_scale")):
        camera = visinfo.find(tag)
        cameras[key] = None if camera is None else {
            "camera_view_point": _xyz(camera.find("CameraViewPoint")), "camera_direction": _xyz(camera.find("CameraDirection")),
            "camera_up_vector": _xyz(camera.find("CameraUpVector")), last_key: float(camera.findtext(last)), "aspect_ratio": float(camera.findtext("AspectRatio")),
        }
    components = visinfo.find("Components")
    visibility = components.find("Visibility")
    hints = visibility.find("ViewSetupHints")
    return {
        "guid": view_point.get("Guid"), **cameras,
        "lines": [{"start_point": _xyz(line.find("StartPoint")), "end_point": _xyz(line.find("EndPoint"))} for line in visinfo.iter("Line")],
        "clipping_planes": [{"location": _xyz(p.find("Location")), "direction": _xyz(p.find("Direction"))} for p in visinfo.iter("ClippingPlane")],
        "components": {
            "selection": _components(components.find("Selection")),
            "visibility": {
                "default_visibility": visibility.get("DefaultVisibility") == "true",
                "exceptions": _components(visibility.find("Exceptions")),
                "view_setup_hints": {k: hints.get(a) == "true" for k, a in (("spaces_visible", "SpacesVisible"), ("space_boundaries_visible", "SpaceBoundariesVisible"), ("openings_visible", "OpeningsVisible"))},
            },
            "coloring": [{"color": c.get("Color"), "components": _components(c.find("Components"))} for c in components.iter("Color")],
        },
    }


@pytest.mark.parametrize("case", CASES)
def test_every_test_case_imports_with_fields_comments_and_complete_viewpoints(api, make_model, client, case):
    data = case_bytes(case)
    model = make_model()
    report = import_archive(api, model.id, data)
    expected = EXPECTED[case]
    assert report["skipped"] == [] and report["updated"] == [] and report["warnings"] == []  # made for this model
    assert len(report["imported"]) == expected["topics"]
    issues = {i["title"]: i for i in api.get(f"/api/v1/models/{model.id}/issues").json()["data"]}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        files = {name: zf.read(name) for name in zf.namelist() if not name.endswith("/")}
    for name in [n for n in files if n.endswith("/markup.bcf")]:
        folder = name.rsplit("/", 1)[0]
        topic = ElementTree.fromstring(files[name]).find("Topic")
        issue = issues[topic.findtext("Title")]
        assert issue["topicGuid"] == topic.get("Guid")
        assert issue["topicType"] == topic.get("TopicType") and issue["status"] == "open"
        assert issue["comment"] == (topic.findtext("Description") or "")
        assert issue["creationAuthor"] == issue["author"] == topic.findtext("CreationAuthor")
        assert issue["modifiedAuthor"] == (topic.findtext("ModifiedAuthor") or "")
        assert _api_instant(issue["createdAt"]) == _instant(topic.findtext("CreationDate"))
        assert _api_instant(issue["modifiedAt"]) == _instant(topic.findtext("ModifiedDate"))
        assert _api_instant(issue["dueDate"]) == _instant(topic.findtext("DueDate"))
        assert issue["assignedTo"] == (topic.findtext("AssignedTo") or "") and issue["stage"] == (topic.findtext("Stage") or "")
        assert issue["priority"] == (topic.findtext("Priority") or "")
        assert issue["labels"] == [label.text for label in topic.iter("Label")]
        assert issue["referenceLinks"] == [link.text for link in topic.iter("ReferenceLink")]
        assert issue["relatedTopics"] == [r.get("Guid") for r in topic.iter("RelatedTopic")]
        assert [(r["guid"], r["documentGuid"], r["url"], r["description"]) for r in issue["documentReferences"]] == [
            (r.get("Guid"), r.findtext("DocumentGuid"), r.findtext("Url"), r.findtext("Description")) for r in topic.iter("DocumentReference")
        ]
        view_points = list(topic.iter("ViewPoint"))
        assert [{k: v for k, v in vp.items() if k not in ("bitmaps", "snapshot")} for vp in issue["viewpoints"]] == [expected_viewpoint(files, folder, vp) for vp in view_points]
        for viewpoint, view_point in zip(issue["viewpoints"], view_points):
            served = client.get(viewpoint["snapshot"]["snapshot_url"])
            assert served.status_code == 200 and served["Content-Type"] == "image/png"
            assert b"".join(served.streaming_content) == files[f"{folder}/{view_point.findtext('Snapshot')}"]
        if view_points:
            assert issue["screenshot"] == "issues/" + issue["viewpoints"][0]["snapshot"]["snapshot_url"].rsplit("/", 1)[1]
            first = issue["viewpoints"][0]
            camera = first["perspective_camera"] or first["orthogonal_camera"]
            eye, direction = camera["camera_view_point"], camera["camera_direction"]
            assert issue["camera"]["eye"] == [eye[a] for a in "xyz"]
            assert issue["camera"]["look"] == [eye[a] + direction[a] for a in "xyz"]
        comments = api.get(f"/api/v1/models/{model.id}/issues/{issue['id']}/comments").json()["data"]
        assert [(c["id"], c["author"], c["text"], c["viewpointGuid"], _api_instant(c["date"])) for c in comments] == [
            (c.get("Guid"), c.findtext("Author"), c.findtext("Comment") or "", c.find("Viewpoint").get("Guid") if c.find("Viewpoint") is not None else None, _instant(c.findtext("Date")))
            for c in topic.iter("Comment") if c.get("Guid")
        ]
    # the hand-written expectations: the generic checks above compared something
    everything = list(issues.values())
    viewpoints = [vp for i in everything for vp in i["viewpoints"]]
    assert len(viewpoints) == expected.get("viewpoints", expected["topics"])
    assert Comment.objects.filter(issue__model=model).count() == expected.get("comments", Comment.objects.filter(issue__model=model).count())
    only = everything[0]
    for key in ("assignedTo", "dueDate", "stage", "comment", "modifiedAuthor", "modifiedAt", "topicType", "labels"):
        if key in expected:
            assert only[key] == expected[key], key
    if "relatedTopics" in expected:
        for title, related in expected["relatedTopics"].items():
            assert issues[title]["relatedTopics"] == related
    if "url" in expected:
        assert only["documentReferences"][0]["url"] == expected["url"]
    if "documents" in expected:
        (reference,) = only["documentReferences"]
        assert reference["filename"] == "ThisIsADocument.txt"
        assert (model_dir(model.id) / "issues" / "documents" / reference["documentGuid"]).is_file()
    if viewpoints:
        first = viewpoints[0]
        visibility = first["components"]["visibility"]
        if "default_visibility" in expected:
            assert visibility["default_visibility"] is expected["default_visibility"]
        if "exceptions" in expected:
            assert len(visibility["exceptions"]) == expected["exceptions"]
        if "exception_guids" in expected:
            assert [c["ifc_guid"] for c in visibility["exceptions"]] == expected["exception_guids"]
        if "selection" in expected:
            assert [c["ifc_guid"] for c in first["components"]["selection"]] == expected["selection"]
            issue = Issue.objects.get(model=model)
            assert issue.entity_id == expected["selection"][0] and issue.entity_type.startswith("Ifc") and issue.entity_name
        if "spaces_visible" in expected:
            assert visibility["view_setup_hints"]["spaces_visible"] is expected["spaces_visible"]
        if "field_of_view" in expected:
            assert first["perspective_camera"]["field_of_view"] == expected["field_of_view"] and first["orthogonal_camera"] is None
        if "view_to_world_scale" in expected:
            assert first["orthogonal_camera"]["view_to_world_scale"] == expected["view_to_world_scale"] and first["perspective_camera"] is None


@pytest.mark.parametrize("case", CASES)
def test_export_of_every_test_case_is_valid_bcf_3_and_loses_nothing(api, make_model, case):
    original = case_bytes(case)
    first, second = make_model(), make_model("copy.ifc")
    import_archive(api, first.id, original)
    exported = export(api, first.id)
    assert bcf_xml.schema_errors(exported) == {}
    expected = bcf_xml.topics(original)
    assert bcf_xml.topics(exported) == expected
    # into another model and out again: the same topics, comments and viewpoints
    report = import_archive(api, second.id, exported)
    assert len(report["imported"]) == len(expected["topics"]) and report["skipped"] == []
    again = export(api, second.id)
    assert bcf_xml.schema_errors(again) == {}
    assert bcf_xml.topics(again) == expected


def test_an_archive_made_for_another_model_imports_with_a_warning(api, make_model):
    """Its topics become issues all the same, but the report says that no element its viewpoints refer to is in the
    model (their views would be blank), archive-wide and on each topic with components."""
    other = make_model("other.ifc")
    (model_dir(other.id) / "metadata.json").write_text(json.dumps({"metaObjects": [{"id": "0M6o4b9Lr1QxIuVtPLWbpI", "name": "Wall", "type": "IfcWall"}]}))
    report = import_archive(api, other.id, case_bytes("single_visible_wall"))
    assert [entry["title"] for entry in report["imported"]] == ["Single visible wall"]
    assert report["warnings"] == ["none of the 1 element(s) the archive's viewpoints refer to is in model other.ifc: was it made for another model?"]
    assert report["imported"][0]["notes"] == ["none of the 1 element(s) its viewpoints refer to is in this model: they show no element"]
    # a topic without viewpoints is not concerned; the same archive for the model it was made for: no warning
    assert import_archive(api, other.id, case_bytes("DueDate"))["warnings"] == []
    matching = import_archive(api, make_model().id, case_bytes("single_visible_wall"))
    assert matching["warnings"] == [] and matching["imported"][0]["notes"] == []


def test_the_official_files_themselves_are_checked_by_the_schema_validation():
    """The validation can fail: a markup with an empty Description, as the export used to write, is refused."""
    data = case_bytes("Minimum_information")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    name = next(n for n in entries if n.endswith("markup.bcf"))
    assert bcf_xml.schema_errors(data) == {}
    entries[name] = entries[name].replace(b"</CreationAuthor>", b"</CreationAuthor><Description></Description>")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for entry, content in entries.items():
            zf.writestr(entry, content)
    assert list(bcf_xml.schema_errors(buffer.getvalue())) == [name]


def test_the_canonical_comparison_sees_a_changed_exception():
    data = case_bytes("single_visible_wall")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    name = next(n for n in entries if n.endswith(".bcfv"))
    entries[name] = entries[name].replace(b"1XbKhGD91DvhOpYZbhzGTI", b"1XbKhGD91DvhOpYZbhzGTJ")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for entry, content in entries.items():
            zf.writestr(entry, content)
    assert bcf_xml.topics(buffer.getvalue()) != bcf_xml.topics(data)


def test_all_test_cases_in_one_model_export_as_one_valid_archive(api, make_model):
    model = make_model()
    cases = bcf_xml.testcases()
    if not cases:
        bcf_xml.require_testcases()
    for path in cases:
        import_archive(api, model.id, path.read_bytes())
    exported = export(api, model.id)
    assert bcf_xml.schema_errors(exported) == {}
    topics = bcf_xml.topics(exported)["topics"]
    assert len(topics) == sum(len(bcf_xml.topics(p)["topics"]) for p in cases) == Issue.objects.filter(model=model).count() == 21
    for path in cases:
        for guid, topic in bcf_xml.topics(path)["topics"].items():
            assert topic == topics[guid], (path.name, guid)
