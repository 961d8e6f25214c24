from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from accounts.models import User
from memoryhub.memories.kinds import Kind, Scope
from memoryhub.memories.models import Memory, content_hash
from projects.models import Project, ProjectMembership, Role


class UserFactory(DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("correct horse battery staple")


class ProjectFactory(DjangoModelFactory[Project]):
    class Meta:
        model = Project

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda p: p.slug.title())


class MembershipFactory(DjangoModelFactory[ProjectMembership]):
    class Meta:
        model = ProjectMembership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER


class MemoryFactory(DjangoModelFactory[Memory]):
    """Inserts rows directly: for arranging state only; tests of writes go through the API."""

    class Meta:
        model = Memory

    project = factory.SubFactory(ProjectFactory)
    scope = Scope.PROJECT
    kind = Kind.FACT
    content = factory.Sequence(lambda n: f"Fact number {n}: the build uses make.")
    created_via = Memory.Via.USER
    content_hash = factory.LazyAttribute(lambda m: content_hash(m.content))
