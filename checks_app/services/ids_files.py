"""IDS files of a project: validated, their contents kept once (IdsDocument, shared by files and checks)."""

from __future__ import annotations

import hashlib

from django.db import transaction

from accounts_app.audit import audit_record
from api.principal import Principal
from checks_app import selectors
from checks_app.engine.ids_schema import IdsInvalid, validate_ids
from checks_app.models import IdsDocument, IdsFile
from checks_app.projects import project_get
from core.errors import Invalid, TooLarge
from core.limits import IDS_MAX_BYTES, size_limit_message


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def ids_name_check(name: str) -> str:
    if not selectors.IDS_NAME_RE.match(name or "") or ".." in name:
        raise Invalid(f"invalid IDS name {name!r}: 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit, no '..'")
    return name


def ids_document_store(data: bytes, *, what: str = "the IDS file") -> IdsDocument:
    """Validates an IDS file (XSD 1.0, readable) and keeps its content once; 40002 above 5 MB, 40001 invalid."""
    if len(data) > IDS_MAX_BYTES:
        raise TooLarge(size_limit_message(IDS_MAX_BYTES, what))
    try:
        info = validate_ids(data)
    except IdsInvalid as exc:
        raise Invalid(f"{what} is not a valid IDS 1.0 file: {exc}") from None
    document, _ = IdsDocument.objects.get_or_create(
        sha256=sha256_hex(info.text),
        defaults={"content": info.text, "size": len(data), "title": info.title[:512], "specifications": info.specifications},
    )
    return document


def remove_unused_documents() -> None:
    IdsDocument.objects.filter(files=None, checks=None).delete()


def ids_file_put(*, project_id: str, name: str, data: bytes) -> tuple[IdsFile, bool]:
    """Creates or replaces a project's IDS file. Returns (file, created)."""
    project = project_get(project_id)
    ids_name_check(name)
    document = ids_document_store(data)
    with transaction.atomic():
        ids_file, created = IdsFile.objects.select_for_update().get_or_create(project=project, name=name, defaults={"document": document})
        if not created and ids_file.document_id != document.sha256:
            ids_file.document = document
            ids_file.save(update_fields=["document", "updated_at"])
    remove_unused_documents()
    return ids_file, created


def ids_file_delete(*, project_id: str, name: str, by: Principal | None = None) -> None:
    """Deletes the project's IDS file; `by` (who deletes) is recorded in the audit trail."""
    ids_file = selectors.ids_file_get(project_id, name)
    ids_file.delete()
    remove_unused_documents()
    if by is not None:
        audit_record(by, "ids-file.delete", object=f"ids-file:{ids_file.name}", project_id=project_id, detail={"title": ids_file.name})
