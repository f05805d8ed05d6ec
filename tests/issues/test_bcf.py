"""BCF 3.0 export and import of review issues (GET issues.bcfzip, POST issues/bcf)."""

import io
import json
import tempfile
import zipfile
from datetime import datetime
from datetime import timezone as dt_timezone
from pathlib import Path

import numpy as np
import pytest
from bcf.v3 import model as bcf_model
from bcf.v3.bcfxml import BcfXml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from xsdata.models.datatype import XmlDateTime

from issues_app.models import Issue
from issues_app.views import IssuesBcfImportView
from models_app.models import IfcModel
from models_app.storage import model_dir
from tests.issues.conftest import png_bytes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

WALL = "2O2Fr$t4X7Zf8NOew3FLOH"
CAMERA = {"eye": [10.0, 5.5, -3.0], "look": [0.0, 0.0, 0.0], "up": [0.0, 1.0, 0.0]}


@pytest.fixture
def other_model():
    record = IfcModel.objects.create(name="other.ifc", status="ready")
    model_dir(record.id).mkdir(parents=True)
    (model_dir(record.id) / "metadata.json").write_text(json.dumps(
        {"metaObjects": [{"id": WALL, "name": "Basic Wall:Exterior", "type": "IfcWall"}, {"id": "3vB2YO$MX4xv5uCqZZG05x", "name": "Slab", "type": "IfcSlab"}]}
    ))
    return record


def export(api, model_id) -> bytes:
    response = api.get(f"/api/v1/models/{model_id}/issues.bcfzip")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"] == f'attachment; filename="{model_id}-issues.bcfzip"'
    return b"".join(response.streaming_content)


def import_archive(api, model_id, data: bytes, name="issues.bcfzip"):
    return api.post(f"/api/v1/models/{model_id}/issues/bcf", {"file": SimpleUploadedFile(name, data, "application/octet-stream")}, format="multipart")


def issue_fields(issue: Issue) -> dict:
    return {
        "title": issue.title, "comment": issue.comment, "status": issue.status, "author": issue.author, "provenance": issue.provenance,
        "entity_id": issue.entity_id, "entity_type": issue.entity_type, "camera": issue.camera,
        "created_at": issue.created_at,
    }


def test_export_is_bcf_3_with_one_topic_and_viewpoint_per_issue(api, model, post_issue):
    png = png_bytes(4, 4)
    first = post_issue(model.id, {"entityId": WALL, "entityType": "IfcWall", "title": "Crack", "comment": "see photo", "camera": CAMERA, "author": "anna"}, ("s.png", png, "image/png")).json()["data"]
    post_issue(model.id, {"title": "General remark", "provenance": {"source": "AI"}, "author": "agent"})
    api.patch(f"/api/v1/models/{model.id}/issues/{first['id']}", {"status": "checking"}, format="json")

    archive = zipfile.ZipFile(io.BytesIO(export(api, model.id)))
    assert b'VersionId="3.0"' in archive.read("bcf.version")
    with BcfXml(filename=io.BytesIO(export(api, model.id))) as bcf:
        topics = {handler.topic.title: handler for handler in bcf.topics.values()}
        assert set(topics) == {"Crack", "General remark"}
        crack = topics["Crack"]
        assert (crack.topic.description, crack.topic.topic_status, crack.topic.creation_author) == ("see photo", "In Progress", "anna")
        assert crack.topic.labels is None  # a person's topic: no provenance label (UI is the default)
        assert crack.topic.creation_date.to_datetime().replace(tzinfo=None) == datetime.fromisoformat(first["createdAt"].replace("Z", ""))
        (viewpoint,) = crack.viewpoints.values()
        assert [c.ifc_guid for c in viewpoint.visualization_info.components.selection.component] == [WALL]
        camera = viewpoint.visualization_info.perspective_camera
        assert (camera.camera_view_point.x, camera.camera_view_point.y, camera.camera_view_point.z) == (10.0, 5.5, -3.0)
        assert (camera.camera_direction.x, camera.camera_direction.y, camera.camera_direction.z) == (-10.0, -5.5, 3.0)
        assert viewpoint.snapshot == png
        remark = topics["General remark"]
        assert remark.topic.topic_status == "Open" and "provenance:AI" in remark.topic.labels.label
        assert remark.viewpoints == {}
        assert "Open" in bcf.extensions.topic_statuses.topic_status


