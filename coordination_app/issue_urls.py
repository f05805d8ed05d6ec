"""Routes that turn a run's clashes into issues and a BCF report (coordination_app.issue_views)."""

api_urlpatterns = []
