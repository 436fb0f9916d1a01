"""Copies the dispatcher's migrations into the package while it is built.

The app applies the dispatcher's schema from outbox_events/sql/NNNN_*.sql
(outbox_events/schema.py). Those files live once, in the repository's top-level
sql/ folder, which is also what the dispatcher embeds; the wheel gets a copy of
them made here, at build time. The project's metadata is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

REPOSITORY_SQL = Path(__file__).resolve().parent.parent.parent / "sql"


def dispatcher_migrations():
    files = sorted(REPOSITORY_SQL.glob("[0-9]*.sql"))  # the dispatcher's CMake glob
    if not files:
        raise SystemExit(
            f"outbox-events: no dispatcher migrations (sql/NNNN_*.sql) in {REPOSITORY_SQL}; build the package "
            "from the dispatcher's repository (pip install path/to/outbox-dispatcher/examples/django), "
            "not from a copy of this folder"
        )
    return files


class build_py_with_migrations(build_py):
    """build_py, plus sql/NNNN_*.sql into outbox_events/sql/ of the build."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "outbox_events" / "sql"
        if target.exists():
            shutil.rmtree(target)  # a migration removed from sql/ must not linger in the wheel
        target.mkdir(parents=True)
        for source in dispatcher_migrations():
            shutil.copyfile(source, target / source.name)


setup(
    # Only the app: crm/, testproject/ and the scripts beside it are this folder's example project.
    packages=["outbox_events", "outbox_events.migrations"],
    package_data={"outbox_events": ["py.typed"]},
    cmdclass={"build_py": build_py_with_migrations},
)
