from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "memoryhub.core"
    label = "core"
    verbose_name = "MemoryHub core"
