import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
application = get_wsgi_application()

# The web process answers small requests, one per thread: its linker computes on LINKER_WEB_THREADS threads (1 by
# default) so that a busy core elsewhere does not stall every request (linker.device.limit_threads says why).
from django.conf import settings  # noqa: E402 (after the application is set up)

from linker.device import limit_threads  # noqa: E402

limit_threads(settings.LINKER_WEB_THREADS)
