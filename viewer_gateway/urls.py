from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from accounts_app import audit_urls
from accounts_app import urls as accounts_urls
from accounts_app.pages import urls as account_page_urls
from bcfapi_app import urls as bcfapi_urls
from chat_app import urls as chat_urls
from viewer_gateway.account_views import CapabilitiesView
from viewer_gateway.web_client import WebClientView
from checks_app import urls as checks_urls
from coordination_app import issue_urls as clash_issue_urls
from coordination_app import urls as coordination_urls
from plans_app import urls as plans_urls
from issues_app import urls as issues_urls
from models_app import urls as models_urls

handler400 = "api.envelope.bad_request_view"
handler404 = "api.envelope.not_found_view"
handler500 = "api.envelope.server_error_view"

api_v1 = [
    *models_urls.api_urlpatterns,
    *issues_urls.api_urlpatterns,
    *chat_urls.api_urlpatterns,
    *accounts_urls.api_urlpatterns,  # before plans: projects/<id>/<name> would take projects/<id>/members
    *account_page_urls.api_urlpatterns,
    *audit_urls.api_urlpatterns,
    path("auth/capabilities", CapabilitiesView.as_view(), name="auth-capabilities"),
    *checks_urls.api_urlpatterns,  # before plans: projects/<id>/<name> would take projects/<id>/ids
    *coordination_urls.api_urlpatterns,  # before plans: projects/<id>/<name> would take projects/<id>/clash-tests
    *clash_issue_urls.api_urlpatterns,
    *plans_urls.api_urlpatterns,
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    # the split view serves its start script as a file (docs?script): no inline script under the page's CSP
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="openapi"), name="docs"),
]

urlpatterns = [
    path("", WebClientView.as_view(), name="web-client"),
    path("api/v1/", include(api_v1)),
    path("v1/", include(models_urls.static_urlpatterns + issues_urls.static_urlpatterns)),
    path("admin/", admin.site.urls),
    path("oidc/", include("mozilla_django_oidc.urls")),
    *bcfapi_urls.urlpatterns,  # foundation/... and bcf/3.0/...: BCF clients are given the site root as base URL
    *account_page_urls.page_urlpatterns,
]
