from django.apps import AppConfig


class EmbeddingsConfig(AppConfig):
    name = "memoryhub.embeddings"
    label = "embeddings"
    verbose_name = "Memory embeddings"
