#!/usr/bin/env python3
"""Checks that what the docs and the comments point at exists:
  - every repository path (db/..., dispatcher/..., docs/..., ...) names a file
    or folder of the repository, or the start of some file's name
    (`providers/meta/meta_provider.*`, `sql/0004`);
  - every file name with a source extension (`settler.cpp`) is a file here;
  - every function written as `name()` or `a::name()` in backticks in docs/,
    or in a comment in the sources, is a name the sources, the SQL or the
    scripts define or use, or a known outside API (below);
  - no file names a path of a development machine (/work/..., /home/...).
Prints each offence as file:line and exits 1 if there is any.
    scripts/check_references.py
"""
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
TOPS = 'db|dispatcher|providers|tests|bench|scripts|sql|examples|docs|cmake|\\.ci'
PATH = re.compile(r'(?<![\w./$}-])((?:' + TOPS + r')/[\w./-]*[\w/])')
FILE_NAME = re.compile(r'(?<![\w./-])([a-z][\w-]*\.(?:cpp|hpp|py|sh|sql))\b')
FUNCTION = re.compile(r'`(?:[\w:]+::)?([A-Za-z_]\w*)\(\)`')
MACHINE_PATH = re.compile(r'(?<![\w.~$}-])/(?:work|farm|home|Users|mnt|workspace)/\w')
COMMENT = re.compile(r'(?://|#)\s(.*)$')
# Functions of libraries, PostgreSQL and the platforms that the docs name.
OUTSIDE = set('''
now clock_timestamp gen_random_uuid pg_notify pg_terminate_backend pg_cancel_backend pg_backend_pid
pg_current_wal_insert_lsn pg_stat_statements_reset pg_advisory_lock pg_advisory_xact_lock set_config
current_setting txid_current pg_try_advisory_lock pg_sleep count max min sum coalesce jsonb_build_object
to_jsonb random lower upper date_trunc extract age array_agg string_agg row_number
PQconsumeInput PQisBusy PQgetResult PQsendQueryParams PQflush PQconnectPoll PQsocket PQfinish PQexec
PQsetnonblocking PQpipelineSync PQenterPipelineMode PQnotifies PQstatus PQcancel PQsendQuery
async_read async_write async_read_some async_handshake async_shutdown async_connect async_resolve
co_spawn run io_context post dispatch get_executor cancel close expires_after
malloc_trim mallopt malloc free posix_spawn fork exec vfork wait4 waitpid poll epoll_wait dlopen dlsym
sha256 hexdigest lower strip normalize encode hashlib SHA256 HMAC EVP_Digest
enqueue_event enqueue_fanout main
'''.split())


def tracked_files():
    out = subprocess.run(['git', 'ls-files'], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split('\n') if f and os.path.isfile(os.path.join(ROOT, f))]


def read(rel):
    try:
        with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None


def main():
    files = tracked_files()
    names = {os.path.basename(f) for f in files}
    texts = {f: read(f) for f in files}
    code = '\n'.join(t for f, t in texts.items() if t and f.endswith(('.cpp', '.hpp', '.sql', '.py', '.sh', '.cmake')))
    known_functions = set(re.findall(r'\b([A-Za-z_]\w*)\s*\(', code)) | OUTSIDE
    offences = []
    for rel, text in texts.items():
        if text is None or rel.startswith('tests/fuzz/seeds/'):
            continue
        is_doc = rel.endswith('.md')
        is_source = rel.endswith(('.cpp', '.hpp', '.sh', '.py', '.cmake', '.txt', '.toml', '.yaml', '.yml', '.json'))
        for number, line in enumerate(text.split('\n'), 1):
            if MACHINE_PATH.search(line):
                offences.append(f'{rel}:{number}: names a path of a development machine')
            if not is_doc:
                m = COMMENT.search(line) if is_source else None
                line = m.group(1) if m else ''
            for p in PATH.findall(line):
                if '*' in p or '<' in p or 'NNNN' in p or p.endswith('...'):
                    continue
                stem = p.rstrip('.')
                # `providers/meta/meta_provider.*`, `sql/0004_...`, `tests/support/fake_*`: a stem is enough.
                if not os.path.exists(os.path.join(ROOT, stem)) and not any(
                        f.startswith(stem) and (stem[-1] in '_/' or f[len(stem):len(stem) + 1] in ('.', '_', '')) for f in files):
                    offences.append(f'{rel}:{number}: no such file or folder: {p}')
            for n in FILE_NAME.findall(line):
                if n not in names and not n.startswith(('my_', 'your_')):
                    offences.append(f'{rel}:{number}: no file is named {n}')
            if is_doc or is_source:
                for fn in FUNCTION.findall(line):
                    if fn not in known_functions:
                        offences.append(f'{rel}:{number}: no function {fn}() in the sources')
    for o in offences:
        print(o)
    if offences:
        print(f'check_references: {len(offences)} offence(s)', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