def test_an_issue_with_an_element_and_no_camera_exports_a_camera_aimed_at_the_element(api, model, post_issue):
    """Issues pinned on a drawing (or through the API) have no camera: BCF's visinfo needs one, so the export aims one
    at the element's bounds written by the conversion, and the element stays selected."""
    bounds = {WALL: [2.0, 4.0, 0.0, 6.0, 4.3, 3.0]}
    (model_dir(model.id) / "element-bounds.json").write_text(json.dumps(bounds))
    png = png_bytes(4, 4)
    post_issue(model.id, {"entityId": WALL, "title": "On the plan"}, ("s.png", png, "image/png"))
    post_issue(model.id, {"entityId": "3vB2YO$MX4xv5uCqZZG05x", "title": "No bounds known"}, ("s.png", png, "image/png"))
    with BcfXml(filename=io.BytesIO(export(api, model.id))) as bcf:
        topics = {handler.topic.title: handler for handler in bcf.topics.values()}
        (viewpoint,) = topics["On the plan"].viewpoints.values()
        info = viewpoint.visualization_info
        assert [c.ifc_guid for c in info.components.selection.component] == [WALL]
        assert viewpoint.snapshot == png
        camera = info.perspective_camera
        eye = np.array([camera.camera_view_point.x, camera.camera_view_point.y, camera.camera_view_point.z])
        direction = np.array([camera.camera_direction.x, camera.camera_direction.y, camera.camera_direction.z])
        up = np.array([camera.camera_up_vector.x, camera.camera_up_vector.y, camera.camera_up_vector.z])
        low, high = np.array(bounds[WALL][:3]), np.array(bounds[WALL][3:])
        centre, radius = (low + high) / 2, np.linalg.norm(high - low) / 2
        along = np.dot(centre - eye, direction) / np.linalg.norm(direction)
        assert np.allclose(eye + direction / np.linalg.norm(direction) * along, centre)  # it looks at the element's centre
        assert eye[2] > high[2] and direction[2] < 0  # from above, Z up
        assert abs(np.dot(up, direction)) < 1e-9 and up[2] > 0
        half_angle = np.radians(camera.field_of_view / 2)
        assert np.arcsin(radius / np.linalg.norm(centre - eye)) <= half_angle + 1e-9  # the whole element is in view
        # without bounds (an element the conversion wrote none for) there is still no camera: the snapshot alone
        unknown = topics["No bounds known"]
        assert unknown.viewpoints == {}
        assert [(v.viewpoint, v.snapshot is not None) for v in unknown.markup.topic.viewpoints.view_point] == [(None, True)]


def test_exporting_twice_gives_the_same_topics(api, model, post_issue):
    post_issue(model.id, {"title": "A"})
    guids = [sorted(BcfXml(filename=io.BytesIO(export(api, model.id))).topics) for _ in range(2)]
    assert guids[0] == guids[1] and len(guids[0]) == 1


