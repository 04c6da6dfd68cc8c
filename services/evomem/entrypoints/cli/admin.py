"""``evomem-admin``: make the secrets a team deployment needs.

evomem-admin token create --name alice --role writer --namespaces team-a,shared [--rate 20]
    prints the new token once (give it to alice) and the ``[[tokens]]`` entry to append to the
    token file (EVOMEM_AUTH_FILE): only the token's SHA-256 is kept there.
evomem-admin token hash            reads a token on stdin, prints its sha256 (to rotate by hand)
evomem-admin grpc-secret           prints a fresh shared secret for EVOMEM_GRPC_SECRET(_FILE); the same
    random string serves as a /metrics token (EVOMEM_METRICS_TOKEN_FILE)
evomem-admin export | import | migrate | backup | restore   move a memory (``entrypoints/cli/data.py``)
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys

from evomem.app.access import ALL, ROLES, Principal
from evomem.entrypoints.cli import data
from evomem.security.tokens import AuthFileError, digest, new_token, parse_entries


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evomem-admin", description="EvoMem team administration: tokens, secrets, and moving a memory."
    )
    sub = p.add_subparsers(dest="command", required=True)
    token = sub.add_parser("token", help="bearer tokens for the HTTP transports").add_subparsers(
        dest="action", required=True
    )
    create = token.add_parser("create", help="make a token: prints it once, and its TOML entry")
    create.add_argument("--name", required=True, help="the identity, recorded as the author")
    create.add_argument("--role", required=True, choices=ROLES)
    create.add_argument(
        "--namespaces", required=True, help=f'comma-separated namespaces, the first is the default; "{ALL}": all'
    )
    create.add_argument("--rate", type=float, default=None, help="calls per second allowed (default: no limit)")
    token.add_parser("hash", help="the sha256 of a token read on stdin")
    sub.add_parser("grpc-secret", help="a fresh shared secret for the gRPC services (or a /metrics token)")
    data.add_commands(sub)
    return p


def entry(principal: Principal, token: str) -> str:
    lines = [
        "[[tokens]]",
        f"name = {json.dumps(principal.name)}",
        f'sha256 = "{digest(token)}"',
        f'role = "{principal.role}"',
        "namespaces = [" + ", ".join(json.dumps(n) for n in principal.namespaces) + "]",
    ]
    if principal.rate is not None:
        lines.append(f"rate = {principal.rate:g}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command in ("export", "import", "migrate", "backup", "restore"):
        return data.run(args)
    if args.command == "grpc-secret":
        print(secrets.token_urlsafe(32))
        return 0
    if args.action == "hash":
        token = sys.stdin.readline().strip()
        if not token:
            print("evomem-admin: no token on stdin", file=sys.stderr)
            return 2
        print(digest(token))
        return 0
    token = new_token()
    spaces = [s.strip() for s in args.namespaces.split(",") if s.strip()]
    raw = {"name": args.name, "sha256": digest(token), "role": args.role, "namespaces": spaces}
    if args.rate is not None:
        raw["rate"] = args.rate
    try:  # the same checks as the server's, so the entry is one it accepts
        (checked,) = parse_entries({"tokens": [raw]}, "the new token")
    except AuthFileError as exc:
        print(f"evomem-admin: {exc}", file=sys.stderr)
        return 2
    print(f"# token for {checked.principal.name} (shown once; give it to them, keep it nowhere else):", file=sys.stderr)
    print(token, file=sys.stderr)
    print("# append to the token file (EVOMEM_AUTH_FILE), then send SIGHUP to the server:", file=sys.stderr)
    print(entry(checked.principal, token), end="")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
