from rest_framework import serializers

from api.fields import AuthorField, ProvenanceField


class DeliverSerializer(serializers.Serializer):
    plan = serializers.JSONField(help_text="plan/1 document")
    bimSupplement = serializers.JSONField(help_text="bim_supplement/1 document")
    author = AuthorField()
    provenance = ProvenanceField()


class PlanPutResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField(help_text="v<n>, the version holding this content")
    changed = serializers.BooleanField(help_text="false when the content was identical and nothing was written")


class PlanVersionSerializer(serializers.Serializer):
    version = serializers.CharField()
    changed = serializers.ListField(child=serializers.CharField())
    operation = serializers.ChoiceField(choices=["put", "deliver"])
    author = serializers.CharField()
    provenance = serializers.DictField()
    note = serializers.CharField()
    createdAt = serializers.CharField()


class PlanHistorySerializer(serializers.Serializer):
    versions = PlanVersionSerializer(many=True)
    current = serializers.CharField(allow_null=True)


class DeliverResultSerializer(serializers.Serializer):
    version = serializers.CharField(help_text="the plan version of the delivery")
    building = serializers.DictField()
    model = serializers.DictField(allow_null=True, help_text="{modelId, version, format} of the main product: the IFC model, or a cad project's drawing")
