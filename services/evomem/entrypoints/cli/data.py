"""``evomem-admin`` commands that move a memory: export, import, migrate, backup, restore.

evomem-admin export [--from STORE] [--out FILE]       JSONL: every node, chain, link, audit row
evomem-admin import FILE [--to STORE]                 idempotent; ids kept; reports what it skipped
evomem-admin migrate [--to STORE]                     apply the schema migrations the store lacks
evomem-admin migrate --from STORE --to STORE          copy every record across (a progress bar)
evomem-admin backup --out FILE [--from STORE]         SQLite: the online backup API (while it runs);
                                                      PostgreSQL: pg_dump --format=custom
evomem-admin restore FILE [--to STORE] [--force]      the reverse (SQLite: stop the server first)

STORE is ``sqlite:///path/to/evomem.db`` (or a path) or ``postgresql://USER:PASSWORD@HOST/DB``;
left out, the store the server would open (EVOMEM_DATABASE_URL, else EVOMEM_DB, else
~/.evomem/evomem.db). A bad file or store is one line and status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evomem.settings import EMBEDDED_DB, Settings


def add_commands(sub: Any) -> None:
    export = sub.add_parser("export", help="write every record of a store as JSONL")
    export.add_argument("--from", dest="source", help="the store (default: the server's)")
    export.add_argument("--out", default="-", help="the file (default: standard output)")
    imp = sub.add_parser("import", help="read an export into a store (idempotent; ids kept)")
    imp.add_argument("file", help="the export (JSONL); - for standard input")
    imp.add_argument("--to", dest="target", help="the store (default: the server's)")
    mig = sub.add_parser("migrate", help="apply schema migrations, or copy a store into another")
    mig.add_argument("--from", dest="source", help="copy every record of this store ...")
    mig.add_argument("--to", dest="target", help="... into this one (alone: migrate its schema)")
    mig.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    backup = sub.add_parser("backup", help="a consistent copy of a store while its server runs")
    backup.add_argument("--from", dest="source", help="the store (default: the server's)")
    backup.add_argument("--out", required=True, help="the backup file")
    backup.add_argument("--pg-dump", default="pg_dump", help="PostgreSQL: the pg_dump to run (17 or newer)")
    restore = sub.add_parser("restore", help="put a backup back (SQLite: with the server stopped)")
    restore.add_argument("file", help="the backup file")
    restore.add_argument("--to", dest="target", help="the store (default: the server's)")
    restore.add_argument("--force", action="store_true", help="SQLite: replace an existing file")
    restore.add_argument("--pg-restore", default="pg_restore", help="PostgreSQL: the pg_restore to run")


def default_location() -> str:
    settings = Settings.from_env()
    return settings.database_url() or settings.db_path(EMBEDDED_DB)


def is_postgres(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


@contextlib.contextmanager
def opened(location: str | None) -> Iterator[Any]:
    from evomem.bootstrap.stores import open_location

    store = open_location(location or default_location())
    try:
        yield store
    finally:
        store.close()


def run(args: argparse.Namespace) -> int:
    """One data command; its exit status. Errors are one line on stderr and status 2."""
    from evomem.domain.errors import EvoMemError
    from evomem.settings import SettingsError

    try:
        return {"export": export, "import": import_, "migrate": migrate, "backup": backup, "restore": restore}[
            args.command
        ](args)
    except (SettingsError, EvoMemError, OSError) as exc:
        message = getattr(exc, "message", None) or str(exc)
        print(f"evomem-admin {args.command}: {message}", file=sys.stderr)
        return 2


def export(args: argparse.Namespace) -> int:
    from evomem.app.transfer import export_jsonl

    location = args.source or default_location()
    with opened(location) as store:
        out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")  # noqa: SIM115
        try:
            n = export_jsonl(store, out, source="postgresql" if is_postgres(location) else "sqlite")
        finally:
            if out is not sys.stdout:
                out.close()
    print(f"exported {n} records", file=sys.stderr)
    return 0


def import_(args: argparse.Namespace) -> int:
    from evomem.app.transfer import import_records, read_jsonl

    if args.file == "-":
        records = read_jsonl(sys.stdin)
    else:
        with open(args.file, encoding="utf-8") as f:
            records = read_jsonl(f)
    with opened(args.target) as store:
        report = import_records(store, records)
    print(report.summary())
    return 0


def migrate(args: argparse.Namespace) -> int:
    from evomem.app import transfer

    if args.source is None:
        with opened(args.target) as store:  # opening a store applies its migrations
            print(f"schema version {store.stats().schema_version}: up to date")
        return 0
    if args.target is None:
        raise OSError("--from needs --to: the store to copy into")
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        if not args.no_progress:
            rate = done / max(time.monotonic() - started, 1e-3)
            print(f"\r  {done:>9,} records  {rate:>8,.0f}/s", end="" if total == 0 else "\n", file=sys.stderr)

    with opened(args.source) as source, opened(args.target) as target:
        report = transfer.migrate(source, target, progress=progress)
        print(report.summary())
        before, after = source.stats(), target.stats()
    same = (before.by_status, before.chains, before.namespaces) == (after.by_status, after.chains, after.namespaces)
    print("stats of both stores agree" if same else f"stats differ: {before} / {after}", file=sys.stderr)
    return 0


def backup(args: argparse.Namespace) -> int:
    location = args.source or default_location()
    if is_postgres(location):
        return _run([args.pg_dump, "--format=custom", "--no-owner", f"--file={args.out}", location], "pg_dump")
    from evomem.adapters.sqlite import driver

    source = location.removeprefix("sqlite://")
    if not Path(source).is_file():
        raise OSError(f"no SQLite file at {source}")
    src = driver.sqlite.connect(source)
    dst = driver.sqlite.connect(args.out)
    try:
        src.backup(dst)  # the online backup API: a consistent copy while the server writes
    finally:
        dst.close()
        src.close()
    print(f"backed up {source} to {args.out}", file=sys.stderr)
    return 0


def restore(args: argparse.Namespace) -> int:
    location = args.target or default_location()
    if is_postgres(location):
        cmd = [args.pg_restore, "--no-owner", "--clean", "--if-exists", "--single-transaction", "-d", location]
        return _run([*cmd, args.file], "pg_restore")
    from evomem.adapters.sqlite import driver

    target = location.removeprefix("sqlite://")
    if Path(target).exists() and not args.force:
        raise OSError(f"{target} exists: stop the server, then restore with --force to replace it")
    src = driver.sqlite.connect(f"file:{args.file}?mode=ro", uri=True)
    tmp = f"{target}.restoring"
    dst = driver.sqlite.connect(tmp)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(target + suffix)
    os.replace(tmp, target)
    print(f"restored {args.file} to {target}", file=sys.stderr)
    return 0


def _run(cmd: list[str], what: str) -> int:
    if shutil.which(cmd[0]) is None:
        raise OSError(f"{cmd[0]} not found: install the PostgreSQL 17 client tools (postgresql-client-17)")
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(
            f"{what} failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"
        )
    return 0
