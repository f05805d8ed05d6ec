"""Routes of the Foundation API (foundation/...) and the BCF API 3.0 (bcf/3.0/...), mounted at the site root.

The OAuth2 endpoints are django-oauth-toolkit's views on their own paths (no app-management pages); who may call
each route is viewer_gateway/access_rules.py's. Topics and everything under them: bcfapi_app/topic_urls.py.
"""

from django.urls import path
from oauth2_provider.views import RevokeTokenView, TokenView

from accounts_app.oauth import ConsentView
from bcfapi_app import topic_urls
from bcfapi_app.foundation_views import AuthView, CurrentUserView, VersionsView
from bcfapi_app.project_views import ExtensionsView, ProjectDetailView, ProjectListView

PROJECT = topic_urls.PROJECT

urlpatterns = [
    path("foundation/versions", VersionsView.as_view(), name="bcf-versions"),
    path("foundation/1.0/auth", AuthView.as_view(), name="bcf-auth"),
    path("foundation/1.0/current-user", CurrentUserView.as_view(), name="bcf-current-user"),
    path("foundation/oauth2/authorize", ConsentView.as_view(), name="oauth2-authorize"),
    path("foundation/oauth2/token", TokenView.as_view(), name="oauth2-token"),
    path("foundation/oauth2/revoke", RevokeTokenView.as_view(), name="oauth2-revoke"),
    path("bcf/3.0/projects", ProjectListView.as_view(), name="bcf-projects"),
    path(PROJECT, ProjectDetailView.as_view(), name="bcf-project"),
    path(f"{PROJECT}/extensions", ExtensionsView.as_view(), name="bcf-extensions"),
    *topic_urls.urlpatterns,
]
