"""The project navigation. Pages of the other half of the dashboard appear once their URL name
reverses; until then they are skipped, so either half can land first."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from projects.models import Role
from projects.selectors import ProjectAccess


@dataclass(frozen=True)
class NavItem:
    name: str  # URL name in the `web` namespace; every project page takes `slug`
    label: str | Promise
    min_role: Role = Role.VIEWER


PROJECT_NAV = (
    NavItem("project", _("Dashboard")),
    NavItem("review", _("Review"), Role.MEMBER),  # members: their own private proposals
    NavItem("memories", _("Memories")),
    NavItem("sessions", _("Sessions")),
    NavItem("recall_files", _("Recall files")),
    NavItem("instructions", _("Instructions")),
    NavItem("preview", _("Injection preview")),
    NavItem("bank", _("Bank")),
    NavItem("interchange", _("Import / export")),
    NavItem("members", _("Members & tokens")),
    NavItem("settings", _("Settings"), Role.MAINTAINER),
)


@dataclass(frozen=True)
class NavLink:
    name: str
    label: str | Promise
    url: str


def project_nav(access: ProjectAccess) -> list[NavLink]:
    links = []
    for item in PROJECT_NAV:
        if not access.at_least(item.min_role):
            continue  # no link to a page that would answer 403
        try:
            url = reverse(f"web:{item.name}", kwargs={"slug": access.project.slug})
        except NoReverseMatch:
            continue
        links.append(NavLink(item.name, item.label, url))
    return links
