"""Thin Celery adapter: a mental model's refresh runs on the worker (it may call the LLM)."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError


@shared_task(
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=3,
    acks_late=True,
    ignore_result=True,
)
def mental_model_refresh(project_id: int, model_id: str) -> None:
    from memoryhub.integrations.hindsight import services
    from projects.models import Project

    project = Project.objects.filter(pk=project_id).first()
    if project is not None:
        services.mental_model_refresh(project=project, model_id=model_id)
