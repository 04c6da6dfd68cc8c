"""A fuzz of the bearer check (issue 14): at least 10,000 raw HTTP requests against one
``evomem-mcp --transport http --auth-file`` process with missing, malformed, wrong, expired,
wrong-signature and wrong-audience tokens and odd headers. None may be accepted, none may be
a server error: every answer is a 401 (or a 403, for a valid token from a foreign Origin).

Deterministic (a seeded generator), bounded (one server, eight connections).
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from test_team_auth import INIT, JSON_HEADERS, TOKENS, Server, start_server, stop, token_file

from evomem.security.tokens import digest

REQUESTS = 10_000
CONCURRENCY = 8


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env["EVOMEM_LOG_LEVEL"] = "ERROR"
    s = start_server(tmp_path, env, "--auth-file", str(token_file(tmp_path / "t.toml", TOKENS)))
    yield s
    stop(s)


def _jwts() -> list[str]:
    """Signed tokens a JWT-accepting server would refuse: expired, wrong key, wrong audience, alg none."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    base = {"sub": "alice", "iss": "https://idp.example", "aud": "evomem", "iat": now, "exp": now + 600}
    out = [
        jwt.encode({**base, "exp": now - 60}, key, algorithm="RS256"),  # expired
        jwt.encode(base, other, algorithm="RS256"),  # wrong signature (another key)
        jwt.encode({**base, "aud": "someone-else"}, key, algorithm="RS256"),  # wrong audience
        jwt.encode(base, "a-shared-secret-nobody-configured-here", algorithm="HS256"),
        jwt.encode({**base, "role": "admin", "namespaces": ["*"]}, key, algorithm="RS256"),
    ]
    header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(b'{"sub":"root","role":"admin"}').rstrip(b"=").decode()
    out.append(f"{header}.{body}.")
    good = out[0].split(".")
    out.append(f"{good[0]}.{good[1]}.{good[2][::-1]}")  # tampered signature
    return out


def _cases(rng: random.Random) -> Iterator[tuple[str, str, dict[str, str], bytes | None, tuple[int, ...]]]:
    """(method, path, headers, body, allowed statuses), forever."""
    valid = [t for t, _, _ in TOKENS.values()]
    jwts = _jwts()
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/=!#$%&*^|"

    def wrong_token() -> str:
        kind = rng.randrange(12)
        t = rng.choice(valid)
        if kind == 0:
            i = rng.randrange(len(t))
            return t[:i] + chr((ord(t[i]) + 1 - 33) % 94 + 33) + t[i + 1 :]  # one character off
        if kind == 1:
            return t[:-1]  # a prefix
        if kind == 2:
            return t + rng.choice(alphabet)  # a suffix
        if kind == 3:
            return t.upper()
        if kind == 4:
            return digest(t)  # the stored digest is not the token
        if kind == 5:
            return rng.choice(jwts)
        if kind == 6:
            return "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 200)))
        if kind == 7:
            return "x" * rng.choice((4095, 4096, 4097, 8000))
        if kind == 8:
            return " " + t  # extra space
        if kind == 9:
            return t + "%20"
        if kind == 10:
            return base64.b64encode(t.encode()).decode()
        return "".join(chr(rng.randrange(0xA0, 0xFF)) for _ in range(rng.randrange(1, 64)))  # latin-1 bytes

    schemes = ["Bearer ", "bearer ", "BEARER ", "Bearer  ", "Basic ", "Token ", "Bearer", "", "Bearer\t"]
    while True:
        headers = dict(JSON_HEADERS)
        method, path, body = "POST", "/mcp", INIT
        allowed: tuple[int, ...] = (401,)
        kind = rng.randrange(10)
        if kind == 0:
            pass  # no Authorization at all
        elif kind == 1:
            # (HTTP strips a value's trailing whitespace; clients refuse to send it)
            headers["Authorization"] = rng.choice(schemes).rstrip()
        elif kind in (2, 3, 4):
            headers["Authorization"] = rng.choice(schemes[:4]) + wrong_token()
        elif kind == 5:
            headers["Authorization"] = rng.choice(schemes[4:]) + rng.choice(valid)  # right token, wrong scheme
        elif kind == 6:  # odd headers around a wrong token
            headers["Authorization"] = "Bearer " + wrong_token()
            odd = rng.randrange(5)
            if odd == 0:
                headers["Host"] = rng.choice(["evil.example", "127.0.0.1:1", "", "localhost:99999", "[::1]"])
            elif odd == 1:
                headers["Origin"] = rng.choice(["http://evil.example", "null", "file://", "http://127.0.0.1.evil:1"])
            elif odd == 2:
                headers["Content-Type"] = rng.choice(["text/plain", "application/x-www-form-urlencoded", ""])
            elif odd == 3:
                headers["X-Forwarded-For"] = "127.0.0.1"
                headers["X-Forwarded-User"] = "root"
            else:
                headers["Mcp-Session-Id"] = "".join(rng.choice(alphabet) for _ in range(32))
        elif kind == 7:  # other methods, no or wrong token
            method = rng.choice(["GET", "DELETE", "PUT", "PATCH"])
            if rng.random() < 0.5:
                headers["Authorization"] = "Bearer " + wrong_token()
        elif kind == 8:  # garbage or huge bodies with a wrong token
            headers["Authorization"] = "Bearer " + wrong_token()
            body = None
            raw = rng.choice([b"", b"{", b"[]", b"\xff\xfe", b'{"jsonrpc":"2.0"}', b"x" * 20_000])
            yield method, path, headers, raw, allowed
            continue
        else:  # a valid token from a foreign Origin: the Origin check refuses it
            headers["Authorization"] = "Bearer " + rng.choice(valid)
            headers["Origin"] = rng.choice(["http://evil.example", "https://attacker.test:8443", "null"])
            allowed = (403,)
        yield method, path, headers, None if body is None else json.dumps(body).encode(), allowed


