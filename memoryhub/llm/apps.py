from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "memoryhub.llm"
    label = "llm"
    verbose_name = "LLM providers"

    def ready(self) -> None:
        from memoryhub.core import project_settings
        from memoryhub.llm.config import check_project_settings

        project_settings.register("llm", check_project_settings)
