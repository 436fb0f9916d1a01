#!/usr/bin/python3
"""Parses every Data Manager events:ingest body the tests sent against Google's
official v1 protos, refusing unknown fields, as Google's own JSON parser does.

The protos come from Google's npm client, pinned below: @google-ads/datamanager
ships google/ads/datamanager/v1/*.proto, and google-gax the google/api/*.proto
they import. They are fetched once with `npm pack` into CACHE_DIR, compiled with
protoc (Debian's protobuf-compiler) into a descriptor set, and each body is read
with python3-protobuf's json_format.Parse into an IngestEventsRequest.

  scripts/check_datamanager_protos.py BODY_DIR CACHE_DIR

BODY_DIR holds the bodies fake_google kept (OUTBOX_DM_BODY_DIR, one file each).
With OUTBOX_REQUIRE_DM_BODIES=1 (the test command) an empty BODY_DIR fails: the
whole suite sends many. Exit 0 when every body parses, 1 otherwise.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

PACKAGES = ["@google-ads/datamanager@0.3.0", "google-gax@5.0.6"]
REQUEST = "google.ads.datamanager.v1.IngestEventsRequest"
ENTRY_PROTO = "google/ads/datamanager/v1/ingestion_service.proto"


def fetch_protos(cache: pathlib.Path) -> list[pathlib.Path]:
    """Each package's build/protos folder, packed once by npm and unpacked here."""
    roots = []
    for spec in PACKAGES:
        package, version = spec.rsplit("@", 1)
        name = package.lstrip("@").replace("/", "-")
        root = cache / f"{name}-{version}"
        if not (root / "build" / "protos").is_dir():
            tgz = cache / f"{name}-{version}.tgz"
            if not tgz.exists():
                cache.mkdir(parents=True, exist_ok=True)
                subprocess.run(["npm", "pack", "--silent", spec, "--pack-destination", str(cache)],
                               check=True, stdout=subprocess.DEVNULL, timeout=600)
            unpacked = cache / f"{name}-{version}.tmp"
            shutil.rmtree(unpacked, ignore_errors=True)
            with tarfile.open(tgz) as t:
                members = [m for m in t.getmembers()
                           if m.name.startswith("package/build/protos/") and m.isfile()]
                t.extractall(unpacked, members=members)
            shutil.rmtree(root, ignore_errors=True)
            (unpacked / "package").rename(root)
            shutil.rmtree(unpacked, ignore_errors=True)
        roots.append(root / "build" / "protos")
    return roots


def request_class(cache: pathlib.Path):
    desc = cache / "datamanager-v1.desc"
    if not desc.exists():
        includes = [f"-I{r}" for r in fetch_protos(cache)] + ["-I/usr/include"]
        subprocess.run(["protoc", *includes, "--include_imports", f"--descriptor_set_out={desc}", ENTRY_PROTO],
                       check=True)
    files = descriptor_pb2.FileDescriptorSet.FromString(desc.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    descriptor = pool.FindMessageTypeByName(REQUEST)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    bodies = sorted(pathlib.Path(sys.argv[1]).glob("*.json"))
    request = request_class(pathlib.Path(sys.argv[2]))
    # The check itself: a field the protos do not have must be refused.
    try:
        json_format.Parse('{"events": [{"eventSourceX": "WEB"}]}', request())
        print("check_datamanager_protos: an unknown field was accepted: the check is broken", file=sys.stderr)
        return 1
    except json_format.ParseError:
        pass
    refused = []
    for body in bodies:
        try:
            json_format.Parse(body.read_text(encoding="utf-8"), request())
        except (json_format.ParseError, UnicodeDecodeError) as e:
            refused.append(f"{body.name}: {e}")
    for line in refused:
        print("refused by the v1 protos:", line)
    print(f"check_datamanager_protos: {len(bodies)} events:ingest bodies read, {len(refused)} refused "
          f"(protos of {', '.join(PACKAGES)})")
    if not bodies and os.environ.get("OUTBOX_REQUIRE_DM_BODIES") == "1":
        print("check_datamanager_protos: no body was kept: is OUTBOX_DM_BODY_DIR passed to the tests?",
              file=sys.stderr)
        return 1
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
