from django.apps import AppConfig


class InterchangeConfig(AppConfig):
    name = "memoryhub.interchange"
    verbose_name = "Import and export of the seeds' memory formats"
