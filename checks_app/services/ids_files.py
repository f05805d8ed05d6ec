"""IDS files of a project: validated, their contents kept once (IdsDocument, shared by files and checks)."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from django.db import transaction

from accounts_app.audit import audit_record
from api.principal import Principal
from checks_app import selectors
from checks_app.engine.ids_schema import IdsDocumentInfo, IdsInvalid, validate_ids
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


class ValidatedIds:
    """The IDS files this process has validated, by the sha256 of their bytes: the same bytes again (teams run the
    same IDS over and over) are not validated again (libxml2's validation, the patterns compiled and the bytes hashed
    again: ~0.3 ms for 27 specifications). Only what this process's own validate_ids accepted is kept (never a
    document stored by an earlier version), invalid files are validated each time; bounded in entries and text,
    least recently used first out."""

    def __init__(self, max_entries: int = 64, max_chars: int = 16 * 1024 * 1024):
        self.max_entries, self.max_chars = max_entries, max_chars
        self._entries: OrderedDict[str, IdsDocumentInfo] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, data: bytes) -> IdsDocumentInfo:
        """validate_ids(data), or its answer for the same bytes before; raises IdsInvalid as it does."""
        key = sha256_hex(data)
        with self._lock:
            info = self._entries.get(key)
            if info is not None:
                self._entries.move_to_end(key)
                return info
        info = validate_ids(data)
        with self._lock:
            if key not in self._entries and len(info.text) <= self.max_chars:
                self._entries[key] = info
                self._chars += len(info.text)
                while len(self._entries) > self.max_entries or self._chars > self.max_chars:
                    _, dropped = self._entries.popitem(last=False)
                    self._chars -= len(dropped.text)
        return info

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0


validated_ids = ValidatedIds()


def ids_document_store(data: bytes, *, what: str = "the IDS file") -> tuple[IdsDocument, bool]:
    """Validates an IDS file (XSD 1.0) and keeps its content once; 40002 above 5 MB, 40001 invalid. Returns the
    document and whether it was stored now (else its content was kept already)."""
    if len(data) > IDS_MAX_BYTES:
        raise TooLarge(size_limit_message(IDS_MAX_BYTES, what))
    try:
        info = validated_ids.get(data)
    except IdsInvalid as exc:
        raise Invalid(f"{what} is not a valid IDS 1.0 file: {exc}") from None
    return IdsDocument.objects.get_or_create(
        sha256=sha256_hex(info.text),
        defaults={"content": info.text, "size": len(data), "title": info.title[:512], "specifications": info.specifications},
    )


def remove_unused_documents() -> None:
    IdsDocument.objects.filter(files=None, checks=None).delete()


def ids_file_put(*, project_id: str, name: str, data: bytes) -> tuple[IdsFile, bool]:
    """Creates or replaces a project's IDS file. Returns (file, created)."""
    project = project_get(project_id)
    ids_name_check(name)
    document, _ = ids_document_store(data)
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
