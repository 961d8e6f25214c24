from django.apps import AppConfig


class PipelineConfig(AppConfig):
    name = "memoryhub.pipeline"
    label = "pipeline"
    verbose_name = "Memory pipeline (extraction, consolidation)"

    def ready(self) -> None:
        from memoryhub.core import project_settings
        from memoryhub.pipeline.conf import pipeline_config

        project_settings.register("pipeline", pipeline_config)
