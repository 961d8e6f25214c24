from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "memoryhub.llm"
    label = "llm"
    verbose_name = "LLM providers"
