from django.urls import path

from accounts_app.pages.views import PasswordChangeView, ShareOpenView, SignInView, SignOutView

page_urlpatterns = [
    path("sign-in", SignInView.as_view(), name="sign-in"),
    path("sign-out", SignOutView.as_view(), name="sign-out"),
    path("s/<str:secret>", ShareOpenView.as_view(), name="share-open"),
]

api_urlpatterns = [
    path("auth/password", PasswordChangeView.as_view(), name="auth-password"),
]
