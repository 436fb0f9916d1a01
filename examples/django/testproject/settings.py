"""The smallest Django project that uses outbox_events, for scenario.py, for
its own `manage.py test` (the `crm` app's tests and outbox_events' own) and for
the end-to-end tests (tests/e2e/django_e2e.cpp). Not a template for production
settings.

The database is taken from the standard libpq environment (what
scripts/with_postgres.sh exports and the tests set for their scratch database):
PGHOST (a host name or a socket directory), PGPORT, PGUSER, PGDATABASE,
PGPASSWORD. `manage.py test` creates and drops `test_<PGDATABASE>` on the same
server, building it from migrations: outbox_events' migration 0002 gives it the
dispatcher's schema.
"""

import os
from pathlib import Path

SECRET_KEY = "outbox-events-testproject-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "localhost"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "outbox_events",
    "crm",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "testproject.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
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

# The fan-out of enqueue_fanout(...) without providers. This is the built-in
# default, spelled out; a CRM names the destinations its dispatcher configures.
OUTBOX_EVENTS = {
    "DEFAULT_FANOUT": [("meta", "default"), ("tiktok", "default"), ("google_data_manager", "default")],
    # The app is used here straight from the repository, not installed: its
    # migrations are the repository's sql/ (an installed package carries a copy).
    "SCHEMA_DIR": Path(__file__).resolve().parent.parent.parent.parent / "sql",
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "/static/"
