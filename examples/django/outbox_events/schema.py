"""The dispatcher's schema, applied from Django exactly as `dispatcher migrate` does.

The dispatcher embeds sql/NNNN_*.sql at build time and records each one it
applies in `outbox_schema_migrations` (name, SHA-256 of the file's text,
applied_at) under a PostgreSQL advisory lock (db/migrations.cpp). This module
applies the same files, in the same order, under the same lock, and records
them the same way, so either tool can go first and the other then finds
nothing to do. It runs from the outbox_events migration 0002, which is what
makes Django's test database (built from migrations) have the schema.

The files come from settings.OUTBOX_EVENTS["SCHEMA_DIR"], by default the
package's `outbox_events/sql/` folder: `pip install` builds the package from
the dispatcher's repository and setup.py copies its top-level `sql/` there, so
there is one copy of the text to edit. Used from the repository itself (not
installed), the app has no such folder: point SCHEMA_DIR at the top-level `sql/`
(testproject/settings.py does).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

from django.core.exceptions import ImproperlyConfigured

from . import conf

# The dispatcher's key for pg_advisory_lock ("outbox-migrate" as an integer):
# a transaction-level lock here and its session-level lock exclude each other.
MIGRATE_LOCK_KEY = 7310594112315183976

MIGRATIONS_TABLE = "outbox_schema_migrations"

# Byte for byte the table db/migrations.cpp creates.
_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS outbox_schema_migrations (
    name       text PRIMARY KEY,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""
# Tried in a loop, not waited for in one statement: a statement waiting for it
# holds a snapshot, which a `dispatcher migrate` building an index CONCURRENTLY
# under the lock waits for (a deadlock PostgreSQL would break by failing one).
_TRY_LOCK = "SELECT pg_try_advisory_xact_lock(%s)"
_LOCK_POLL_SECONDS = 0.25
_LOCK_WAIT_SECONDS = 3600
_LIST = "SELECT name, checksum FROM outbox_schema_migrations ORDER BY name"
_RECORD = "INSERT INTO outbox_schema_migrations (name, checksum) VALUES (%s, %s)"
_TABLE_EXISTS = "SELECT to_regclass('outbox_schema_migrations') IS NOT NULL"
_ESTIMATED_ROWS = "SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = to_regclass('event_delivery')"

# As db/migrations.cpp: a migration waits at most this long for a table lock
# (a waiting ALTER TABLE queues every CRM insert behind it), then steps back
# to its savepoint and tries again, LOCK_ATTEMPTS times.
LOCK_TIMEOUT = "2s"
LOCK_ATTEMPTS = 10
# A migration that rewrites event_delivery under ACCESS EXCLUSIVE is left to
# `dispatcher migrate` (a maintenance window) on a table larger than this.
REWRITING_MIGRATIONS = ("0007_hot_claim.sql",)
REWRITE_ROWS_WITHOUT_ASKING = 100_000
# The first line of a migration the dispatcher runs outside a transaction
# (CREATE INDEX CONCURRENTLY). Django's migration is one transaction, so here
# its statements run without CONCURRENTLY, which on an empty or small table
# (a new install, a test database) costs nothing.
NO_TRANSACTION_MARKER = "-- outbox:no-transaction"


@dataclass(frozen=True)
class DispatcherMigration:
    name: str  # the file name, e.g. "0001_event_delivery.sql"; the order is the name's
    sql: str
    checksum: str  # hex SHA-256 of the file's bytes, as the dispatcher records it


@dataclass
class SchemaReport:
    applied: List[str] = field(default_factory=list)  # by this call, in order
    already_applied: List[str] = field(default_factory=list)


def dispatcher_migrations(directory: Path | None = None) -> List[DispatcherMigration]:
    """The dispatcher's migrations in `directory` (default: the configured SCHEMA_DIR), in order."""
    directory = conf.schema_dir() if directory is None else directory
    # The dispatcher's CMake glob is sql/[0-9]*.sql, sorted.
    files = sorted(directory.glob("[0-9]*.sql")) if directory.is_dir() else []
    if not files:
        raise ImproperlyConfigured(
            f"no dispatcher migrations (NNNN_*.sql) in {directory}: install the app with pip from the "
            "dispatcher's repository (pip install --no-build-isolation path/to/outbox-dispatcher/examples/django "
            f"puts them in the package), or set settings.{conf.SETTING}['SCHEMA_DIR'] to the repository's sql/ folder"
        )
    found = []
    for path in files:
        data = path.read_bytes()
        found.append(DispatcherMigration(path.name, data.decode("utf-8"), hashlib.sha256(data).hexdigest()))
    return found


def applied_migrations(connection) -> List[str]:
    """Names recorded in outbox_schema_migrations (empty when the schema was never migrated)."""
    with connection.cursor() as cursor:
        cursor.execute(_TABLE_EXISTS)
        if not cursor.fetchone()[0]:
            return []
        cursor.execute(_LIST)
        return [name for name, _ in cursor.fetchall()]


