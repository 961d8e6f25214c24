"""The web dashboard, namespace `web`. Project pages live under /p/<slug>/ and take `slug`."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy

from memoryhub.web.views import home, memories, project, review

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
    path("p/<slug:slug>/memories/", memories.memory_list, name="memories"),
    path("p/<slug:slug>/memories/<uuid:memory_id>/", memories.memory_detail, name="memory"),
    path("p/<slug:slug>/memories/<uuid:memory_id>/edit/", memories.memory_edit, name="memory_edit"),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/archive/",
        memories.memory_archive,
        name="memory_archive",
    ),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/stale/", memories.memory_stale, name="memory_stale"
    ),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/restore/",
        memories.memory_restore,
        name="memory_restore",
    ),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/approve/",
        memories.memory_approve,
        name="memory_approve",
    ),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/reject/",
        memories.memory_reject,
        name="memory_reject",
    ),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/promote/",
        memories.memory_promote,
        name="memory_promote",
    ),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/merge/", memories.memory_merge, name="memory_merge"
    ),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/similar/",
        memories.memory_similar,
        name="memory_similar",
    ),
    path(
        "p/<slug:slug>/memories/<uuid:memory_id>/delete/",
        memories.memory_delete,
        name="memory_delete",
    ),
    path("p/<slug:slug>/review/", review.review_queue, name="review"),
    path("p/<slug:slug>/review/bulk/", review.review_bulk, name="review_bulk"),
    path(
        "p/<slug:slug>/review/<uuid:memory_id>/approve/",
        review.review_approve,
        name="review_approve",
    ),
    path(
        "p/<slug:slug>/review/<uuid:memory_id>/reject/", review.review_reject, name="review_reject"
    ),
    path("p/<slug:slug>/review/<uuid:memory_id>/edit/", review.review_edit, name="review_edit"),
    # The other half of the dashboard (sessions, recall files, bank, members, settings…).
    path("", include("memoryhub.web.urls_admin")),
]
