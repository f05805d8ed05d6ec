"""The gateway's routes with the topic routes of bcfapi_app/topic_urls.py, for the tests until bcfapi_app/urls.py
includes them (then this adds nothing)."""

from bcfapi_app import topic_urls, urls as bcfapi_urls
from viewer_gateway.urls import handler400, handler404, handler500, urlpatterns as gateway_urlpatterns  # noqa: F401

_included = any(getattr(pattern, "name", None) == "bcf-topics" or getattr(pattern, "urlconf_name", None) in (topic_urls, "bcfapi_app.topic_urls")
                for pattern in bcfapi_urls.urlpatterns)
urlpatterns = [*gateway_urlpatterns, *([] if _included else topic_urls.urlpatterns)]
