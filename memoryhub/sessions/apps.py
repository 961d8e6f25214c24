from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "memoryhub.sessions"
    # "sessions" is django.contrib.sessions' label.
    label = "agent_sessions"
    verbose_name = "Agent sessions (transcripts)"

    def ready(self) -> None:
        from memoryhub.core import project_settings
        from memoryhub.sessions.conf import session_config

        project_settings.register("sessions", session_config)
