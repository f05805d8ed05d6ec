from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from models_app import trash_services
from models_app.models import IfcModel
from models_app.serializers import ModelSerializer, ProjectSerializer, TrashItemSerializer
from api.principal import Principal
from models_app.access_scopes import deletions_owned_by

NOT_IN_TRASH = OpenApiResponse(description="40400: no trash item with this id (also an id that is not m_/p_ + 16 hex)")
OF_A_TRASHED_PROJECT = OpenApiResponse(description="40900: a model of a project in the trash (restore or purge the project)")


class TrashListView(APIView):
    @extend_schema(responses=TrashItemSerializer(many=True), summary="Deleted models and projects in the trash, most recently deleted first")
    def get(self, request):
        items = deletions_owned_by(Principal.of(request), trash_services.trash_list())
        return Response(TrashItemSerializer(items, many=True).data)


class TrashRestoreView(APIView):
    @extend_schema(
        request=None,
        responses={
            200: PolymorphicProxySerializer(component_name="RestoredRecord", serializers=[ModelSerializer, ProjectSerializer], resource_type_field_name=None),
            404: NOT_IN_TRASH, 409: OF_A_TRASHED_PROJECT,
        },
        summary="Restore a model (its Model record) or a project with its models, session and plans (its Project record); same id",
    )
    def post(self, request, item_id):
        restored = trash_services.trash_restore(item_id, by=Principal.of(request))
        serializer = ModelSerializer if isinstance(restored, IfcModel) else ProjectSerializer
        return Response(serializer(restored).data)


class TrashItemView(APIView):
    @extend_schema(
        responses={200: OpenApiResponse(description="data: null"), 404: NOT_IN_TRASH, 409: OF_A_TRASHED_PROJECT},
        summary="Purge now: files and records removed for good; the change log and the deletion record stay",
    )
    def delete(self, request, item_id):
        trash_services.trash_purge(item_id, by=Principal.of(request))
        return Response(None)
