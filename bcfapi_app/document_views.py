"""BCF API 3.0 document references of a topic (3.7) and documents of a project (3.8)."""

from __future__ import annotations

from django.http import FileResponse
from rest_framework.parsers import MultiPartParser

from api.principal import Principal
from api.uploads import UploadLimit
from bcfapi_app import documents, topic_services, topics
from bcfapi_app.responses import BcfView, bare, check_if_match
from core.errors import Invalid


class DocumentReferenceListView(BcfView):
    def get(self, request, project_id, topic_guid):
        issue = topics.topic_get(project_id, topic_guid)
        return bare([topic_services.document_reference_json(reference) for reference in issue.document_references])

    def post(self, request, project_id, topic_guid):
        """POST document_references: 201 with the reference (a URL, or document_guid naming a project document)."""
        issue = topics.topic_get(project_id, topic_guid)
        reference = topic_services.document_reference_add(project_id=project_id, issue=issue, body=request.data, principal=Principal.of(request))
        return bare(topic_services.document_reference_json(reference), status=201)


class DocumentReferenceDetailView(BcfView):
    def put(self, request, project_id, topic_guid, reference_guid):
        """PUT document_references/{guid}: a whole replace; If-Match naming a stale ETag is refused (412)."""
        issue = topics.topic_get(project_id, topic_guid)
        check_if_match(request, topic_services.document_reference_json(topic_services.document_reference_get(issue, reference_guid)))
        reference = topic_services.document_reference_replace(project_id=project_id, issue=issue, reference_guid=reference_guid, body=request.data,
                                                              principal=Principal.of(request))
        return bare(topic_services.document_reference_json(reference))


class DocumentListView(UploadLimit, BcfView):
    """GET the project's documents; POST one: the body is the file (Content-Disposition names it) or a multipart
    part `file`; ?guid= chooses its GUID. At most documents.DOCUMENT_MAX_BYTES."""

    parser_classes = [MultiPartParser]
    upload_limit_bytes = documents.DOCUMENT_MAX_BYTES
    upload_limit_what = "document"

    def get(self, request, project_id):
        return bare([{"guid": document.guid, "filename": document.filename} for document in documents.project_documents(project_id)])

    def post(self, request, project_id):
        guid = topic_services.check_guid(request.query_params.get("guid"), "guid")
        if request.content_type.startswith("multipart/"):
            upload = request.FILES.get("file")
            if upload is None:
                raise Invalid("file: the multipart part 'file' is missing", data={"field": "file"})
            chunks, filename = upload.chunks(), documents.filename_of(request, upload)
        elif request.stream is None:
            raise Invalid("the body is empty: send the document's bytes", data={"field": "body"})
        else:
            chunks, filename = documents.read_chunks(request.stream), documents.filename_of(request)
        document = documents.document_create(project_id=project_id, chunks=chunks, filename=filename, guid=guid, principal=Principal.of(request))
        return bare({"guid": document.guid, "filename": document.filename}, status=201)


class DocumentDetailView(BcfView):
    def get(self, request, project_id, document_guid):
        """GET documents/{guid}: the file itself."""
        document = documents.document_get(project_id, document_guid)
        return FileResponse(open(document.path, "rb"), as_attachment=True, filename=document.filename, content_type="application/octet-stream")
