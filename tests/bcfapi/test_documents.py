"""BCF API 3.0 documents of a project (stored like screenshots, with limits) and document references of a topic
(a URL or a project document); documents imported with a BCF archive are the project's documents too."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from bcfapi_app import documents
from bcfapi_app.models import ProjectDocument
from core.limits import DEFAULT_BODY_BYTES
from issues_app.issue_files import document_path
from issues_app.models import Issue
from models_app.models import IfcModel, ProjectModel
from models_app.storage import model_dir
from tests.bcfapi import topic_helpers
from tests.bcfapi.topic_helpers import answer, send
from viewer_gateway.server import body_limit

pytestmark = pytest.mark.django_db
team = topic_helpers.team

DOCUMENT = "Collaboration/Document/document_GET.json"
REFERENCE = "Collaboration/DocumentReference/document_reference_GET.json"
PDF = b"%PDF-1.4\n" + bytes(range(256)) * 40


def upload(client, base: str, content: bytes, filename: str = "Permit.pdf", query: str = "", status: int = 201):
    response = client.post(f"{base}/documents{query}", content, content_type="application/octet-stream",
                           headers={"Content-Disposition": f'attachment; filename="{filename}"'})
    assert response.status_code == status, response.content
    return response.json()


def test_documents_are_uploaded_listed_and_downloaded(team):
    rita = team.clients["rita"]
    guid = str(uuid.uuid4())
    made = upload(rita, team.base, PDF, query=f"?guid={guid}")
    assert made == {"guid": guid, "filename": "Permit.pdf"}
    record = ProjectDocument.objects.get(guid=guid)
    assert (record.size, record.sha256, record.author, record.model_id) == (len(PDF), hashlib.sha256(PDF).hexdigest(), "rita", team.model.id)
    multipart = rita.post(f"{team.base}/documents", {"file": SimpleUploadedFile("../../Notes.txt", b"plain notes")})
    assert multipart.status_code == 201 and multipart.json()["filename"] == "Notes.txt"
    listed = answer(rita, "GET", f"{team.base}/documents", schema=DOCUMENT + "[]")
    assert listed == [made, multipart.json()]
    fetched = team.clients["vera"].get(f"{team.base}/documents/{guid}")
    assert fetched.status_code == 200 and b"".join(fetched.streaming_content) == PDF and "Permit.pdf" in fetched["Content-Disposition"]
    send(rita, "GET", f"{team.base}/documents/{uuid.uuid4()}", status=404)


def test_document_uploads_are_limited_and_checked(team, monkeypatch):
    rita = team.clients["rita"]
    guid = upload(rita, team.base, PDF)["guid"]
    assert "exists already" in upload(rita, team.base, PDF, query=f"?guid={guid}", status=409)["message"]
    assert "guid" in upload(rita, team.base, PDF, query="?guid=nope", status=400)["message"]
    no_name = rita.post(f"{team.base}/documents", PDF, content_type="application/octet-stream")
    assert no_name.status_code == 400 and "filename" in no_name.json()["message"]
    monkeypatch.setattr(documents, "DOCUMENT_MAX_BYTES", 1000)
    too_large = upload(rita, team.base, PDF, status=400)
    assert too_large["code"] == 40002 and "document" in too_large["message"]
    assert list((document_path(team.model.id, "x").parent).iterdir()) == [document_path(team.model.id, guid)]  # nothing left behind
    monkeypatch.setattr(documents, "MAX_DOCUMENTS", 1)
    assert "the most" in upload(rita, team.base, b"x", status=409)["message"]
    assert upload(team.clients["vera"], team.base, b"x", status=403)["message"]


def test_document_references_point_at_urls_or_project_documents(team):
    rita = team.clients["rita"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "Permit"}, status=201)
    references = f"{team.base}/topics/{topic['guid']}/document_references"
    document = upload(rita, team.base, PDF)["guid"]
    external = answer(rita, "POST", references, {"url": "https://example.com/rules.pdf", "description": "Fire rules"}, REFERENCE, status=201)
    assert (external["url"], external["description"], external["document_guid"]) == ("https://example.com/rules.pdf", "Fire rules", None)
    guid = str(uuid.uuid4())
    internal = answer(rita, "POST", references, {"guid": guid, "document_guid": document}, REFERENCE, status=201)
    assert internal == {"guid": guid, "document_guid": document, "url": None, "description": None}
    assert answer(rita, "GET", references, schema=REFERENCE + "[]") == [external, internal]
    stored = Issue.objects.get(bcf_topic_guid=topic["guid"]).document_references[1]
    assert (stored["documentGuid"], stored["filename"]) == (document, "Permit.pdf")

    etag = send(rita, "GET", references)["ETag"]
    assert etag
    replaced = answer(rita, "PUT", f"{references}/{guid}", {"url": "https://example.com/permit", "description": "Permit online"}, REFERENCE)
    assert replaced == {"guid": guid, "document_guid": None, "url": "https://example.com/permit", "description": "Permit online"}
    stale = {"If-Match": '"' + "0" * 64 + '"'}
    send(rita, "PUT", f"{references}/{guid}", {"url": "https://example.com/x"}, headers=stale, status=412)
    assert "exists already" in answer(rita, "POST", references, {"guid": guid, "url": "https://example.com/y"}, status=409)["message"]
    assert "document_guid" in answer(rita, "POST", references, {"document_guid": str(uuid.uuid4())}, status=400)["message"]
    assert "either url or documentGuid" in answer(rita, "POST", references, {"description": "nothing"}, status=400)["message"]
    send(rita, "PUT", f"{references}/{uuid.uuid4()}", {"url": "https://example.com/z"}, status=404)
    send(team.clients["vera"], "POST", references, {"url": "https://example.com/v"}, status=403)


def test_a_topic_of_another_model_of_the_project_refers_to_a_project_document(team):
    rita = team.clients["rita"]
    second = IfcModel.objects.create(name="structure.ifc", status="ready")
    ProjectModel.objects.create(project=team.project, model=second, discipline="STR")
    model_dir(second.id).mkdir(parents=True)
    document = upload(rita, team.base, PDF)["guid"]
    issue = Issue.objects.create(model=second, title="on the second model")
    Issue.objects.filter(pk=issue.pk).update(bcf_topic_guid=str(uuid.uuid4()))
    issue.refresh_from_db()
    answer(rita, "POST", f"{team.base}/topics/{issue.bcf_topic_guid}/document_references", {"document_guid": document}, REFERENCE, status=201)
    assert document_path(second.id, document).read_bytes() == PDF


def test_the_server_refuses_bodies_over_each_bcf_routes_limit_before_reading_them():
    project = "/bcf/3.0/projects/p_0123456789abcdef"
    topic = f"{project}/topics/{uuid.uuid4()}"
    assert body_limit("POST", f"{project}/documents") > documents.DOCUMENT_MAX_BYTES
    # a viewpoint is JSON: the default body limit, which is also Django's DATA_UPLOAD_MAX_MEMORY_SIZE (JSONDepthMiddleware
    # reads request.body): a 5 MB snapshot in base64 fits
    assert body_limit("POST", f"{topic}/viewpoints") == DEFAULT_BODY_BYTES == settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert body_limit("POST", f"{project}/topics") == body_limit("PUT", topic) == body_limit("POST", f"{topic}/comments") == 256 * 1024


def test_a_document_larger_than_a_json_body_may_be_is_streamed_to_its_file(team):
    content = bytes(range(256)) * (11 * 4096)  # 11 MB, over DATA_UPLOAD_MAX_MEMORY_SIZE
    guid = upload(team.clients["rita"], team.base, content, filename="scan.tif")["guid"]
    assert document_path(team.model.id, guid).read_bytes() == content
