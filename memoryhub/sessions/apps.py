from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "memoryhub.sessions"
    # "sessions" is django.contrib.sessions' label.
    label = "agent_sessions"
    verbose_name = "Agent sessions (transcripts)"
