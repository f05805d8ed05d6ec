"""Serializer fields shared by the gateway's apps."""

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A JSON string: numbers and booleans are not silently turned into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)
