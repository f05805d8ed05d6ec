"""Thin HTTP layer of people and access (docs/api/accounts.md). Who may call each route was decided by the access
middleware (viewer_gateway/access.py) before the view runs; the use cases are accounts_app.services."""

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts_app import services
from accounts_app.serializers import (
    MemberRoleSerializer,
    MemberSerializer,
    MeSerializer,
    NewShareLinkSerializer,
    NewTokenSerializer,
    ShareLinkCreateSerializer,
    ShareLinkSerializer,
    TokenCreateSerializer,
    TokenSerializer,
    UserChangeSerializer,
    UserCreateSerializer,
    UserSerializer,
)
from api.envelope import error_response
from api.principal import Principal
from api.views import json_object, validated
from core.errors import TOO_MANY_REQUESTS

DELETED = OpenApiResponse(description="data: null")
NAMES = {"displayName": "display_name"}


class UsersView(APIView):
    @extend_schema(responses=UserSerializer(many=True), summary="Every account (server admins and the operator)")
    def get(self, request):
        return Response(UserSerializer(services.user_list(), many=True).data)

    @extend_schema(request=UserCreateSerializer, responses={200: UserSerializer, 409: OpenApiResponse(description="40900 the username exists")},
                   summary="Create an account; role admin also opens the Django admin")
    def post(self, request):
        fields = validated(UserCreateSerializer, json_object(request))
        user = services.user_create(Principal.of(request), **{NAMES.get(key, key): value for key, value in fields.items()})
        return Response(UserSerializer(user).data)


class UserDetailView(APIView):
    @extend_schema(responses=UserSerializer, summary="One account")
    def get(self, request, username):
        return Response(UserSerializer(services.user_get(username)).data)

    @extend_schema(request=UserChangeSerializer, responses={200: UserSerializer, 409: OpenApiResponse(description="40900 demoting the last admin")},
                   summary="Change an account's password, email, display name or server role (audited as user.role)")
    def patch(self, request, username):
        fields = validated(UserChangeSerializer, json_object(request))
        user = services.user_update(Principal.of(request), username, **{NAMES.get(key, key): value for key, value in fields.items()})
        return Response(UserSerializer(user).data)

    @extend_schema(responses={200: DELETED, 409: OpenApiResponse(description="40900 your own account, or the last admin")},
                   summary="Delete an account with its memberships and tokens (the records it signed keep its name)")
    def delete(self, request, username):
        services.user_delete(Principal.of(request), username)
        return Response(None)


class MeView(APIView):
    @extend_schema(responses=MeSerializer, summary="Who the caller is, and how it came (session, token, operator, share-link, open)")
    def get(self, request):
        return Response(MeSerializer(Principal.of(request)).data)


class TokensView(APIView):
    @extend_schema(responses=TokenSerializer(many=True), summary="The caller's personal API tokens (never their secrets)")
    def get(self, request):
        return Response(TokenSerializer(services.token_list(Principal.of(request).user_id), many=True).data)

    @extend_schema(
        request=TokenCreateSerializer,
        responses={200: NewTokenSerializer, 401: OpenApiResponse(description="40100 wrong username or password"),
                   429: OpenApiResponse(description="too many failed passwords for this username from this address (django-axes)")},
        summary="Make a personal API token for the signed-in caller, or for username + password; its secret is shown only here",
    )
    def post(self, request):
        fields = validated(TokenCreateSerializer, json_object(request))
        principal = Principal.of(request)
        # the Django request: django-axes marks a lockout on it, and its middleware answers that
        owner = services.token_owner(principal, request._request, username=fields["username"], password=fields["password"])
        token, secret = services.token_create(principal, owner, name=fields["name"], scope=fields["scope"], expires_at=fields["expiresAt"])
        return Response(NewTokenSerializer({"tokenId": token.id, "token": secret, "name": token.name, "scope": token.scope, "expiresAt": token.expires_at}).data)


class TokenDetailView(APIView):
    @extend_schema(responses={200: TokenSerializer, 404: OpenApiResponse(description="40400 no such token of the caller")},
                   summary="Revoke one of the caller's tokens")
    def delete(self, request, token_id):
        return Response(TokenSerializer(services.token_revoke(Principal.of(request), token_id)).data)


class ProjectMembersView(APIView):
    @extend_schema(responses=MemberSerializer(many=True), summary="The project's members and their roles")
    def get(self, request, project_id):
        return Response(MemberSerializer(services.member_list(project_id), many=True).data)


class ProjectMemberView(APIView):
    @extend_schema(request=MemberRoleSerializer, responses={200: MemberSerializer, 409: OpenApiResponse(description="40900 demoting the last owner")},
                   summary="Add a user to the project in a role, or change its role (owners)")
    def put(self, request, project_id, username):
        role = validated(MemberRoleSerializer, json_object(request))["role"]
        member, _created = services.member_set(project_id, username, role, by=Principal.of(request))
        return Response(MemberSerializer(member).data)

    @extend_schema(responses={200: DELETED, 409: OpenApiResponse(description="40900 removing the last owner")},
                   summary="Remove a member from the project (owners)")
    def delete(self, request, project_id, username):
        services.member_remove(project_id, username, by=Principal.of(request))
        return Response(None)


class ShareLinksView(APIView):
    @extend_schema(responses=ShareLinkSerializer(many=True), summary="The project's share links, revoked ones too (never their secrets)")
    def get(self, request, project_id):
        return Response(ShareLinkSerializer(services.share_link_list(project_id), many=True).data)

    @extend_schema(request=ShareLinkCreateSerializer, responses=NewShareLinkSerializer,
                   summary="Make a read-only link to the project or some of its models; its url (with the secret) is shown only here")
    def post(self, request, project_id):
        fields = validated(ShareLinkCreateSerializer, json_object(request))
        link, secret = services.share_link_create(project_id, expires_at=fields["expiresAt"], model_ids=fields["models"],
                                                  downloads=fields["downloads"], by=Principal.of(request))
        url = request.build_absolute_uri(reverse("share-open", args=[secret]))
        return Response(NewShareLinkSerializer(link, context={"url": url}).data)


class ShareLinkView(APIView):
    @extend_schema(responses=ShareLinkSerializer, summary="One share link of the project (without its secret)")
    def get(self, request, project_id, link_id):
        return Response(ShareLinkSerializer(services.share_link_get(project_id, link_id)).data)

    @extend_schema(responses=ShareLinkSerializer, summary="Revoke a share link: whoever opened it loses access at once")
    def delete(self, request, project_id, link_id):
        return Response(ShareLinkSerializer(services.share_link_revoke(project_id, link_id, by=Principal.of(request))).data)


def lockout_response(request, original_response=None, credentials=None):
    """django-axes' answer once a username is locked out from an address (settings.AXES_LOCKOUT_CALLABLE): the
    envelope 42900 on the API, the view's own page (the sign-in form and its message) with status 429 elsewhere."""
    if request.path_info.startswith("/api/"):
        return error_response(TOO_MANY_REQUESTS, "too many failed sign-ins for this username from this address: try again later")
    response = original_response or HttpResponse("too many failed sign-ins: try again later", content_type="text/plain")
    response.status_code = 429
    return response
