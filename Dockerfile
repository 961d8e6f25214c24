# MemoryHub production image: one image for web (default CMD), migrate, worker and beat.
FROM python:3.13-slim

# PYTHONPATH: pip also installs a copy of the packages into site-packages; /app must win so
# that BASE_DIR (templates/, var/) is /app for gunicorn, celery and manage.py alike.
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    MEMORYHUB_VAR_DIR=/app/var

RUN useradd --system --user-group --uid 10001 --home-dir /app --no-create-home memoryhub

WORKDIR /app
# The whole context (filtered by .dockerignore), so optional dirs like templates/ need no COPY line.
COPY . .
# Code stays root-owned (read-only for the app); only var/ is writable. A named volume mounted
# on /app/var starts as a copy of this directory, ownership included.
RUN pip install --no-cache-dir . \
    && mkdir -p var \
    && chown memoryhub:memoryhub var

USER memoryhub
# Dummy key: settings needs one to import, and it must not write var/secret_key into the image.
RUN SECRET_KEY=collectstatic-build-only python manage.py collectstatic --noinput --verbosity 0

EXPOSE 8000
# sh -c so ${WEB_CONCURRENCY:-3} expands; exec so gunicorn is PID 1 and gets SIGTERM.
# memoryhub.asgi serves Django and the MCP endpoint (/mcp) from the same workers.
CMD ["sh", "-c", "exec gunicorn memoryhub.asgi:application --worker-class uvicorn_worker.UvicornWorker --bind 0.0.0.0:8000 --workers \"${WEB_CONCURRENCY:-3}\" --graceful-timeout 10 --access-logfile -"]
