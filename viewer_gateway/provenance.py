"""Moved: the author and provenance values to core/provenance.py, the serializer fields to api/fields.py. The names
stay importable from here for the modules that still use this path."""

from api.fields import AuthorField, ProvenanceField  # noqa: F401
from core.provenance import AGENT_AUTHOR, DEFAULT_AUTHOR, Provenance, provenance_error  # noqa: F401
