"""Serializer fields shared by the gateway's apps: strict strings, and who made a change (the author and the
provenance {source: UI | AI}).

Missing, null or blank mean the defaults, so a client may echo back what it read without knowing which fields are
optional.
"""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.provenance import DEFAULT_AUTHOR, Provenance, provenance_error


class StrictCharField(serializers.CharField):
    """A JSON string: numbers and booleans are not silently turned into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class AuthorField(serializers.CharField):
    """Optional author; missing, null or blank give DEFAULT_AUTHOR (or the `default` given)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("default", DEFAULT_AUTHOR)
        kwargs.setdefault("max_length", 255)
        super().__init__(required=False, allow_null=True, allow_blank=True, **kwargs)

    def run_validation(self, data=serializers.empty):
        if data is serializers.empty or data is None or (isinstance(data, str) and not data.strip()):
            return self.default
        return super().run_validation(data)


@extend_schema_field({"type": "object", "nullable": True, "properties": {"source": {"type": "string", "enum": ["UI", "AI"]}}})
class ProvenanceField(serializers.Field):
    """{source: UI | AI} in, the source string out; missing or null give UI."""

    default_error_messages = {"invalid": "{message}"}

    def __init__(self, **kwargs):
        if not kwargs.get("read_only"):
            kwargs.update(required=False, allow_null=True, default=Provenance.UI.value)
        super().__init__(**kwargs)

    def run_validation(self, data=serializers.empty):
        if data is serializers.empty or data is None:
            return Provenance.UI.value
        return super().run_validation(data)

    def to_internal_value(self, data):
        source = data.get("source") if isinstance(data, dict) else None
        if source not in Provenance.values:
            self.fail("invalid", message=provenance_error(data))
        return source

    def to_representation(self, value):
        return {"source": value}
