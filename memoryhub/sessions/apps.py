from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "memoryhub.sessions"
    # The one place where the package (memoryhub.sessions) and its app label differ: the label
    # "sessions" belongs to django.contrib.sessions (browser logins), so this app's models,
    # tables and migrations are "agent_sessions" (AgentSession, agent_sessions_sessionrecord).
    label = "agent_sessions"
    verbose_name = "Agent sessions (transcripts)"

    def ready(self) -> None:
        from memoryhub.core import project_settings
        from memoryhub.sessions.conf import session_config

        project_settings.register("sessions", session_config)
