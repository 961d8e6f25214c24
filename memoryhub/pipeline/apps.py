from django.apps import AppConfig


class PipelineConfig(AppConfig):
    name = "memoryhub.pipeline"
    label = "pipeline"
    verbose_name = "Memory pipeline (extraction, consolidation)"