@pytest.mark.anyio
async def test_ten_thousand_bad_requests_are_all_refused(server: Server) -> None:
    rng = random.Random(14)
    cases = _cases(rng)
    statuses: Counter[int] = Counter()
    unexpected: list[tuple[str, dict[str, str], int]] = []
    refused_locally: list[dict[str, str]] = []
    base = f"http://127.0.0.1:{server.port}"
    limits = httpx2.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx2.AsyncClient(base_url=base, timeout=30, limits=limits) as http:
        queue: asyncio.Queue[tuple[str, str, dict[str, str], bytes | None, tuple[int, ...]]] = asyncio.Queue()
        for _ in range(REQUESTS):
            queue.put_nowait(next(cases))

        async def worker() -> None:
            while not queue.empty():
                method, path, headers, body, allowed = queue.get_nowait()
                try:
                    raw = {k: v.encode("latin-1") for k, v in headers.items()}  # bytes: any octet goes out
                    resp = await http.request(method, path, headers=raw, content=body)
                except httpx2.LocalProtocolError:
                    refused_locally.append(headers)
                    statuses[0] += 1  # the client itself refused to send it (e.g. a header it cannot encode)
                    continue
                statuses[resp.status_code] += 1
                if resp.status_code not in allowed:
                    unexpected.append((method, headers, resp.status_code))
                elif resp.status_code == 401:
                    assert resp.headers["www-authenticate"].startswith("Bearer ")

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    sent = sum(n for code, n in statuses.items() if code)
    print(f"fuzz: {sum(statuses.values())} requests, {sent} answered: {dict(sorted(statuses.items()))}")
    assert sum(statuses.values()) == REQUESTS
    assert sent >= REQUESTS * 0.99, refused_locally[:5]
    assert not [c for c in statuses if 200 <= c < 300], statuses
    assert not [c for c in statuses if c >= 500], statuses
    assert not unexpected, unexpected[:5]
    assert server.proc.poll() is None
    assert "Traceback" not in server.log()