def test_round_trip_keeps_every_field_and_a_second_import_skips_everything(api, model, other_model, post_issue):
    png = png_bytes(3, 3)
    post_issue(model.id, {"entityId": WALL, "entityName": "Wall", "entityType": "IfcWall", "title": "Crack", "comment": "line 1\nline 2", "camera": CAMERA, "author": "anna"}, ("s.png", png, "image/png"))
    resolved = post_issue(model.id, {"title": "Fire rating missing", "provenance": {"source": "AI"}, "author": "agent"}).json()["data"]
    api.patch(f"/api/v1/models/{model.id}/issues/{resolved['id']}", {"status": "resolved"}, format="json")
    archive = export(api, model.id)

    before_import = timezone.now()
    response = import_archive(api, other_model.id, archive)
    assert response.status_code == 200, response.json()
    report = response.json()["data"]
    assert report["skipped"] == report["updated"] == [] and len(report["imported"]) == 2
    originals = {i.title: issue_fields(i) for i in Issue.objects.filter(model=model)}
    copies = {i.title: i for i in Issue.objects.filter(model=other_model)}
    for title, original in originals.items():
        copy = issue_fields(copies[title])
        assert copy == original, title
    assert all(copy.updated_at >= before_import for copy in copies.values())  # imported now
    crack = copies["Crack"]
    assert crack.entity_name == "Basic Wall:Exterior"  # looked up in the target model's metadata
    assert (model_dir(other_model.id) / crack.screenshot).read_bytes() == png
    assert {entry["issueId"] for entry in report["imported"]} == {c.id for c in copies.values()}

    again = import_archive(api, other_model.id, archive).json()["data"]
    assert again["imported"] == again["updated"] == []
    assert sorted(s["reason"] for s in again["skipped"]) == sorted(f"already imported as issue {c.id}" for c in copies.values())
    into_source = import_archive(api, model.id, archive).json()["data"]
    assert into_source["imported"] == into_source["updated"] == [] and len(into_source["skipped"]) == 2
    assert Issue.objects.filter(model=other_model).count() == 2 and Issue.objects.filter(model=model).count() == 2


def other_tool_archive() -> bytes:
    """An archive as another tool writes it with bcf-client: its own statuses, comments, an orthogonal camera, a
    viewpoint made from a point and guids, a JPEG snapshot, a topic without title."""
    bcf = BcfXml.create_new(project_name="Coordination")
    closed = bcf.add_topic("Clash wall/slab", "Wall intersects the slab", "bob@example.com", topic_type="Clash", topic_status="Closed")
    closed.comments = [
        bcf_model.Comment(date=XmlDateTime(2026, 1, 2, 10, 0, 0, 0, 0), author="carol", comment="moved the slab", guid="7d6b3e4c-8a36-4c55-9a2b-111111111111"),
        bcf_model.Comment(date=XmlDateTime(2026, 1, 1, 9, 30, 0, 0, 0), author="bob", comment="please check", guid="7d6b3e4c-8a36-4c55-9a2b-222222222222"),
    ]
    viewpoint = closed.add_viewpoint_from_point_and_guids(np.array([1.0, 2.0, 3.0]), "3vB2YO$MX4xv5uCqZZG05x")
    viewpoint.visualization_info.perspective_camera = None
    viewpoint.visualization_info.orthogonal_camera = bcf_model.OrthogonalCamera(
        camera_view_point=bcf_model.Point(x=5, y=5, z=5), camera_direction=bcf_model.Direction(x=-1, y=-1, z=-1),
        camera_up_vector=bcf_model.Direction(x=0, y=0, z=1), view_to_world_scale=10, aspect_ratio=1.5,
    )
    pending = bcf.add_topic("Door clearance", "", "dave", topic_status="In Review")
    snapshot_view = pending.add_viewpoint_from_point_and_guids(np.array([0.0, 0.0, 0.0]), WALL)
    snapshot_view.snapshot = b"\xff\xd8\xff\xe0 not a png"
    pending.topic.viewpoints.view_point[0].snapshot = "snapshot.jpg"
    bcf.add_topic("", "untitled", "erin")
    with tempfile.TemporaryDirectory() as folder:
        bcf.save(Path(folder) / "x.bcfzip")
        return (Path(folder) / "x.bcfzip").read_bytes()


