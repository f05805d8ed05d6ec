"""Routes of clash tests, runs and clashes (coordination_app.views); included before plans_app's catch-all
projects/<project_id>/<name>."""

api_urlpatterns = []
