"""Chat endpoints for the LLM linker's tests: a real llama.cpp server and a misbehaving fake.

    model = make_tiny_model(tmp_dir)               # scripts/make_tiny_gguf.py, ~1.8 MB, random weights
    server = LlamaServer(model, workdir).start()   # python -m llama_cpp.server on a free port
    server.base_url                                # http://127.0.0.1:<port>/v1
    server.stop()

    fake = FakeChatServer(reply=...).start()       # loopback HTTP server, records every request
    fake.base_url, fake.requests, fake.stop()

The real server needs ``llama-cpp-python[server]`` (an sdist: it compiles llama.cpp, ~25 min
on two cores the first time, then pip's wheel cache makes reinstalling take seconds)::

    CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install 'llama-cpp-python[server]==0.3.36' gguf

Without ``llama_cpp`` the real-server tests are skipped, or fail under
``EVOMEM_REQUIRE_LLAMA=1`` (so CI cannot pass them silently). The fake stands in only for a
server that misbehaves (garbage, wrong ids, HTTP errors, hanging), which a real one won't do
on demand.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bench.procs import LlamaServer, free_port, make_tiny_model, stop_process

# The real server and the tiny model live in bench.procs (the LLM linker's benchmark starts
# them too); the tests import them from here.
__all__ = ["FakeChatServer", "LlamaServer", "Reply", "answer_reply", "chat_reply", "free_port"]
__all__ += ["make_tiny_model", "require_llama_cpp", "stop_process"]

INSTALL_HINT = "CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'llama-cpp-python[server]==0.3.36' gguf"


def require_llama_cpp() -> None:
    """Skip (fail under EVOMEM_REQUIRE_LLAMA=1) when llama-cpp-python's server is not installed."""
    if importlib.util.find_spec("llama_cpp") is not None:
        return
    message = f"llama_cpp is not importable; install it with: {INSTALL_HINT}"
    if os.environ.get("EVOMEM_REQUIRE_LLAMA") == "1":
        pytest.fail(message)
    pytest.skip(message)


# ----------------------------------------------------------------------------- the fake


@dataclass
class Reply:
    """One canned HTTP reply. ``hang`` never answers (until the server stops); ``drip_s`` sends
    the headers, then the body one byte at a time with that pause."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    hang: bool = False
    drip_s: float | None = None


def chat_reply(content: str, status: int = 200) -> Reply:
    """An OpenAI chat-completion response whose first choice says ``content``."""
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    return Reply(status=status, body=json.dumps(payload).encode())


def answer_reply(**answer: Any) -> Reply:
    """A chat reply whose content is the JSON of ``answer``."""
    return chat_reply(json.dumps(answer))


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw: bytes = field(repr=False, default=b"")


class FakeChatServer:
    """A loopback stand-in for an OpenAI-compatible server that misbehaves on request."""

    def __init__(self, reply: Reply | Callable[[Recorded], Reply] | None = None) -> None:
        self.reply: Reply | Callable[[Recorded], Reply] = reply or chat_reply("{}")
        self.requests: list[Recorded] = []
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeChatServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                rec = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
                fake.requests.append(rec)
                reply = fake.reply(rec) if callable(fake.reply) else fake.reply
                if reply.hang:
                    fake._stopping.wait(30)
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    if reply.drip_s is None:
                        self.wfile.write(reply.body)
                        return
                    for i in range(len(reply.body)):
                        if fake._stopping.wait(reply.drip_s):
                            return
                        self.wfile.write(reply.body[i : i + 1])
                        self.wfile.flush()
                except OSError:  # the client gave up
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