def test_import_of_another_tools_archive(api, other_model):
    report = import_archive(api, other_model.id, other_tool_archive()).json()["data"]
    assert [s["reason"] for s in report["skipped"]] == ["the topic has no title"]
    issues = {i.title: i for i in Issue.objects.filter(model=other_model)}
    clash = issues["Clash wall/slab"]
    assert (clash.status, clash.bcf_topic_status, clash.topic_type, clash.author) == ("resolved", "Closed", "Clash", "bob@example.com")
    assert clash.comment == "Wall intersects the slab"  # comments are comments, no longer appended
    assert [(c.author, c.text, c.date) for c in clash.comments.all()] == [
        ("bob", "please check", datetime(2026, 1, 1, 9, 30, tzinfo=dt_timezone.utc)), ("carol", "moved the slab", datetime(2026, 1, 2, 10, 0, tzinfo=dt_timezone.utc)),
    ]
    assert (clash.entity_id, clash.entity_name, clash.entity_type) == ("3vB2YO$MX4xv5uCqZZG05x", "Slab", "IfcSlab")
    assert clash.camera == {"eye": [5.0, 5.0, 5.0], "look": [4.0, 4.0, 4.0], "up": [0.0, 0.0, 1.0]}
    (viewpoint,) = clash.viewpoints
    assert viewpoint["orthogonal_camera"]["view_to_world_scale"] == 10.0 and viewpoint["orthogonal_camera"]["aspect_ratio"] == 1.5
    door = issues["Door clearance"]
    assert door.status == "checking" and door.screenshot == "" and door.entity_id == WALL
    assert door.viewpoints[0]["snapshot"]["snapshot_type"] == "jpg"  # kept as the viewpoint's snapshot, not as the PNG screenshot
    assert (model_dir(other_model.id) / "issues" / door.viewpoints[0]["snapshot"]["snapshot_url"].rsplit("/", 1)[1]).read_bytes() == b"\xff\xd8\xff\xe0 not a png"
    (door_entry,) = [e for e in report["imported"] if e["title"] == "Door clearance"]
    assert door_entry["notes"] == []


