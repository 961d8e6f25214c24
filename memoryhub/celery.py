"""The Celery application: configuration comes from Django settings (CELERY_* names)."""

import os

from celery import Celery

from memoryhub.core import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
broker.register()  # the filesystem transport that stops promptly (core/broker.py says why)

app = Celery("memoryhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
