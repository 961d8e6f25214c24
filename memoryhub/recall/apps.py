from django.apps import AppConfig


class RecallAppConfig(AppConfig):
    name = "memoryhub.recall"
    label = "recall"
    verbose_name = "Recall (search, keyword hits, injection)"

    def ready(self) -> None:
        from memoryhub.core import project_settings
        from memoryhub.recall.conf import recall_config

        project_settings.register("recall", recall_config)
