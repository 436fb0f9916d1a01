#!/usr/bin/env python3
"""Checks that the image's runtime stage installs every shared library a file needs.

    scripts/check_runtime_libs.py [--dockerfile PATH] [--also PACKAGE]... FILE...

For each FILE (the dispatcher, its user data module) `ldd` names the libraries
it loads; `dpkg -S` names the package each comes from. That package must be in
the runtime stage's image: one of the packages its `apt-get install` names, one
they depend on (Depends and Pre-Depends, followed through every level), or one
of the base image's (debian:12-slim holds Debian's Essential and required
packages, and what they depend on). Prints one line per library; exits 1 naming
each library no such package provides, 2 when the input cannot be read.

--also names a package the check counts as installed too: a sanitizer build's
runtimes (libasan8, libubsan1), which the image's Release build never needs.

Reads the package database of this machine (dpkg-query): the files must have
been built here against the same Debian release as the image.
"""
import argparse
import os
import re
import subprocess
import sys


def runtime_packages(dockerfile):
    """The packages the last stage's RUN instructions install with apt-get."""
    text = open(dockerfile, encoding="utf-8").read().replace("\\\n", " ")
    stages = re.split(r"(?im)^FROM\s", text)
    last = stages[-1]
    packages = set()
    for line in last.splitlines():
        if not line.lstrip().upper().startswith("RUN "):
            continue
        for command in re.split(r"&&|;", line):
            words = command.split()
            if "apt-get" not in words or "install" not in words:
                continue
            for w in words[words.index("install") + 1:]:
                if not w.startswith("-"):
                    packages.add(w)
    return packages


def dpkg_fields():
    """Every installed package's dependencies, and the base image's seeds."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package}\t${Essential}\t${Priority}\t${Pre-Depends}, ${Depends}\t${Provides}\n"],
        check=True, capture_output=True, text=True).stdout
    depends, base, provided_by = {}, set(), {}
    for line in out.splitlines():
        name, essential, priority, deps, provides = (line.split("\t") + [""] * 5)[:5]
        alternatives = []
        for clause in deps.split(","):
            choice = [re.sub(r"[\s:(].*", "", a.strip()) for a in clause.split("|") if a.strip()]
            if choice:
                alternatives.append(choice)
        depends[name] = alternatives
        for p in provides.split(","):
            p = re.sub(r"[\s(].*", "", p.strip())
            if p:
                provided_by.setdefault(p, set()).add(name)
        if essential == "yes" or priority == "required":
            base.add(name)
    return depends, base, provided_by


def closure(seeds, depends, provided_by):
    """The seeds and everything they need, every installed alternative included."""
    seen, todo = set(), list(seeds)
    while todo:
        name = todo.pop()
        for real in {name} | provided_by.get(name, set()):
            if real in seen or real not in depends:
                continue
            seen.add(real)
            for choice in depends[real]:
                todo.extend(choice)
    return seen


def needed_libraries(path):
    """(soname, resolved path or None) for every library ldd lists."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check_runtime_libs: ldd {path} failed: {r.stderr.strip()}")
    libs = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
        if m:
            libs.append((m.group(1), None if m.group(2) == "not" else m.group(2)))
    return libs


def candidates(path):
    """`path` as given and resolved, each with and without /usr (merged /usr)."""
    out = []
    for p in (path, os.path.realpath(path)):
        out += [p, p[len("/usr"):] if p.startswith("/usr/") else "/usr" + p]
    return out


def owners(paths):
    """The package that installed each path, from one dpkg-query call (one per path takes seconds)."""
    wanted = sorted({c for p in paths for c in candidates(p)})
    # Exit status 1 when some candidate is nobody's, which is expected: the lines found are what count.
    r = subprocess.run(["dpkg-query", "-S", *wanted], capture_output=True, text=True)
    found = {}
    for line in r.stdout.splitlines():
        packages, _, file = line.partition(": ")
        found.setdefault(file.strip(), packages.split(",")[0].split(":")[0].strip())
    result = {}
    for p in paths:
        result[p] = next((found[c] for c in candidates(p) if c in found), None)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dockerfile", default=os.path.join(os.path.dirname(__file__), "..", "Dockerfile"))
    parser.add_argument("--also", action="append", default=[], metavar="PACKAGE",
                        help="count this package as installed (a sanitizer build's runtimes)")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    try:
        installs = runtime_packages(args.dockerfile)
    except OSError as e:
        print(f"check_runtime_libs: {e}", file=sys.stderr)
        return 2
    depends, base, provided_by = dpkg_fields()
    image = closure(installs | set(args.also), depends, provided_by) | closure(base, depends, provided_by)
    print(f"runtime stage installs: {' '.join(sorted(installs))}")
    missing = []
    libraries = {f: needed_libraries(f) for f in args.files}
    package_of = owners([path for libs in libraries.values() for _, path in libs if path])
    for f in args.files:
        for soname, path in libraries[f]:
            package = package_of.get(path) if path else None
            if package and package in image:
                print(f"ok {os.path.basename(f)}: {soname} from {package}")
            else:
                missing.append(f"{os.path.basename(f)}: {soname} ({'package ' + package if package else 'no package'}"
                               " is not installed by the runtime stage)")
    for m in missing:
        print(f"MISSING {m}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
