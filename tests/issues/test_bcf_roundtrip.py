"""A hand-written BCF 3.0 archive with everything the official test cases leave out (colours, clipping planes, lines,
bitmaps, several viewpoints, edited comments, every topic field): import, export against the XSDs, lossless round
trips, and re-imports that update known topics (the newer side wins) and say what changed."""

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from issues_app.models import Comment, Issue
from models_app.models import IfcModel
from models_app.storage import model_dir
from tests.issues import bcf_xml
from tests.issues.conftest import png_bytes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

TOPIC = "3f2a6a39-6c3a-4b8e-9d59-0a1b2c3d4e5f"
VIEW_A = "a1a1a1a1-0000-4000-8000-000000000001"
VIEW_B = "b2b2b2b2-0000-4000-8000-000000000002"
WALL, SLAB, DOOR = "2O2Fr$t4X7Zf8NOew3FLOH", "3vB2YO$MX4xv5uCqZZG05x", "1hOSvn6df7F8_7GcBWlRGQ"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 4
BITMAP_PNG = png_bytes(3, 5)
SNAPSHOT_B = png_bytes(6, 2)


def xyz(tag, x, y, z):
    return f"<{tag}><X>{x}</X><Y>{y}</Y><Z>{z}</Z></{tag}>"


MARKUP = f"""<?xml version="1.0" encoding="UTF-8"?>
<Markup>
  <Header><Files><File IsExternal="true" IfcProject="0YvctVUKr0kugbFTf53O9L"><Filename>house.ifc</Filename><Date>2026-01-01T08:00:00Z</Date><Reference>https://example.com/house.ifc</Reference></File></Files></Header>
  <Topic Guid="{TOPIC}" TopicType="Clash" TopicStatus="Closed">
    <ReferenceLinks><ReferenceLink>https://example.com/tickets/7</ReferenceLink></ReferenceLinks>
    <Title>Door hits the slab</Title>
    <Priority>High</Priority>
    <Labels><Label>Structure</Label><Label>Doors</Label></Labels>
    <CreationDate>2026-01-02T09:00:00Z</CreationDate>
    <CreationAuthor>anna@example.com</CreationAuthor>
    <ModifiedDate>2026-01-03T10:00:00.250+01:00</ModifiedDate>
    <ModifiedAuthor>bob@example.com</ModifiedAuthor>
    <DueDate>2026-02-01T12:00:00Z</DueDate>
    <AssignedTo>carol@example.com</AssignedTo>
    <Stage>Design</Stage>
    <Description>The door leaf collides with the slab edge.</Description>
    <DocumentReferences><DocumentReference Guid="d0c0d0c0-1111-4222-8333-444444444444"><Url>https://example.com/spec.pdf</Url><Description>Spec</Description></DocumentReference></DocumentReferences>
    <RelatedTopics><RelatedTopic Guid="0a9b7c3e-1111-4222-8333-444444444444"/></RelatedTopics>
    <Comments>
      <Comment Guid="c0000000-0000-4000-8000-000000000001"><Date>2026-01-02T09:05:00Z</Date><Author>anna@example.com</Author><Comment>See the red door.</Comment><Viewpoint Guid="{VIEW_A}"/></Comment>
      <Comment Guid="c0000000-0000-4000-8000-000000000002"><Date>2026-01-02T11:00:00Z</Date><Author>bob@example.com</Author><Comment>Plan view attached.</Comment><Viewpoint Guid="{VIEW_B}"/><ModifiedDate>2026-01-03T08:00:00Z</ModifiedDate><ModifiedAuthor>bob@example.com</ModifiedAuthor></Comment>
      <Comment Guid="c0000000-0000-4000-8000-000000000003"><Date>2026-01-03T10:00:00Z</Date><Author>carol@example.com</Author><Comment>Fixed in rev B.</Comment></Comment>
    </Comments>
    <Viewpoints>
      <ViewPoint Guid="{VIEW_A}"><Viewpoint>a.bcfv</Viewpoint><Snapshot>a.jpg</Snapshot></ViewPoint>
      <ViewPoint Guid="{VIEW_B}"><Viewpoint>b.bcfv</Viewpoint><Snapshot>b.png</Snapshot></ViewPoint>
    </Viewpoints>
  </Topic>
</Markup>"""

