"""Django's PostgreSQL backend with a health check that skips recently served connections
(see base.py). Settings select it as the ENGINE for every postgres:// DATABASE_URL."""