def apply_dispatcher_schema(connection, migrations: List[DispatcherMigration] | None = None) -> SchemaReport:
    """Applies the migrations not recorded yet, in the caller's transaction.

    Raises RuntimeError when a recorded migration's checksum differs from the
    file (the dispatcher refuses that database too). Records the dispatcher
    knows and these files do not (a newer dispatcher migrated) are left alone.
    """
    migrations = dispatcher_migrations() if migrations is None else migrations
    report = SchemaReport()
    with connection.cursor() as cursor:
        _take_migrate_lock(cursor)
        cursor.execute(_CREATE_TABLE)
        cursor.execute(_LIST)
        recorded = dict(cursor.fetchall())
        for m in migrations:
            if m.name in recorded:
                if recorded[m.name] != m.checksum:
                    raise RuntimeError(
                        f"dispatcher migration {m.name} in the database differs from {m.name} in "
                        f"{conf.schema_dir()}: use the sql/ folder of the dispatcher version that migrated it"
                    )
                report.already_applied.append(m.name)
                continue
            _refuse_large_rewrite(cursor, m)
            _apply_with_lock_retries(connection, cursor, m)
            cursor.execute(_RECORD, [m.name, m.checksum])
            report.applied.append(m.name)
    return report


def _take_migrate_lock(cursor) -> None:
    deadline = time.monotonic() + _LOCK_WAIT_SECONDS
    while True:
        cursor.execute(_TRY_LOCK, [MIGRATE_LOCK_KEY])
        if cursor.fetchone()[0]:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("another `dispatcher migrate` held the dispatcher's migration lock for an hour")
        time.sleep(_LOCK_POLL_SECONDS)


def _statements(m: DispatcherMigration) -> str:
    """The text to execute: a no-transaction migration without CONCURRENTLY."""
    if not m.sql.startswith(NO_TRANSACTION_MARKER):
        return m.sql
    return m.sql.replace(" CONCURRENTLY", "")


def _refuse_large_rewrite(cursor, m: DispatcherMigration) -> None:
    if m.name not in REWRITING_MIGRATIONS:
        return
    cursor.execute(_ESTIMATED_ROWS)
    row = cursor.fetchone()
    rows = row[0] if row and row[0] is not None else 0
    if rows > REWRITE_ROWS_WITHOUT_ASKING:
        raise RuntimeError(
            f"dispatcher migration {m.name} rewrites event_delivery (about {rows / 1e6:.1f} million rows) under a "
            "lock that makes CRM inserts wait until it is done: run `dispatcher migrate` in a maintenance window "
            "(see the dispatcher's docs/operations.md, \"Upgrading\"), then run Django's migrate again"
        )


def _lock_not_granted(e: Exception) -> bool:
    """SQLSTATE 55P03 (lock_timeout), on psycopg2's error or on Django's wrapper of it."""
    return "55P03" in (getattr(e, "pgcode", None), getattr(e.__cause__, "pgcode", None))


def _apply_with_lock_retries(connection, cursor, m: DispatcherMigration) -> None:
    for attempt in range(1, LOCK_ATTEMPTS + 1):
        cursor.execute("SAVEPOINT outbox_migration")
        try:
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            # One execute with no parameters: psycopg2 sends the whole file as one
            # simple query, as the dispatcher does, so `%` and `$$` bodies pass as written.
            cursor.execute(_statements(m))
            cursor.execute("RELEASE SAVEPOINT outbox_migration")
            cursor.execute("SET LOCAL lock_timeout = DEFAULT")
            return
        except Exception as e:  # psycopg2's LockNotAvailable carries pgcode 55P03
            cursor.execute("ROLLBACK TO SAVEPOINT outbox_migration")
            if not _lock_not_granted(e):
                raise
            if attempt == LOCK_ATTEMPTS:
                raise RuntimeError(
                    f"dispatcher migration {m.name}: the lock on its table was not granted within {LOCK_TIMEOUT} "
                    f"in {LOCK_ATTEMPTS} tries (a long transaction holds it?); try again later"
                ) from e
            time.sleep(attempt)


def check_dispatcher_schema(connection, migrations: List[DispatcherMigration] | None = None) -> None:
    """Raises ImproperlyConfigured unless every migration is recorded (APPLY_SCHEMA False)."""
    migrations = dispatcher_migrations() if migrations is None else migrations
    recorded = set(applied_migrations(connection))
    missing = [m.name for m in migrations if m.name not in recorded]
    if missing:
        name = connection.settings_dict.get("NAME")
        raise ImproperlyConfigured(
            f"database {name!r} lacks the dispatcher's migration(s) {', '.join(missing)}: run `dispatcher migrate` "
            f"against it first, or set settings.{conf.SETTING}['APPLY_SCHEMA'] = True to let Django apply them"
        )