VISINFO_A = f"""<?xml version="1.0" encoding="UTF-8"?>
<VisualizationInfo Guid="{VIEW_A}">
  <Components>
    <Selection><Component IfcGuid="{DOOR}"><OriginatingSystem>xeokit.io</OriginatingSystem><AuthoringToolId>door-17</AuthoringToolId></Component><Component IfcGuid="{SLAB}"/></Selection>
    <Visibility DefaultVisibility="false"><ViewSetupHints SpacesVisible="false" SpaceBoundariesVisible="true" OpeningsVisible="true"/>
      <Exceptions><Component IfcGuid="{DOOR}"/><Component IfcGuid="{SLAB}"/><Component IfcGuid="{WALL}"/></Exceptions></Visibility>
    <Coloring>
      <Color Color="FF0000"><Components><Component IfcGuid="{DOOR}"/></Components></Color>
      <Color Color="8000ff00"><Components><Component IfcGuid="{SLAB}"/><Component IfcGuid="{WALL}"/></Components></Color>
    </Coloring>
  </Components>
  <PerspectiveCamera>{xyz("CameraViewPoint", 12.5, -3.25, 7)}{xyz("CameraDirection", -0.6, 0.3, -0.2)}{xyz("CameraUpVector", 0, 0, 1)}<FieldOfView>47.5</FieldOfView><AspectRatio>1.6</AspectRatio></PerspectiveCamera>
  <Lines><Line>{xyz("StartPoint", 0, 0, 0)}{xyz("EndPoint", 1, 2, 3)}</Line><Line>{xyz("StartPoint", -1, -1, 0.5)}{xyz("EndPoint", 4, 4, 0.5)}</Line></Lines>
  <ClippingPlanes><ClippingPlane>{xyz("Location", 0, 0, 2.7)}{xyz("Direction", 0, 0, 1)}</ClippingPlane><ClippingPlane>{xyz("Location", 5, 0, 0)}{xyz("Direction", -1, 0, 0)}</ClippingPlane></ClippingPlanes>
  <Bitmaps>
    <Bitmap><Format>png</Format><Reference>marker.png</Reference>{xyz("Location", 1, 1, 1)}{xyz("Normal", 0, -1, 0)}{xyz("Up", 0, 0, 1)}<Height>0.5</Height></Bitmap>
    <Bitmap><Format>jpg</Format><Reference>photo.jpg</Reference>{xyz("Location", 2, 1, 1)}{xyz("Normal", 0, -1, 0)}{xyz("Up", 0, 0, 1)}<Height>1.25</Height></Bitmap>
  </Bitmaps>
</VisualizationInfo>"""

VISINFO_B = f"""<?xml version="1.0" encoding="UTF-8"?>
<VisualizationInfo Guid="{VIEW_B}">
  <Components><Visibility DefaultVisibility="true"><Exceptions><Component IfcGuid="{WALL}"/></Exceptions></Visibility></Components>
  <OrthogonalCamera>{xyz("CameraViewPoint", 5, 5, 30)}{xyz("CameraDirection", 0, 0, -1)}{xyz("CameraUpVector", 0, 1, 0)}<ViewToWorldScale>22.5</ViewToWorldScale><AspectRatio>1.25</AspectRatio></OrthogonalCamera>
</VisualizationInfo>"""


