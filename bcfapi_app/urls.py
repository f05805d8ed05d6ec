"""Routes of the Foundation API (foundation/...) and the BCF API 3.0 (bcf/3.0/...), mounted at the site root."""

urlpatterns = []
