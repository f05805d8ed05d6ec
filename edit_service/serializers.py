from rest_framework import serializers

# v + digits; a version that does not exist (v0, v01, v99) is 404, not a validation error
VERSION_PATTERN = r"^v\d+$"


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


class AuthorField(serializers.CharField):
    """Optional author: missing, null or blank give the default."""

    def __init__(self, default: str, **kwargs):
        super().__init__(required=False, allow_null=True, allow_blank=True, max_length=255, default=default, **kwargs)

    def run_validation(self, data=serializers.empty):
        if data is serializers.empty or data is None or (isinstance(data, str) and not data.strip()):
            return self.default
        return super().run_validation(data)


class SaveSerializer(serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, default="")
    author = AuthorField(default="local-user")
    provenance = ProvenanceSerializer(required=False, allow_null=True)
    operation = serializers.ChoiceField(choices=["update", "migrate"], required=False, default="update")
    requestId = serializers.RegexField(
        r"^[A-Za-z0-9_.:-]{1,64}$", required=False,
        help_text="idempotency key: a save repeating it answers the version it made (replayed: true) and creates nothing",
    )


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


StagingDiffQuerySerializer._declared_fields["from"] = serializers.IntegerField(required=False, min_value=0)  # "from" is a keyword


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
    author = AuthorField(default="user-upload")
    events = UserEditEventSerializer(many=True, allow_empty=True)


class LocateQuerySerializer(serializers.Serializer):
    guid = serializers.CharField()


class EditCallSerializer(serializers.Serializer):
    designKey = serializers.CharField()
    argument = serializers.CharField()
    value = serializers.JSONField(help_text="a scalar: string, number or boolean")