def zip_of(entries: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def full_archive(markup: str = MARKUP, visinfo_a: str = VISINFO_A) -> bytes:
    return zip_of({
        "bcf.version": '<?xml version="1.0"?><Version VersionId="3.0"/>',
        f"{TOPIC}/markup.bcf": markup, f"{TOPIC}/a.bcfv": visinfo_a, f"{TOPIC}/b.bcfv": VISINFO_B,
        f"{TOPIC}/a.jpg": JPEG, f"{TOPIC}/b.png": SNAPSHOT_B, f"{TOPIC}/marker.png": BITMAP_PNG, f"{TOPIC}/photo.jpg": JPEG[:-7],
    })


def rewritten(archive: bytes, changes: dict) -> bytes:
    """The archive with some entries replaced (bytes), edited (a function of the old text) or removed (None)."""
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    for name, change in changes.items():
        name = next(n for n in entries if n.endswith(name))
        if change is None:
            del entries[name]
        else:
            entries[name] = change(entries[name].decode()).encode() if callable(change) else change
    return zip_of(entries)


@pytest.fixture
def make_model():
    def make(name="house.ifc"):
        record = IfcModel.objects.create(name=name, status="ready")
        model_dir(record.id).mkdir(parents=True)
        (model_dir(record.id) / "metadata.json").write_text(json.dumps({"metaObjects": [{"id": DOOR, "name": "Door D1", "type": "IfcDoor"}]}))
        return record

    return make


def import_archive(api, model_id, data: bytes) -> dict:
    response = api.post(f"/api/v1/models/{model_id}/issues/bcf", {"file": SimpleUploadedFile("x.bcfzip", data)}, format="multipart")
    assert response.status_code == 200, response.content[:500]
    return response.json()["data"]


def export(api, model_id) -> bytes:
    return b"".join(api.get(f"/api/v1/models/{model_id}/issues.bcfzip").streaming_content)


def served(client, url) -> bytes:
    response = client.get(url)
    assert response.status_code == 200, url
    return b"".join(response.streaming_content)


def test_the_hand_written_archive_itself_is_valid_bcf_3():
    bcf_xml.require_testcases()
    assert bcf_xml.schema_errors(full_archive()) == {}


def test_every_part_of_every_viewpoint_and_field_is_imported(api, client, make_model):
    model = make_model()
    report = import_archive(api, model.id, full_archive())
    assert [e["topic"] for e in report["imported"]] == [TOPIC] and report["imported"][0]["notes"] == []
    (issue,) = api.get(f"/api/v1/models/{model.id}/issues").json()["data"]
    assert (issue["status"], issue["topicType"], issue["priority"], issue["labels"]) == ("resolved", "Clash", "High", ["Structure", "Doors"])
    assert (issue["assignedTo"], issue["stage"], issue["dueDate"]) == ("carol@example.com", "Design", "2026-02-01T12:00:00Z")
    assert (issue["modifiedAuthor"], issue["modifiedAt"], issue["createdAt"]) == ("bob@example.com", "2026-01-03T09:00:00.250000Z", "2026-01-02T09:00:00Z")
    assert issue["referenceLinks"] == ["https://example.com/tickets/7"] and issue["relatedTopics"] == ["0a9b7c3e-1111-4222-8333-444444444444"]
    assert issue["documentReferences"] == [{"guid": "d0c0d0c0-1111-4222-8333-444444444444", "url": "https://example.com/spec.pdf", "documentGuid": None,
                                            "description": "Spec", "filename": None, "documentDescription": None}]
    assert (issue["entityId"], issue["entityName"], issue["entityType"]) == (DOOR, "Door D1", "IfcDoor")  # the first selected component
    assert issue["screenshot"] == ""  # the first viewpoint's snapshot is a JPEG
    first, second = issue["viewpoints"]
    assert first["guid"] == VIEW_A and second["guid"] == VIEW_B
    assert first["perspective_camera"] == {
        "camera_view_point": {"x": 12.5, "y": -3.25, "z": 7.0}, "camera_direction": {"x": -0.6, "y": 0.3, "z": -0.2},
        "camera_up_vector": {"x": 0.0, "y": 0.0, "z": 1.0}, "field_of_view": 47.5, "aspect_ratio": 1.6,
    }
    assert first["orthogonal_camera"] is None and second["perspective_camera"] is None
    assert second["orthogonal_camera"]["view_to_world_scale"] == 22.5 and second["orthogonal_camera"]["aspect_ratio"] == 1.25
    assert first["components"] == {
        "selection": [{"ifc_guid": DOOR, "originating_system": "xeokit.io", "authoring_tool_id": "door-17"}, {"ifc_guid": SLAB}],
        "visibility": {"default_visibility": False, "exceptions": [{"ifc_guid": DOOR}, {"ifc_guid": SLAB}, {"ifc_guid": WALL}],
                       "view_setup_hints": {"spaces_visible": False, "space_boundaries_visible": True, "openings_visible": True}},
        "coloring": [{"color": "FF0000", "components": [{"ifc_guid": DOOR}]}, {"color": "8000ff00", "components": [{"ifc_guid": SLAB}, {"ifc_guid": WALL}]}],
    }
    assert second["components"] == {"selection": [], "visibility": {"default_visibility": True, "exceptions": [{"ifc_guid": WALL}], "view_setup_hints": None}, "coloring": []}
    assert first["lines"] == [
        {"start_point": {"x": 0.0, "y": 0.0, "z": 0.0}, "end_point": {"x": 1.0, "y": 2.0, "z": 3.0}},
        {"start_point": {"x": -1.0, "y": -1.0, "z": 0.5}, "end_point": {"x": 4.0, "y": 4.0, "z": 0.5}},
    ]
    assert first["clipping_planes"] == [
        {"location": {"x": 0.0, "y": 0.0, "z": 2.7}, "direction": {"x": 0.0, "y": 0.0, "z": 1.0}},
        {"location": {"x": 5.0, "y": 0.0, "z": 0.0}, "direction": {"x": -1.0, "y": 0.0, "z": 0.0}},
    ]
    assert [(b["bitmap_type"], b["height"], b["location"]) for b in first["bitmaps"]] == [("png", 0.5, {"x": 1.0, "y": 1.0, "z": 1.0}), ("jpg", 1.25, {"x": 2.0, "y": 1.0, "z": 1.0})]
    assert served(client, first["bitmaps"][0]["bitmap_url"]) == BITMAP_PNG and served(client, first["bitmaps"][1]["bitmap_url"]) == JPEG[:-7]
    assert first["snapshot"]["snapshot_type"] == "jpg" and served(client, first["snapshot"]["snapshot_url"]) == JPEG
    assert client.get(first["snapshot"]["snapshot_url"])["Content-Type"] == "image/jpeg"
    assert served(client, second["snapshot"]["snapshot_url"]) == SNAPSHOT_B
    comments = api.get(f"/api/v1/models/{model.id}/issues/{issue['id']}/comments").json()["data"]
    assert [(c["id"][-1], c["author"], c["text"], c["viewpointGuid"], c["modifiedDate"], c["modifiedAuthor"]) for c in comments] == [
        ("1", "anna@example.com", "See the red door.", VIEW_A, None, ""),
        ("2", "bob@example.com", "Plan view attached.", VIEW_B, "2026-01-03T08:00:00Z", "bob@example.com"),
        ("3", "carol@example.com", "Fixed in rev B.", None, None, ""),
    ]


def test_export_is_valid_and_round_trips_element_by_element(api, make_model):
    bcf_xml.require_testcases()
    original = full_archive()
    first, second = make_model(), make_model("copy.ifc")
    import_archive(api, first.id, original)
    exported = export(api, first.id)
    assert bcf_xml.schema_errors(exported) == {}
    assert bcf_xml.topics(exported) == bcf_xml.topics(original)
    with zipfile.ZipFile(io.BytesIO(exported)) as zf:
        markup = zf.read(f"{TOPIC}/markup.bcf").decode()
    assert 'TopicStatus="Closed"' in markup and "provenance:" not in markup  # the imported status; no label for the default provenance
    import_archive(api, second.id, exported)
    assert bcf_xml.topics(export(api, second.id)) == bcf_xml.topics(original)


def test_a_changed_status_is_exported_with_the_project_mapping(api, make_model):
    model = make_model()
    import_archive(api, model.id, full_archive())
    issue = Issue.objects.get(model=model)
    api.patch(f"/api/v1/models/{model.id}/issues/{issue.id}", {"status": "checking", "modifiedAuthor": "dave"}, format="json")
    with zipfile.ZipFile(io.BytesIO(export(api, model.id))) as zf:
        markup = zf.read(f"{TOPIC}/markup.bcf").decode()
    assert 'TopicStatus="In Progress"' in markup and "<ModifiedAuthor>dave</ModifiedAuthor>" in markup


def newer(text: str) -> str:
    return text.replace("<ModifiedDate>2026-01-03T10:00:00.250+01:00</ModifiedDate>", "<ModifiedDate>2026-03-01T10:00:00Z</ModifiedDate>")


def test_a_newer_topic_updates_its_issue_and_the_answer_says_what_changed(api, make_model):
    model = make_model()
    import_archive(api, model.id, full_archive())
    issue = Issue.objects.get(model=model)
    old_snapshot = model_dir(model.id) / "issues" / issue.viewpoints[1]["snapshot"]["snapshot_url"].rsplit("/", 1)[1]
    edited = rewritten(full_archive(), {
        "markup.bcf": lambda t: newer(t).replace("Door hits the slab", "Door hits the slab edge").replace("<Priority>High</Priority>", "<Priority>Low</Priority>")
        .replace("Fixed in rev B.", "Fixed in rev C.").replace('<Comment Guid="c0000000-0000-4000-8000-000000000001">', '<Comment Guid="c0000000-0000-4000-8000-000000000009">'),
        "a.bcfv": lambda t: t.replace(f'<Component IfcGuid="{WALL}"/></Exceptions>', "</Exceptions>"),
        "b.png": png_bytes(9, 9),
    })
    report = import_archive(api, model.id, edited)
    assert report["imported"] == [] and report["skipped"] == []
    (entry,) = report["updated"]
    assert (entry["topic"], entry["issueId"]) == (TOPIC, issue.id)
    assert sorted(entry["changes"]) == sorted([
        "title", "priority", "modifiedAt", "viewpoints", "comment c0000000-0000-4000-8000-000000000009 added",
        "comment c0000000-0000-4000-8000-000000000003 changed", "comment c0000000-0000-4000-8000-000000000001 removed",
    ])
    issue.refresh_from_db()
    assert (issue.title, issue.priority) == ("Door hits the slab edge", "Low")
    assert [c.guid[-1] for c in issue.comments.all()] == ["9", "2", "3"] and issue.comments.get(guid__endswith="3").text == "Fixed in rev C."
    assert len(issue.viewpoints[0]["components"]["visibility"]["exceptions"]) == 2
    assert not old_snapshot.exists()  # the replaced snapshot file is gone
    assert bcf_xml.topics(export(api, model.id)) == bcf_xml.topics(edited)
    # the same archive again changes nothing
    again = import_archive(api, model.id, edited)
    assert again["updated"] == [] and again["skipped"] == [{"topic": TOPIC, "title": "Door hits the slab edge", "reason": f"already imported as issue {issue.id}"}]


def test_an_unchanged_topic_keeps_its_issue_and_image_urls(api, make_model):
    model = make_model()
    import_archive(api, model.id, full_archive())
    before = Issue.objects.get(model=model).viewpoints
    report = import_archive(api, model.id, rewritten(full_archive(), {"markup.bcf": lambda t: newer(t).replace("Design", "Build")}))
    assert report["updated"][0]["changes"] == ["stage", "modifiedAt"]
    assert Issue.objects.get(model=model).viewpoints == before


def test_an_older_topic_or_a_later_local_edit_is_not_overwritten(api, make_model):
    model = make_model()
    import_archive(api, model.id, rewritten(full_archive(), {"markup.bcf": newer}))
    issue = Issue.objects.get(model=model)
    older = import_archive(api, model.id, full_archive())
    assert older["updated"] == [] and older["skipped"][0]["reason"].startswith(f"issue {issue.id} changed after the topic")
    assert Issue.objects.get(pk=issue.id).modified_at.isoformat() == "2026-03-01T10:00:00+00:00"

    newest = rewritten(full_archive(), {"markup.bcf": lambda t: newer(t).replace("Design", "Build")})
    comment = issue.comments.first()
    assert api.delete(f"/api/v1/models/{model.id}/issues/{issue.id}/comments/{comment.guid}").json()["code"] == 0  # a local change now
    report = import_archive(api, model.id, newest)
    assert report["updated"] == [] and "changed after the topic" in report["skipped"][0]["reason"]
    assert Issue.objects.get(pk=issue.id).stage == "Design" and not Comment.objects.filter(pk=comment.pk).exists()


def test_a_bad_archive_during_an_update_changes_nothing(api, make_model):
    model = make_model()
    import_archive(api, model.id, full_archive())
    issue = Issue.objects.get(model=model)
    files_before = sorted(p.name for p in (model_dir(model.id) / "issues").iterdir())
    broken = rewritten(full_archive(), {"markup.bcf": newer, "b.bcfv": "<VisualizationInfo><Oops"})
    response = api.post(f"/api/v1/models/{model.id}/issues/bcf", {"file": SimpleUploadedFile("x.bcfzip", broken)}, format="multipart")
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert Issue.objects.get(pk=issue.id).modified_at == issue.modified_at
    assert sorted(p.name for p in (model_dir(model.id) / "issues").iterdir()) == files_before


def test_the_internal_document_travels_with_its_reference(api):
    bcf_xml.require_testcases()
    data = (bcf_xml.TESTCASES_DIR / "Document_reference_internal.bcf").read_bytes()
    data = rewritten(data, {"documents/b1d1b7f0-60b9-457d-ad12-16e0fb997bc5": b"hello document"})
    models = []
    for name in ("a.ifc", "b.ifc"):
        record = IfcModel.objects.create(name=name, status="ready")
        model_dir(record.id).mkdir(parents=True)
        models.append(record)
    import_archive(api, models[0].id, data)
    exported = export(api, models[0].id)
    with zipfile.ZipFile(io.BytesIO(exported)) as zf:
        assert zf.read("documents/b1d1b7f0-60b9-457d-ad12-16e0fb997bc5") == b"hello document"
        assert b"<Filename>ThisIsADocument.txt</Filename>" in zf.read("documents.xml")
    import_archive(api, models[1].id, exported)
    assert bcf_xml.topics(export(api, models[1].id)) == bcf_xml.topics(data)


def test_what_bcf_3_does_not_allow_is_left_out_with_a_note_so_the_export_stays_valid(api, make_model):
    bcf_xml.require_testcases()
    model = make_model()
    sloppy = rewritten(full_archive(), {
        "a.bcfv": lambda t: t.replace(f'<Component IfcGuid="{WALL}"/></Exceptions>', '<Component IfcGuid="not-an-ifc-guid"/></Exceptions>').replace('Color="FF0000"', 'Color="red"'),
        "b.bcfv": lambda t: t.replace("<ViewToWorldScale>22.5</ViewToWorldScale>", "<ViewToWorldScale>INF</ViewToWorldScale>"),
        "markup.bcf": lambda t: t.replace('IfcProject="0YvctVUKr0kugbFTf53O9L"', 'IfcProject="x"').replace('<Viewpoint Guid="b2b2b2b2-0000-4000-8000-000000000002"/>', ""),
    })
    (entry,) = import_archive(api, model.id, sloppy)["imported"]
    assert entry["notes"] == [
        f"viewpoint {VIEW_A}: 1 component id(s) that are no IFC GlobalId left out (first: 'not-an-ifc-guid')",
        f"viewpoint {VIEW_B} not kept: it has infinite or NaN coordinates",
    ]
    (viewpoint,) = Issue.objects.get(model=model).viewpoints
    assert [c["color"] for c in viewpoint["components"]["coloring"]] == ["8000ff00"]
    assert bcf_xml.schema_errors(export(api, model.id)) == {}
