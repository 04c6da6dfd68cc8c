"""Container health probe for the EvoMem image: exit 0 when healthy, 1 when not.

    evomem-healthcheck grpc PORT [SERVICE]   grpc.health.v1.Health/Check on 127.0.0.1:PORT
                                             ("" = the whole server); healthy only when SERVING
    evomem-healthcheck http PORT [PATH]      GET http://127.0.0.1:PORT/healthz (PATH default
                                             /healthz, whose JSON must say "status": "ok")
    evomem-healthcheck worker                the worker's Redis (EVOMEM_REDIS_URL) answers and holds
                                             the consumer group the worker creates when it starts;
                                             with EVOMEM_METRICS_PORT set, the worker process
                                             answers GET /metrics too (with the bearer token of
                                             EVOMEM_METRICS_TOKEN or _FILE when one is set)

Used by the image's HEALTHCHECK (the embedded server) and by compose.*.yaml per service.
It runs every few seconds in every container, so it uses the standard library only: the
gRPC call is one HTTP/2 request written by hand (no grpcio import, which costs about a
second of CPU on a small machine), Redis is spoken to in RESP. One line of output says
why it failed (`docker inspect` shows it under State.Health.Log).
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from typing import Any

TIMEOUT_S = 3.0
# Names shared with evomem.adapters.redis_queue (a test checks that they agree).
STREAM = "evomem:extract"
GROUP = "workers"

# ---------------------------------------------------------------------------- gRPC over HTTP/2

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _PING, _GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
_END_STREAM, _ACK, _END_HEADERS = 0x1, 0x1, 0x4
_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _hpack_literal(name_index: int | None, name: str, value: str) -> bytes:
    """A header as "literal without indexing" (RFC 7541 6.2.2), no Huffman coding."""
    out = bytearray()
    if name_index is None:
        out.append(0x00)
        out += bytes([len(name)]) + name.encode()
    elif name_index < 15:
        out.append(name_index)
    else:
        out += bytes([0x0F, name_index - 15])
    out += bytes([len(value)]) + value.encode()
    return bytes(out)


_CODES = {"1": "CANCELLED", "4": "DEADLINE_EXCEEDED", "5": "NOT_FOUND", "12": "UNIMPLEMENTED", "14": "UNAVAILABLE"}


def _grpc_status(block: bytes) -> str | None:
    """grpc-status from a trailers block when it is sent as a plain (non-Huffman) literal,
    as grpc servers do for a new name; None when it cannot be read this simply."""
    at = block.find(b"grpc-status")
    if at < 0 or at + 12 > len(block) or block[at + 11] & 0x80:
        return None
    size = block[at + 11]
    return block[at + 12 : at + 12 + size].decode("ascii", "replace")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the server")
        buf += chunk
    return bytes(buf)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def grpc_health_status(port: int, service: str = "", *, host: str = "127.0.0.1", timeout: float = TIMEOUT_S) -> str:
    """Call grpc.health.v1.Health/Check and return the status name (SERVING, NOT_SERVING, ...).

    Raises OSError/ConnectionError when nothing answers and RuntimeError when the call fails
    (for example an unknown service: NOT_FOUND comes back as trailers without a message).
    """
    deadline = time.monotonic() + timeout
    authority = f"{host}:{port}"
    headers = (
        bytes([0x83, 0x86])  # :method POST, :scheme http (static table 3 and 6)
        + _hpack_literal(4, ":path", "/grpc.health.v1.Health/Check")
        + _hpack_literal(1, ":authority", authority)
        + _hpack_literal(31, "content-type", "application/grpc")
        + _hpack_literal(None, "te", "trailers")
        + _hpack_literal(None, "grpc-timeout", f"{max(1, int(timeout * 1000))}m")
    )
    encoded = service.encode()
    message = (b"\x0a" + bytes([len(encoded)]) + encoded) if encoded else b""
    if len(encoded) > 127:
        raise ValueError("service name too long for this probe")
    body = b"\x00" + struct.pack(">I", len(message)) + message
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(
            _PREFACE
            + _frame(_SETTINGS, 0, 0)
            + _frame(_HEADERS, _END_HEADERS, 1, headers)
            + _frame(_DATA, _END_STREAM, 1, body)
        )
        data = bytearray()
        while True:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            head = _recv_exact(sock, 9)
            length = int.from_bytes(head[:3], "big")
            kind, flags = head[3], head[4]
            stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
            payload = _recv_exact(sock, length) if length else b""
            if kind == _SETTINGS and not flags & _ACK:
                sock.sendall(_frame(_SETTINGS, _ACK, 0))
            elif kind == _PING and not flags & _ACK:
                sock.sendall(_frame(_PING, _ACK, 0, payload))
            elif kind == _GOAWAY:
                raise RuntimeError("the server is going away (GOAWAY)")
            elif kind == _RST_STREAM and stream == 1:
                raise RuntimeError(f"the call was reset (RST_STREAM {int.from_bytes(payload[:4], 'big')})")
            elif kind == _DATA and stream == 1:
                data += payload
            elif kind == _HEADERS and stream == 1 and flags & _END_STREAM:
                code = _grpc_status(payload)
                if code not in (None, "0"):
                    raise RuntimeError(f"grpc-status {code} ({_CODES.get(code, 'error')})")
            if stream == 1 and kind in (_DATA, _HEADERS) and flags & _END_STREAM:
                break
    if len(data) < 5:
        raise RuntimeError("no health response (unknown service, or the call failed)")
    size = int.from_bytes(data[1:5], "big")
    message = bytes(data[5 : 5 + size])
    status, pos = 0, 0
    while pos < len(message):  # HealthCheckResponse { ServingStatus status = 1; }
        key, pos = _varint(message, pos)
        if key >> 3 == 1 and key & 7 == 0:
            status, pos = _varint(message, pos)
        else:
            break
    return _STATUS.get(status, str(status))


def probe_grpc(port: int, service: str = "") -> str | None:
    where = f"grpc health {port}/{service or '*'}"
    try:
        status = grpc_health_status(port, service)
    except (OSError, RuntimeError, ValueError) as exc:
        return f"{where}: {type(exc).__name__}: {exc}"
    return None if status == "SERVING" else f"{where}: {status}"


# ---------------------------------------------------------------------------- HTTP


def metrics_token() -> str | None:
    """The token /metrics demands, as the services read it: EVOMEM_METRICS_TOKEN, else the first
    line of EVOMEM_METRICS_TOKEN_FILE."""
    token = os.environ.get("EVOMEM_METRICS_TOKEN", "")
    if token:
        return token
    path = os.environ.get("EVOMEM_METRICS_TOKEN_FILE", "")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return (f.readline().strip()) or None
    except OSError:
        return None


def probe_http(port: int, path: str = "/healthz", token: str | None = None) -> str | None:
    import json
    import urllib.error
    import urllib.request

    url = f"http://127.0.0.1:{port}{path}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
            body = resp.read(4096)
            status = resp.status
    except (urllib.error.URLError, OSError) as exc:
        return f"GET {url}: {exc}"
    if status != 200:
        return f"GET {url}: HTTP {status}"
    if path != "/healthz":
        return None
    try:
        if json.loads(body).get("status") != "ok":
            return f"GET {url}: {body[:200]!r}"
    except (ValueError, AttributeError):
        return f"GET {url}: not JSON: {body[:200]!r}"
    return None


# ---------------------------------------------------------------------------- Redis (RESP)


def _resp_command(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        raw = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


def _resp_read(reader: Any) -> Any:
    line = reader.readline()
    if not line:
        raise ConnectionError("connection closed by redis")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else reader.read(n + 2)[:-2].decode()
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_resp_read(reader) for _ in range(n)]
    raise RuntimeError(f"unexpected reply from redis: {line[:50]!r}")


def redis_call(url: str, *commands: tuple[str, ...], timeout: float = TIMEOUT_S) -> list[Any]:
    """Run a few commands on the Redis at ``url`` (redis://[user:password@]host[:port][/db])."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.scheme != "redis":
        raise ValueError(f"only redis:// URLs are probed, got {parts.scheme}://")
    setup: list[tuple[str, ...]] = []
    if parts.password:
        user = unquote(parts.username) if parts.username else None
        setup.append(("AUTH", user, unquote(parts.password)) if user else ("AUTH", unquote(parts.password)))
    db = parts.path.lstrip("/")
    if db and db != "0":
        setup.append(("SELECT", db))
    with socket.create_connection((parts.hostname or "localhost", parts.port or 6379), timeout=timeout) as sock:
        sock.sendall(b"".join(_resp_command(*c) for c in (*setup, *commands)))
        with sock.makefile("rb") as reader:
            for _ in setup:
                _resp_read(reader)
            return [_resp_read(reader) for _ in commands]


def probe_worker() -> str | None:
    url = os.environ.get("EVOMEM_REDIS_URL", "")
    if not url:
        return "EVOMEM_REDIS_URL is not set"
    try:
        pong, groups = redis_call(url, ("PING",), ("XINFO", "GROUPS", STREAM))
    except (OSError, RuntimeError, ValueError) as exc:
        return f"redis {STREAM}: {type(exc).__name__}: {exc}"
    names = set()
    for group in groups if isinstance(groups, list) else []:
        fields = dict(zip(group[::2], group[1::2], strict=False)) if isinstance(group, list) else {}
        names.add(fields.get("name"))
    if pong != "PONG" or GROUP not in names:
        return f"redis {STREAM}: no consumer group {GROUP!r} yet (the worker has not started consuming)"
    metrics_port = os.environ.get("EVOMEM_METRICS_PORT", "")
    if metrics_port not in ("", "0"):
        return probe_http(int(metrics_port), "/metrics", metrics_token())
    return None


# ---------------------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("grpc", "http", "worker") or (argv[0] != "worker" and len(argv) < 2):
        print("usage: evomem-healthcheck grpc PORT [SERVICE] | http PORT [PATH] | worker", file=sys.stderr)
        return 2
    kind, *rest = argv
    try:
        if kind == "grpc":
            problem = probe_grpc(int(rest[0]), *rest[1:2])
        elif kind == "http":
            problem = probe_http(int(rest[0]), *rest[1:2])
        else:
            problem = probe_worker()
    except Exception as exc:  # any surprise is "unhealthy", with the reason
        problem = f"{kind} probe failed: {type(exc).__name__}: {exc}"
    if problem:
        print(problem)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
