#!/usr/bin/env python3
"""Checks the architecture's include layering (docs/architecture.md, "Folders"):
which folder may include which, and that SQL lives only in db/ and sql/.
Prints each offence as file:line and exits 1 if there is any.
    scripts/check_layers.py
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
PLATFORMS = ('meta', 'tiktok', 'google', 'webhook')

# (folder, include prefixes it must not use, why)
RULES = [
    ('db/', ('dispatcher/', 'providers/', 'tests/'), 'db/ knows PostgreSQL only'),
    ('providers/', ('dispatcher/', 'db/', 'tests/'), 'providers/ know HTTP APIs, never the engine or SQL'),
    ('providers/http/', ('providers/user_data/',) + tuple(f'providers/{p}/' for p in PLATFORMS),
     'the HTTPS client serves every platform and knows none'),
    ('providers/user_data/', ('providers/http/',) + tuple(f'providers/{p}/' for p in PLATFORMS),
     'normalization knows no platform and no HTTP'),
] + [
    (f'providers/{p}/', tuple(f'providers/{q}/' for q in PLATFORMS if q != p), 'one platform never uses another')
    for p in PLATFORMS
] + [
    (f'dispatcher/{part}/', ('dispatcher/cli/',), 'the command line is built on the engine, never under it')
    for part in ('engine', 'config', 'ops')
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# A statement in a string literal: the engine and the providers leave SQL to db/.
SQL = re.compile(r'"[^"\n]*\b(SELECT\b[^"\n]*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b')


def sources(top):
    for base, _, names in os.walk(os.path.join(ROOT, top)):
        for name in sorted(names):
            if name.endswith(('.cpp', '.hpp')):
                path = os.path.join(base, name)
                yield os.path.relpath(path, ROOT), path


def main():
    offences = []
    for top in ('db', 'providers', 'dispatcher'):
        for rel, path in sources(top):
            with open(path, encoding='utf-8') as f:
                lines = f.read().split('\n')
            for number, line in enumerate(lines, 1):
                m = INCLUDE.match(line)
                if m:
                    for folder, banned, why in RULES:
                        if rel.startswith(folder) and m.group(1).startswith(banned):
                            offences.append(f'{rel}:{number}: includes "{m.group(1)}": {why}')
                if top != 'db' and SQL.search(line):
                    offences.append(f'{rel}:{number}: SQL outside db/: {line.strip()[:80]}')
    for o in offences:
        print(o)
    if offences:
        print(f'check_layers: {len(offences)} offence(s)', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
