from django.urls import path

from accounts_app import views

# Before plans_app's "projects/<project_id>/<name>", which would take "projects/{id}/members" for a plan file.
api_urlpatterns = [
    path("users", views.UsersView.as_view(), name="users"),
    path("users/<str:username>", views.UserDetailView.as_view(), name="user-detail"),
    path("auth/me", views.MeView.as_view(), name="auth-me"),
    path("auth/tokens", views.TokensView.as_view(), name="auth-tokens"),
    path("auth/tokens/<str:token_id>", views.TokenDetailView.as_view(), name="auth-token-detail"),
    path("projects/<str:project_id>/members", views.ProjectMembersView.as_view(), name="project-members"),
    path("projects/<str:project_id>/members/<str:username>", views.ProjectMemberView.as_view(), name="project-member"),
    path("projects/<str:project_id>/share-links", views.ShareLinksView.as_view(), name="share-links"),
    path("projects/<str:project_id>/share-links/<str:link_id>", views.ShareLinkView.as_view(), name="share-link"),
]