def zip_of(entries: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


VERSION_3 = b'<?xml version="1.0"?><Version VersionId="3.0"/>'
MARKUP = b"""<?xml version="1.0"?><Markup><Topic Guid="0a9b7c3e-1111-4222-8333-444444444444" TopicType="Issue" TopicStatus="Open">
<Title>T</Title><CreationDate>2026-01-01T00:00:00Z</CreationDate><CreationAuthor>x</CreationAuthor></Topic></Markup>"""
TOPIC = "0a9b7c3e-1111-4222-8333-444444444444"


def test_a_minimal_hand_written_archive_imports(api, model):
    response = import_archive(api, model.id, zip_of({"bcf.version": VERSION_3, f"{TOPIC}/markup.bcf": MARKUP}))
    assert response.status_code == 200, response.json()
    assert [e["title"] for e in response.json()["data"]["imported"]] == ["T"]


@pytest.mark.parametrize(
    "archive, reason",
    [
        (b"PK\x03\x04 this is not really a zip", "not a zip archive"),
        (b"%PDF-1.7", "not a zip archive"),
        (zip_of({"bcf.version": VERSION_3, f"{TOPIC}/markup.bcf": MARKUP, f"{TOPIC}/big.png": b"\0" * (40 * 1024 * 1024)}), "zip bomb"),
        (zip_of({"bcf.version": VERSION_3, f"../{TOPIC}/markup.bcf": MARKUP}), "unsafe path"),
        (zip_of({"bcf.version": VERSION_3, f"/{TOPIC}/markup.bcf": MARKUP}), "unsafe path"),
        (zip_of({"bcf.version": VERSION_3, f"{TOPIC}\\..\\markup.bcf": MARKUP}), "unsafe path"),
        (zip_of({"bcf.version": b'<Version VersionId="2.1"><DetailedVersion>2.1</DetailedVersion></Version>', f"{TOPIC}/markup.bcf": MARKUP}), "BCF 2.1 is not supported"),
        (zip_of({f"{TOPIC}/markup.bcf": MARKUP}), "bcf.version is missing"),
        (zip_of({"bcf.version": VERSION_3, f"{TOPIC}/viewpoint.bcfv": b"<VisualizationInfo/>"}), "has no markup.bcf"),
        (zip_of({"bcf.version": VERSION_3, f"{TOPIC}/markup.bcf": b'<!DOCTYPE m [<!ENTITY a "aaaa">]><Markup>&a;</Markup>'}), "without DTD"),
        (zip_of({"bcf.version": VERSION_3, f"{TOPIC}/markup.bcf": b"<Markup><Topic"}), "not well-formed"),
    ],
    ids=["truncated-zip", "pdf", "zip-bomb", "dot-dot", "absolute", "backslash", "bcf-2.1", "no-version", "missing-markup", "entities", "broken-xml"],
)
def test_bad_archives_are_40001_with_a_reason_and_import_nothing(api, model, post_issue, archive, reason):
    post_issue(model.id, {"title": "existing"})
    response = import_archive(api, model.id, archive)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 40001 and reason in body["message"], body
    assert list(Issue.objects.filter(model=model).values_list("title", flat=True)) == ["existing"]
    screenshots = model_dir(model.id) / "issues"
    assert not screenshots.exists() or list(screenshots.iterdir()) == []


def test_a_failure_half_way_keeps_nothing(api, model, monkeypatch):
    from issues_app.use_cases import import_bcf

    archive = other_tool_archive()
    calls = {"n": 0}
    real = import_bcf._issue_from_topic

    def fail_on_second(model_record, topic, batch):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real(model_record, topic, batch)

    monkeypatch.setattr(import_bcf, "_issue_from_topic", fail_on_second)
    with pytest.raises(RuntimeError):
        import_bcf.import_bcf(model_id=model.id, archive=io.BytesIO(archive))
    assert Issue.objects.filter(model=model).count() == 0
    assert list((model_dir(model.id) / "issues").glob("*.*")) == []  # the first topic's snapshot is gone again


def test_missing_file_part_unknown_model_and_size_limit(api, model, monkeypatch):
    response = api.post(f"/api/v1/models/{model.id}/issues/bcf", {"other": "x"}, format="multipart")
    assert (response.status_code, response.json()["code"]) == (400, 40001) and "'file'" in response.json()["message"]
    assert import_archive(api, "m_0000000000000000", zip_of({"bcf.version": VERSION_3})).json()["code"] == 40400
    assert api.get("/api/v1/models/m_0000000000000000/issues.bcfzip").json()["code"] == 40400
    assert api.get("/api/v1/models/bad/issues.bcfzip").json()["code"] == 40400
    monkeypatch.setattr(IssuesBcfImportView, "upload_limit_bytes", 1000)
    response = import_archive(api, model.id, b"x" * 200_000)
    assert (response.status_code, response.json()["code"]) == (400, 40002)


def test_bcf_routes_need_the_token(client, model, viewer_config):
    viewer_config(apiToken="tok")
    assert client.get(f"/api/v1/models/{model.id}/issues.bcfzip").status_code == 401
    assert client.post(f"/api/v1/models/{model.id}/issues/bcf").status_code == 401
    assert client.get(f"/api/v1/models/{model.id}/issues.bcfzip", HTTP_AUTHORIZATION="Bearer tok").status_code == 200


def test_the_issue_list_shows_an_issue_deleted_and_imported_again(api, model, post_issue):
    """Delete plus import keeps the count: the cached list must still change."""
    first = post_issue(model.id, {"title": "Crack"}).json()["data"]
    archive = export(api, model.id)
    assert [i["id"] for i in api.get(f"/api/v1/models/{model.id}/issues").json()["data"]] == [first["id"]]
    api.delete(f"/api/v1/models/{model.id}/issues/{first['id']}")
    imported = import_archive(api, model.id, archive).json()["data"]["imported"]
    assert [i["id"] for i in api.get(f"/api/v1/models/{model.id}/issues").json()["data"]] == [imported[0]["issueId"]]


@pytest.mark.parametrize(
    "name, data",
    [
        (f"{TOPIC}/markup.bcf", MARKUP.replace(b"<Title>T</Title>", b"<Title>T</Title>" + b" " * 300_000)),  # 300 KB of spaces, ~300 bytes zipped
        (f"{TOPIC}/snapshot.png", b"\0" * 50_000),  # 50 KB, far under the old 1 MB floor
        (f"{TOPIC}/tiny.txt", b"a" * 10_000),
    ],
    ids=["markup", "small-png", "tiny"],
)
def test_every_entry_is_checked_for_its_expansion_ratio_whatever_its_size(api, model, name, data):
    entries = {"bcf.version": VERSION_3, f"{TOPIC}/markup.bcf": MARKUP, name: data}
    archive = zip_of(entries)
    info = zipfile.ZipFile(io.BytesIO(archive)).getinfo(name)
    assert info.file_size <= 1024 * 1024 and info.file_size > 200 * info.compress_size  # what the old check let through
    response = import_archive(api, model.id, archive)
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert "zip bomb" in response.json()["message"] and name in response.json()["message"]
    assert not Issue.objects.filter(model=model).exists()


def test_the_upload_is_read_from_its_temporary_file(api, model, monkeypatch):
    from issues_app.use_cases import import_bcf

    seen = []
    real = import_bcf.import_bcf

    def spy(*, model_id, archive, by):
        seen.append(archive)
        assert isinstance(archive, str) and Path(archive).is_file() and Path(archive).read_bytes()[:2] == b"PK"
        return real(model_id=model_id, archive=archive, by=by)

    monkeypatch.setattr(import_bcf, "import_bcf", spy)
    response = import_archive(api, model.id, zip_of({"bcf.version": VERSION_3, f"{TOPIC}/markup.bcf": MARKUP}))
    assert response.json()["code"] == 0 and len(seen) == 1
    assert not Path(seen[0]).exists()  # the temporary file is gone after the request


def test_an_archive_is_never_held_whole_in_memory(model, tmp_path):
    """Importing 4 incompressible 4 MB snapshots streams them from the archive file to their files."""
    import os
    import tracemalloc

    from issues_app.use_cases.import_bcf import import_bcf

    topics = {}
    for index in range(4):
        guid = f"0a9b7c3e-1111-4222-8333-44444444444{index}"
        view = f"1a9b7c3e-1111-4222-8333-44444444444{index}"
        topics[f"{guid}/markup.bcf"] = MARKUP.replace(TOPIC.encode(), guid.encode()).replace(
            b"</CreationAuthor>", f'</CreationAuthor><Viewpoints><ViewPoint Guid="{view}"><Snapshot>s.png</Snapshot></ViewPoint></Viewpoints>'.encode()
        )
        topics[f"{guid}/s.png"] = b"\x89PNG\r\n\x1a\n" + os.urandom(4 * 1024 * 1024 - 100)
    path = tmp_path / "big.bcfzip"
    path.write_bytes(zip_of({"bcf.version": VERSION_3, **topics}))
    del topics
    tracemalloc.start()
    try:
        report = import_bcf(model_id=model.id, archive=str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(report["imported"]) == 4
    assert peak < 4 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB: a snapshot (4 MB) or the archive (16 MB) was read into memory"
    assert sum(p.stat().st_size for p in (model_dir(model.id) / "issues").iterdir()) > 16 * 1024 * 1024 - 1000


def test_export_streams_from_a_temporary_file(api, model, post_issue):
    post_issue(model.id, {"title": "A"})
    response = api.get(f"/api/v1/models/{model.id}/issues.bcfzip")
    assert response.streaming and not hasattr(response, "_container")
    assert zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()[0] == "bcf.version"
