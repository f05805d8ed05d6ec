"""The pages of accounts (sign in, sign out, open a share link) and the password change. The pages are plain Django
views (HTML forms under Django's CSRF protection); the password change is an API route like the others."""

from __future__ import annotations

from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import login, logout
from django.contrib.auth.forms import AuthenticationForm
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts_app.identity import share_link_principal
from accounts_app.mode import accounts_enabled
from accounts_app.models import ShareLink
from accounts_app.pages.password_change import change_password, lockout_message, locked_out
from accounts_app.secrets import SHARE_COOKIE
from api.principal import Principal
from api.views import json_object, validated


def single_sign_on_name() -> str | None:
    """The provider's name for "Sign in with <name>", or None when no OpenID Connect issuer is configured."""
    if not getattr(settings.VIEWER, "oidcIssuer", ""):
        return None
    return getattr(settings.VIEWER, "oidcName", "") or "single sign-on"


def safe_next(request, candidate: str | None) -> str:
    """Where to go after signing in: a path of this gateway, never another site (an open redirect)."""
    if candidate and url_has_allowed_host_and_scheme(candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return candidate
    return "/"


class SignInView(View):
    template_name = "accounts/sign_in.html"

    def page(self, request, form, next_url: str, *, error: str = "", status: int = 200):
        sso_name = single_sign_on_name()
        return render(request, self.template_name, {
            "form": form, "next": next_url, "error": error, "sso_name": sso_name,
            "sso_url": f"/oidc/authenticate/?next={quote(next_url, safe='/')}" if sso_name else "",
        }, status=status)

    def get(self, request):
        next_url = safe_next(request, request.GET.get("next"))
        if not accounts_enabled() and single_sign_on_name() is None:
            # the web client asks this page whether there is anyone to sign in as; without accounts it asks for the
            # operator's token instead
            return render(request, "accounts/message.html", {
                "title": "No accounts", "message": "This gateway has no accounts: it is opened with its operator's API token.",
            }, status=404)
        if request.user.is_authenticated:
            return redirect(next_url)
        failed = "Single sign-on failed: try again, or sign in with your password." if request.GET.get("sso") == "failed" else ""
        return self.page(request, AuthenticationForm(request), next_url, error=failed)

    def post(self, request):
        next_url = safe_next(request, request.POST.get("next"))
        form = AuthenticationForm(request, data=request.POST)
        valid = form.is_valid()  # authenticate(request=..., ...): django-axes counts and locks out here
        if locked_out(request):
            return self.page(request, AuthenticationForm(request), next_url, error=lockout_message(), status=429)
        if not valid:
            return self.page(request, form, next_url, error="The user name or the password is wrong.", status=400)
        login(request, form.get_user())
        return redirect(next_url)


class SignOutView(View):
    def post(self, request):
        logout(request)
        response = redirect("/sign-in")
        response.delete_cookie(SHARE_COOKIE)
        return response


class ShareOpenView(View):
    def get(self, request, secret: str):
        principal = share_link_principal(secret, request.META.get("REMOTE_ADDR", ""))
        if principal is None:
            return render(request, "accounts/message.html", {
                "title": "Link not valid",
                "message": "This share link is not valid: it has expired, was revoked, or was never made. Ask the "
                           "project's owner for a new one.",
            }, status=404)
        grant = principal.share
        expires_at = ShareLink.objects.values_list("expires_at", flat=True).get(pk=grant.link_id)
        target = f"/#model={grant.model_ids[0]}" if grant.model_ids else f"/#project={grant.project_id}"
        response = redirect(target)
        response.set_cookie(SHARE_COOKIE, secret, max_age=max(1, int((expires_at - timezone.now()).total_seconds())),
                            httponly=True, samesite="Lax", secure=request.is_secure())
        return response


class PasswordChangeSerializer(serializers.Serializer):
    oldPassword = serializers.CharField(trim_whitespace=False, allow_blank=True, max_length=4096)
    newPassword = serializers.CharField(trim_whitespace=False, allow_blank=True, max_length=4096)


class PasswordChangeView(APIView):
    def post(self, request):
        body = validated(PasswordChangeSerializer, json_object(request))
        change_password(request._request, Principal.of(request), body["oldPassword"], body["newPassword"])
        return Response({"changed": True})
