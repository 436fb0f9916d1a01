"""The smallest Django project that uses outbox_events, for scenario.py and the
end-to-end test (tests/e2e/django_e2e.cpp). Not a template for production
settings.

The database is taken from the standard libpq environment (what
scripts/with_postgres.sh exports and the test sets for its scratch database):
PGHOST (a host name or a socket directory), PGPORT, PGUSER, PGDATABASE,
PGPASSWORD.
"""

import os

SECRET_KEY = "outbox-events-testproject-not-secret"
DEBUG = False
ALLOWED_HOSTS = []

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "outbox_events",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
        "USER": os.environ.get("PGUSER", ""),
        "PASSWORD": os.environ.get("PGPASSWORD", ""),
        "NAME": os.environ.get("PGDATABASE", "postgres"),
        # Django's default: every query outside transaction.atomic() commits on its own.
        "ATOMIC_REQUESTS": False,
    },
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
