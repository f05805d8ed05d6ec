"""The Foundation API 1.0 (README of buildingSMART's foundation-API): versions, auth, current-user."""

from __future__ import annotations

from django.urls import reverse

from api.principal import Principal
from bcfapi_app.responses import BcfView, bare

FOUNDATION_SPEC = "https://github.com/buildingSMART/foundation-API/tree/release_1_0"
BCF_SPEC = "https://github.com/buildingSMART/BCF-API/tree/release_3_0"
SUPPORTED_FLOWS = ["authorization_code_grant"]  # no implicit or password grant (docs/api/bcf.md)


def api_base_url(request) -> str:
    """The BCF API's base URL as the client reached this server (a trusted proxy's prefix included)."""
    return request.build_absolute_uri(reverse("bcf-projects")).removesuffix("/projects")


class VersionsView(BcfView):
    def get(self, request):
        return bare({"versions": [
            {"api_id": "foundation", "version_id": "1.0", "detailed_version": FOUNDATION_SPEC},
            {"api_id": "bcf", "version_id": "3.0", "detailed_version": BCF_SPEC, "api_base_url": api_base_url(request)},
        ]})


class AuthView(BcfView):
    def get(self, request):
        return bare({
            "oauth2_auth_url": request.build_absolute_uri(reverse("oauth2-authorize")),
            "oauth2_token_url": request.build_absolute_uri(reverse("oauth2-token")),
            "http_basic_supported": False,
            "supported_oauth2_flows": SUPPORTED_FLOWS,
        })


class CurrentUserView(BcfView):
    def get(self, request):
        principal = Principal.of(request)
        return bare({"id": principal.name, "name": principal.display_name or principal.name})
