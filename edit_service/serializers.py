from rest_framework import serializers

VERSION_PATTERN = r"^v[1-9]\d*$"


class ScriptPutSerializer(serializers.Serializer):
    script = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False, default=None)
    params = serializers.JSONField(required=False, allow_null=True, default=None)
    note = serializers.CharField(required=False, allow_blank=True, default="")

    def validate(self, attrs):
        if (attrs["script"] is None) == (attrs["params"] is None):
            raise serializers.ValidationError("give exactly one of script and params")
        if attrs["params"] is not None and not isinstance(attrs["params"], dict):
            raise serializers.ValidationError({"params": ["must be a JSON object"]})
        return attrs


class ProvenanceSerializer(serializers.Serializer):
    source = serializers.ChoiceField(choices=["UI", "AI"])


class SaveSerializer(serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, default="")
    author = serializers.CharField(required=False, default="local-user")
    provenance = ProvenanceSerializer(required=False)
    operation = serializers.ChoiceField(choices=["update", "migrate"], required=False, default="update")


class RollbackSerializer(serializers.Serializer):
    version = serializers.RegexField(VERSION_PATTERN)


class ScriptDiffSerializer(serializers.Serializer):
    base = serializers.RegexField(VERSION_PATTERN)
    target = serializers.RegexField(VERSION_PATTERN)


class SemanticDiffSerializer(serializers.Serializer):
    base = serializers.RegexField(VERSION_PATTERN)
    target = serializers.RegexField(r"^(v[1-9]\d*|current)$")


class StagingDiffQuerySerializer(serializers.Serializer):
    # "from" is a keyword: declared below
    to = serializers.IntegerField(required=False, min_value=0)


StagingDiffQuerySerializer._declared_fields["from"] = serializers.IntegerField(required=False, min_value=0)


class UploadSerializer(serializers.Serializer):
    file = serializers.FileField()


class FieldChangeSerializer(serializers.Serializer):
    field = serializers.CharField()
    oldValue = serializers.JSONField(required=False, allow_null=True, default=None)
    newValue = serializers.JSONField(required=False, allow_null=True, default=None)


class UserEditEventSerializer(serializers.Serializer):
    guid = serializers.CharField()
    name = serializers.CharField(required=False, allow_blank=True, default="")
    kind = serializers.ChoiceField(choices=["added", "removed", "modified"])
    changes = FieldChangeSerializer(many=True, required=False, default=list)


class UserEditsSerializer(serializers.Serializer):
    origin = serializers.ChoiceField(choices=["ifc-upload", "dxf-upload"])
    author = serializers.CharField(required=False, default="user-upload")
    events = UserEditEventSerializer(many=True, allow_empty=True)


class LocateQuerySerializer(serializers.Serializer):
    guid = serializers.CharField()


class EditCallSerializer(serializers.Serializer):
    designKey = serializers.CharField()
    argument = serializers.CharField()
    value = serializers.JSONField(help_text="a scalar: string, number or boolean")
