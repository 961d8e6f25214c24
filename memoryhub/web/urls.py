"""The web dashboard, namespace `web`. Project pages live under /p/<slug>/ and take `slug`."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy

from memoryhub.web.views import home, project

app_name = "web"

urlpatterns = [
    path("", home.home, name="home"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(
            template_name="web/auth/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password/",
        auth_views.PasswordChangeView.as_view(
            template_name="web/auth/password_change.html",
            success_url=reverse_lazy("web:password_change_done"),
        ),
        name="password_change",
    ),
    path(
        "accounts/password/done/",
        auth_views.PasswordChangeDoneView.as_view(
            template_name="web/auth/password_change_done.html"
        ),
        name="password_change_done",
    ),
    path("p/<slug:slug>/", project.dashboard, name="project"),
    # The other half of the dashboard (sessions, recall files, bank, members, settings…).
    path("", include("memoryhub.web.urls_admin")),
]
