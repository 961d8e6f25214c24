from django.apps import AppConfig


class HindsightAppConfig(AppConfig):
    name = "memoryhub.integrations.hindsight"
    label = "hindsight"
    verbose_name = "Hindsight-compatible API"

    def ready(self) -> None:
        from memoryhub.core import project_settings
        from memoryhub.integrations.hindsight import conf, hooks

        project_settings.register(conf.SECTION, conf.hindsight_config)
        hooks.connect()
