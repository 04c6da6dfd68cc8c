"""Bearer tokens for the HTTP transports: the token file, and the MCP SDK's token verifier.

The token file (``--auth-file`` / ``EVOMEM_AUTH_FILE``) is TOML, one table per identity::

    [[tokens]]
    name = "alice"                 # the identity, recorded as the author
    sha256 = "9f86d0…"             # hex digest of the token; the token itself is never stored
    role = "writer"                # reader | writer | admin
    namespaces = ["ledger", "*"]   # "*": every namespace; the first is the default
    rate = 20                      # optional: calls per second

Tokens are compared as SHA-256 digests with ``hmac.compare_digest`` against every entry (no
early exit), so the time a check takes says nothing about which digest nearly matched.
``TokenRegistry.reload`` re-reads the file (on SIGHUP); a file that no longer parses keeps
the previous tokens and logs why, so a typo never locks the whole team out.

``TokenVerifier`` implements the SDK's ``mcp.server.auth.provider.TokenVerifier``: the SDK's
bearer middleware calls it, and answers 401 with ``WWW-Authenticate`` when it returns None.
``principal_of`` reads the ``Principal`` back from the SDK's ``AccessToken``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evomem.app.access import ALL, ROLES, Principal
from evomem.domain.errors import EvoMemError
from evomem.domain.text import clean_label

log = logging.getLogger("evomem.security.tokens")

#: Longest bearer token looked at; anything longer is refused without hashing.
MAX_TOKEN_CHARS = 4096
#: The claim of ``AccessToken.claims`` that carries the principal.
CLAIM = "evomem"
_HEX = frozenset("0123456789abcdef")


class AuthFileError(ValueError):
    """The token file cannot be used. The message names the file and the entry."""


@dataclass(frozen=True, slots=True)
class TokenEntry:
    digest: bytes
    principal: Principal


def digest(token: str) -> str:
    """The hex SHA-256 of ``token``, as the token file stores it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe (what ``evomem-admin token create`` prints)."""
    return "evm_" + secrets.token_urlsafe(32)


def parse_entries(data: Mapping[str, Any], where: str = "the token file") -> list[TokenEntry]:
    tokens = data.get("tokens")
    unknown = set(data) - {"tokens"}
    if unknown:
        raise AuthFileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; only [[tokens]] tables")
    if not isinstance(tokens, list) or not tokens:
        raise AuthFileError(f"{where}: no [[tokens]] table; add one per identity (evomem-admin token create)")
    out: list[TokenEntry] = []
    names: set[str] = set()
    digests: set[bytes] = set()
    for n, raw in enumerate(tokens, start=1):
        at = f"{where}, token {n}"
        if not isinstance(raw, Mapping):
            raise AuthFileError(f"{at}: must be a table")
        extra = set(raw) - {"name", "sha256", "role", "namespaces", "rate"}
        if extra:
            raise AuthFileError(f"{at}: unknown key(s) {', '.join(sorted(extra))}")
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 100 or name != " ".join(name.split()):
            raise AuthFileError(f"{at}: name must be a non-empty single-line string of at most 100 characters")
        at = f"{where}, token {name!r}"
        if name in names:
            raise AuthFileError(f"{at}: the name is used twice; each identity needs its own name")
        hexd = raw.get("sha256")
        if not isinstance(hexd, str) or len(hexd) != 64 or not set(hexd.lower()) <= _HEX:
            raise AuthFileError(f"{at}: sha256 must be the 64-character hex digest of the token")
        role = raw.get("role")
        if role not in ROLES:
            raise AuthFileError(f"{at}: role must be one of {', '.join(ROLES)}, got {role!r}")
        spaces = raw.get("namespaces")
        if not isinstance(spaces, list) or not spaces or not all(isinstance(s, str) for s in spaces):
            raise AuthFileError(f'{at}: namespaces must be a non-empty list of names, or ["*"] for all')
        clean: list[str] = []
        for s in spaces:
            if s == ALL:
                clean.append(ALL)
                continue
            try:
                label = clean_label(s, "namespace")
            except EvoMemError as exc:
                raise AuthFileError(f"{at}: {exc.message}") from None
            if label is None:
                raise AuthFileError(f"{at}: an empty namespace name")
            clean.append(label)
        rate = raw.get("rate")
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1e6):
            raise AuthFileError(f"{at}: rate must be a positive number of calls per second")
        d = bytes.fromhex(hexd.lower())
        if d in digests:
            raise AuthFileError(f"{at}: the same token digest appears twice")
        names.add(name)
        digests.add(d)
        principal = Principal(name, role, tuple(dict.fromkeys(clean)), float(rate) if rate is not None else None)
        out.append(TokenEntry(d, principal))
    return out


def load_token_file(path: str | Path) -> list[TokenEntry]:
    p = Path(path).expanduser()
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise AuthFileError(f"cannot read the token file {p}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AuthFileError(f"the token file {p} is not valid TOML: {exc}") from None
    return parse_entries(data, f"token file {p}")


class TokenRegistry:
    """The tokens in force. ``verify`` is safe from any thread; ``reload`` swaps them at once."""

    def __init__(self, path: str | Path | None = None, entries: list[TokenEntry] | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        if entries is None:
            if self.path is None:
                raise AuthFileError("a token registry needs a token file or entries")
            entries = load_token_file(self.path)
        self._entries: tuple[TokenEntry, ...] = tuple(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def reload(self) -> bool:
        """Re-read the file. On a bad file, keep the tokens in force and log why (False)."""
        if self.path is None:
            return False
        try:
            entries = load_token_file(self.path)
        except AuthFileError as exc:
            log.error("token file not reloaded, the previous tokens stay in force: %s", exc)
            return False
        with self._lock:
            self._entries = tuple(entries)
        log.info("token file reloaded: %d identities", len(entries))
        return True

    def verify(self, token: str) -> Principal | None:
        """The principal of ``token``, or None. Constant time in the token's digest: every
        entry is compared, with ``hmac.compare_digest``, whatever matched before."""
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
            return None
        try:
            wanted = hashlib.sha256(token.encode("utf-8")).digest()
        except UnicodeEncodeError:
            return None
        found: Principal | None = None
        for entry in self._entries:
            if hmac.compare_digest(wanted, entry.digest):
                found = entry.principal
        return found


def install_reload_signal(registry: TokenRegistry) -> bool:
    """SIGHUP re-reads the token file (main thread only; False where signals cannot be set)."""
    import signal

    if not hasattr(signal, "SIGHUP") or threading.current_thread() is not threading.main_thread():
        return False

    def handler(_signum: int, _frame: Any) -> None:
        # Off the signal handler: reading and parsing a file is not async-signal work.
        threading.Thread(target=registry.reload, name="evomem-token-reload", daemon=True).start()

    signal.signal(signal.SIGHUP, handler)
    return True


def principal_claims(principal: Principal) -> dict[str, Any]:
    return {
        "name": principal.name,
        "role": principal.role,
        "namespaces": list(principal.namespaces),
        "rate": principal.rate,
    }


def principal_of(claims: Mapping[str, Any] | None) -> Principal | None:
    """The principal carried by an ``AccessToken``'s claims (None when there is none)."""
    data = (claims or {}).get(CLAIM)
    if not isinstance(data, Mapping):
        return None
    try:
        return Principal(str(data["name"]), str(data["role"]), tuple(data["namespaces"]), data.get("rate"))
    except (KeyError, TypeError, ValueError):
        return None


class TokenVerifier:
    """The MCP SDK's ``TokenVerifier`` over a ``TokenRegistry`` (and, optionally, JWTs)."""

    def __init__(self, registry: TokenRegistry | None, *, resource: str | None = None, jwt: Any = None) -> None:
        self.registry = registry
        self.resource = resource
        self.jwt = jwt  # evomem.security.jwt.JwtVerifier, when settings name an issuer

    def principal(self, token: str) -> Principal | None:
        if self.registry is not None:
            found = self.registry.verify(token)
            if found is not None:
                return found
        if self.jwt is not None and token.count(".") == 2:
            return self.jwt.verify(token)
        return None

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        principal = self.principal(token)
        if principal is None:
            return None
        return AccessToken(
            token="",  # never kept: the principal is what the tools need
            client_id=principal.name,
            scopes=[principal.role],
            resource=self.resource,
            subject=principal.name,
            claims={CLAIM: principal_claims(principal)},
        )
