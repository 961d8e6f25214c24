import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

application = get_wsgi_application()
# Everything loaded so far lives as long as the process: keep the collector from rescanning it
# (full collections otherwise add ~100 ms spikes to request latency).
gc.freeze()
