from django.apps import AppConfig


class RecallConfig(AppConfig):
    name = "memoryhub.recall"
    label = "recall"
    verbose_name = "Recall (search, keyword hits, injection)"
