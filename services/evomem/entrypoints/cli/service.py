"""``evomem-service <name>``: one image, one command per service.

    evomem-service storage    gRPC StorageService over the SQLite file, with its vectors
    evomem-service cronista   gRPC CronistaService (lite backend)
    evomem-service linker     gRPC LinkerService (EVOMEM_LINKER=heuristic|scored|pair|llm)
    evomem-service worker     Redis Streams consumer that runs extraction jobs
    evomem-service gateway    MCP over streamable HTTP (gunicorn + uvicorn workers)

Every setting comes from ``EVOMEM_*`` variables (docs/SERVICES.md); a missing or misspelt
one stops the command with status 2 and one line naming it. gRPC services report health
(grpc.health.v1) as it really is, export Prometheus metrics, log JSON to stderr, and drain
in-flight calls on SIGTERM. What each command runs is ``evomem.entrypoints.cli.commands``.
"""

from __future__ import annotations

import sys

from evomem.entrypoints.cli.commands import COMMANDS, DESCRIPTIONS, run_command

USAGE = f"usage: evomem-service {{{'|'.join(COMMANDS)}}}"


def help_text() -> str:
    """The commands, then every setting (variable, default, meaning): what ``--help`` prints."""
    from evomem.settings import describe

    lines = [USAGE, "", "commands:", *(f"  {name:<10}{DESCRIPTIONS[name]}" for name in COMMANDS), ""]
    lines.append("settings (environment variables; docs/SERVICES.md says which service reads which):")
    for var, _path, default, help_ in describe():
        shown = "" if default in (None, "") else f" (default {default})"
        lines.append(f"  {var:<28}{help_}{shown}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--help"], ["-h"], ["help"]):
        print(help_text())
        return 0
    if len(args) != 1 or args[0] not in COMMANDS:
        print(USAGE, file=sys.stderr)
        return 2
    return run_command(args[0])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
