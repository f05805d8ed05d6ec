"""Documents of a project (BCF API 3.8): files uploaded through POST documents (ProjectDocument, the bytes with the
project's first IFC model) and the documents imported with BCF archives (in their model's issues folder, named by
the topics' document references). Stored like screenshots: written to a staged file, published atomically.

Limits: DOCUMENT_MAX_BYTES per document, MAX_DOCUMENTS per project.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from accounts_app.policy import Forbidden
from api.principal import Principal
from api.signatures import signature_of
from bcfapi_app import topics
from bcfapi_app.models import ProjectDocument
from core.errors import Conflict, Invalid, NotFound, TooLarge
from core.limits import size_limit_message
from issues_app import bcf
from issues_app.issue_files import document_path, issues_folder_for_writing, store_file

DOCUMENT_MAX_BYTES = bcf.MAX_DOCUMENT_BYTES  # 50 MB, as an imported archive's document
MAX_DOCUMENTS = 1000
CHUNK = 1 << 20
_FILENAME_RE = re.compile(r'filename\*?=(?:UTF-8\'\')?"?([^";]+)"?', re.IGNORECASE)


@dataclass(frozen=True)
class DocumentFile:
    guid: str
    filename: str
    path: Path


def project_documents(project_id: str) -> list[DocumentFile]:
    """The project's documents: uploaded ones first (in upload order), then those its topics' imported references
    name and whose file is there."""
    found = {document.guid: DocumentFile(document.guid, document.filename, document_path(document.model_id, document.guid))
             for document in ProjectDocument.objects.filter(project_id=project_id)}
    for model_id, references in topics.project_issues(project_id).exclude(document_references=[]).values_list("model_id", "document_references"):
        for reference in references:
            guid = reference.get("documentGuid")
            if guid and guid not in found and document_path(model_id, guid).is_file():
                found[guid] = DocumentFile(guid, reference.get("filename") or guid, document_path(model_id, guid))
    return list(found.values())


def document_get(project_id: str, guid: str) -> DocumentFile:
    for document in project_documents(project_id):
        if document.guid.lower() == guid.lower() and document.path.is_file():
            return document
    raise NotFound(f"document {guid} not found in project {project_id}")


def filename_of(request, upload=None) -> str:
    """The document's file name: the multipart part's, else Content-Disposition's, else ?filename=; a base name."""
    name = getattr(upload, "name", "") or ""
    if not name:
        match = _FILENAME_RE.search(request.headers.get("Content-Disposition", ""))
        name = match.group(1) if match else request.query_params.get("filename", "")
    name = Path(name.replace("\\", "/")).name.strip()
    if not name:
        raise Invalid("filename: name the document (Content-Disposition: attachment; filename=\"...\", or a multipart part 'file')",
                      data={"field": "filename"})
    return name[:255]


def document_create(*, project_id: str, chunks, filename: str, guid: str | None, principal: Principal) -> ProjectDocument:
    """POST documents: the bytes (an iterable of chunks) stored with the project's first IFC model."""
    model = topics.primary_model(project_id)
    if model is None:
        raise Forbidden(f"project {project_id} has no IFC model to hold documents (createDocument is not among its project_actions)")
    guid = guid or str(uuid.uuid4())
    if any(document.guid.lower() == guid.lower() for document in project_documents(project_id)):
        raise Conflict(f"document {guid} exists already in project {project_id}", data={"field": "guid"})
    if ProjectDocument.objects.filter(project_id=project_id).count() >= MAX_DOCUMENTS:
        raise Conflict(f"project {project_id} has {MAX_DOCUMENTS} documents, the most it may hold")
    digest, size = hashlib.sha256(), [0]

    def write(handle):
        for chunk in chunks:
            size[0] += len(chunk)
            if size[0] > DOCUMENT_MAX_BYTES:
                raise TooLarge(size_limit_message(DOCUMENT_MAX_BYTES, "document"))
            digest.update(chunk)
            handle.write(chunk)

    target = issues_folder_for_writing(model.id) / "documents" / guid
    target.parent.mkdir(exist_ok=True)
    store_file(target, write)
    try:
        with transaction.atomic():
            return ProjectDocument.objects.create(guid=guid, project_id=project_id, model=model, filename=filename, size=size[0],
                                                  sha256=digest.hexdigest(), author=signature_of(principal).author)
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def document_into_model(project_id: str, guid: str, model_id: str) -> dict:
    """A project document made available to a topic of `model_id` (the issue checks the file lies with its model):
    copied there when it lies elsewhere. The reference's filename and documentDescription."""
    try:
        document = document_get(project_id, guid)
    except NotFound:
        raise Invalid(f"document_guid: {guid} is not a document of project {project_id}", data={"field": "document_guid"}) from None
    target = document_path(model_id, document.guid)
    if not target.is_file():
        def write(handle):
            with open(document.path, "rb") as source:
                while chunk := source.read(CHUNK):
                    handle.write(chunk)

        (issues_folder_for_writing(model_id) / "documents").mkdir(exist_ok=True)
        store_file(target, write)
    return {"documentGuid": document.guid, "filename": document.filename, "documentDescription": None}


def read_chunks(stream):
    """A request body read a megabyte at a time."""
    while chunk := stream.read(CHUNK):
        yield chunk
