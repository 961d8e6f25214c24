from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memoryhub.memories"
    label = "memories"
    verbose_name = "Memory bank"
