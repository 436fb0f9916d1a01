#!/usr/bin/env python3
"""Django's command-line utility for the test project, e.g.

    PGHOST=... PGDATABASE=crm python3 examples/django/manage.py test crm outbox_events
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
