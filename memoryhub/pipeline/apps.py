from django.apps import AppConfig


class PipelineAppConfig(AppConfig):
    name = "memoryhub.pipeline"
    label = "pipeline"
    verbose_name = "Memory pipeline (extraction, consolidation)"

    def ready(self) -> None:
        from memoryhub.core import project_settings
        from memoryhub.pipeline.conf import pipeline_config, review_required

        project_settings.register("pipeline", pipeline_config)
        project_settings.register("review_required", review_required)
