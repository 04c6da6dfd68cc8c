"""The gRPC services as an operator sees them: health, status codes, graceful shutdown,
reconnection, metrics, and the ``evomem-service`` / gateway start-up checks.

Servers are real (``create_server`` on 127.0.0.1); calls go through the generated stubs
when the wire itself is under test, and through the port clients otherwise.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from procutil import free_port
from prometheus_client import REGISTRY

from evomem.adapters.grpc.clients import GrpcExtractor, GrpcStorage
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.storage import LocalStorage
from evomem.bootstrap import services as bootstrap
from evomem.domain import cronista
from evomem.domain.errors import Conflict, EmptyNote, EvoMemError, NotFound, Unavailable
from evomem.domain.model import Extraction, LinkProvenance, NewNote, new_id
from evomem.domain.remember import NoteWrite
from evomem.entrypoints.cli import service as services
from evomem.entrypoints.grpc.server import RunningServer, create_server
from evomem.entrypoints.grpc.servicers import CronistaServicer, StorageServicer
from evomem.entrypoints.mcp import gateway
from evomem.settings import Settings, SettingsError
from evomem.v1 import common_pb2, cronista_pb2, cronista_pb2_grpc, storage_pb2, storage_pb2_grpc

STORAGE = "evomem.v1.StorageService"
CRONISTA = "evomem.v1.CronistaService"
UNKNOWN_ID = new_id(0)
EVOMEM_SERVICE = str(Path(sys.executable).with_name("evomem-service"))
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def storage_server(store: SQLiteStore, address: str = "127.0.0.1:0") -> RunningServer:
    return create_server(
        address,
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(store)), s),
        (STORAGE,),
    )


def cronista_server(extractor: Any) -> RunningServer:
    return create_server(
        "127.0.0.1:0",
        lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(CronistaServicer(extractor), s),
        (CRONISTA,),
    )


@pytest.fixture
def backing(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "served.db")
    yield s
    s.close()


@pytest.fixture
def served(backing: SQLiteStore) -> Iterator[RunningServer]:
    running = storage_server(backing)
    running.set_serving(True)
    yield running
    running.stop(0)


@pytest.fixture
def channel(served: RunningServer) -> Iterator[grpc.Channel]:
    ch = grpc.insecure_channel(f"127.0.0.1:{served.port}")
    yield ch
    ch.close()


def check(ch: grpc.Channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(ch)
    return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10, wait_for_ready=True).status


def rpc_error(fn: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        fn()
    return info.value


# ============================================================================ health


def test_health_follows_set_serving(backing: SQLiteStore) -> None:
    running = storage_server(backing)
    ch = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    try:
        # Listening, but not ready until the service says so.
        assert check(ch, "") == NOT_SERVING
        assert check(ch, STORAGE) == NOT_SERVING
        running.set_serving(True)
        assert check(ch, "") == SERVING
        assert check(ch, STORAGE) == SERVING
        running.set_serving(False)
        assert check(ch, "") == NOT_SERVING
        assert check(ch, STORAGE) == NOT_SERVING
        running.set_serving(True)
        assert check(ch, STORAGE) == SERVING
        # A service this server does not have is unknown to health, not "serving".
        err = rpc_error(lambda: check(ch, "evomem.v1.LinkerService"))
        assert err.code() == grpc.StatusCode.NOT_FOUND
    finally:
        ch.close()
        running.stop(0)


def test_stop_turns_health_off_and_refuses_new_calls(backing: SQLiteStore) -> None:
    running = storage_server(backing)
    running.set_serving(True)
    ch = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    try:
        assert check(ch, STORAGE) == SERVING
        running.stop(0)
        assert running.health.Check(health_pb2.HealthCheckRequest(service=STORAGE), None).status == NOT_SERVING
        stub = storage_pb2_grpc.StorageServiceStub(ch)
        err = rpc_error(lambda: stub.GetStats(storage_pb2.GetStatsRequest(), timeout=10))
        assert err.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        ch.close()


# ============================================================================ status codes


def test_domain_errors_arrive_as_status_codes_with_the_code_in_the_message(
    channel: grpc.Channel, backing: SQLiteStore
) -> None:
    stub = storage_pb2_grpc.StorageServiceStub(channel)
    link = common_pb2.LinkProvenance(method="agent", confidence=1.0)

    # Unknown node: GetNode answers "absent", not an error; ForgetNode is NOT_FOUND.
    assert not stub.GetNode(storage_pb2.GetNodeRequest(node_id=UNKNOWN_ID), timeout=10).HasField("node")
    err = rpc_error(lambda: stub.ForgetNode(storage_pb2.ForgetNodeRequest(node_id=UNKNOWN_ID), timeout=10))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert err.details() == f"[not_found] node_id: no node with id {UNKNOWN_ID}"  # as over MCP
    err = rpc_error(
        lambda: stub.RememberNote(
            storage_pb2.RememberNoteRequest(note=common_pb2.NewNote(raw_text="x"), supersedes=UNKNOWN_ID, link=link),
            timeout=10,
        )
    )
    assert err.code() == grpc.StatusCode.NOT_FOUND and err.details().startswith("[not_found] supersedes: ")

    v1 = stub.RememberNote(
        storage_pb2.RememberNoteRequest(note=common_pb2.NewNote(raw_text="The ledger uses Postgres", namespace="a")),
        timeout=10,
    ).node
    v2 = stub.RememberNote(
        storage_pb2.RememberNoteRequest(
            note=common_pb2.NewNote(raw_text="Moved the ledger to SQLite", namespace="a"), supersedes=v1.id, link=link
        ),
        timeout=10,
    ).node
    assert (v2.supersedes, v2.version, v2.link.method) == (v1.id, 2, "agent")

    # Chain rules: FAILED_PRECONDITION, with the domain code first in the message.
    err = rpc_error(
        lambda: stub.LinkNodes(storage_pb2.LinkNodesRequest(node_id=v1.id, supersedes=v2.id, link=link), timeout=10)
    )
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION and err.details().startswith("[cycle] ")
    err = rpc_error(
        lambda: stub.RememberNote(
            storage_pb2.RememberNoteRequest(note=common_pb2.NewNote(raw_text="y", namespace="b"), supersedes=v2.id),
            timeout=10,
        )
    )
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION and err.details().startswith("[namespace_mismatch] ")
    stub.ForgetNode(storage_pb2.ForgetNodeRequest(node_id=v2.id), timeout=10)
    err = rpc_error(
        lambda: stub.RememberNote(
            storage_pb2.RememberNoteRequest(note=common_pb2.NewNote(raw_text="z", namespace="a"), supersedes=v2.id),
            timeout=10,
        )
    )
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION and err.details().startswith("[forgotten] ")
    stub.ForgetNode(storage_pb2.ForgetNodeRequest(node_id=v2.id, purge=True), timeout=10)
    err = rpc_error(lambda: stub.ForgetNode(storage_pb2.ForgetNodeRequest(node_id=v2.id), timeout=10))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION and err.details().startswith("[purged] ")

    # A bad request field is INVALID_ARGUMENT, not a crash, and changes nothing.
    before = backing.get(v1.id)
    err = rpc_error(
        lambda: stub.SetExtraction(storage_pb2.SetExtractionRequest(node_id=v1.id, state="bogus"), timeout=10)
    )
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("[invalid_argument] state must be one of pending, done, failed")
    assert backing.get(v1.id) == before
    assert backing.check_invariants() == []


class Raising:
    """An extractor that fails the way it is told to."""

    name = "raising/1"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def extract(self, text: str) -> Extraction:
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "status", "details", "client_error"),
    [
        (EmptyNote("the note is empty"), "INVALID_ARGUMENT", "[empty_note] the note is empty", EmptyNote),
        (Conflict("head moved; retry"), "ABORTED", "[conflict] head moved; retry", Conflict),
        (NotFound("no such model"), "NOT_FOUND", "[not_found] no such model", NotFound),
        (RuntimeError("boom at /srv/x.py"), "INTERNAL", "[internal] the server failed on this call; it", EvoMemError),
    ],
    ids=["invalid-argument", "aborted", "not-found", "crash-is-internal"],
)
def test_every_error_maps_to_its_status_and_back(
    exc: Exception, status: str, details: str, client_error: type[EvoMemError]
) -> None:
    running = cronista_server(Raising(exc))
    running.set_serving(True)
    addr = f"127.0.0.1:{running.port}"
    ch = grpc.insecure_channel(addr)
    client = GrpcExtractor(addr)
    try:
        stub = cronista_pb2_grpc.CronistaServiceStub(ch)
        err = rpc_error(lambda: stub.ExtractFields(cronista_pb2.ExtractFieldsRequest(text="x"), timeout=10))
        assert err.code() == getattr(grpc.StatusCode, status)
        assert err.details().startswith(details)
        assert "boom" not in err.details() and "/srv" not in err.details()  # the log has it, not the caller
        # The client turns it back into the domain error the servicer raised.
        with pytest.raises(EvoMemError) as info:
            client.extract("x")
        assert type(info.value) is client_error
        assert str(info.value).startswith(details)
    finally:
        client.close()
        ch.close()
        running.stop(0)


def test_a_dead_address_is_unavailable_not_a_grpc_error() -> None:
    client = GrpcStorage(f"127.0.0.1:{free_port()}", timeout_s=0.3)
    try:
        with pytest.raises(Unavailable) as info:
            client.get(UNKNOWN_ID)
        assert "storage" in str(info.value)
    finally:
        client.close()


# ============================================================================ shutdown and restart


class Gate:
    """An extractor that holds its call until released, so a call can be kept in flight."""

    name = "gate/1"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def extract(self, text: str) -> Extraction:
        self.entered.set()
        if not self.release.wait(60):
            raise RuntimeError("never released")
        return cronista.extract(text)


TEXT = "We moved the ledger to SQLite because Postgres was overkill."


def test_a_call_in_flight_completes_during_graceful_stop() -> None:
    gate = Gate()
    running = cronista_server(gate)
    running.set_serving(True)
    addr = f"127.0.0.1:{running.port}"
    client = GrpcExtractor(addr)
    probe = grpc.insecure_channel(addr)
    health = health_pb2_grpc.HealthStub(probe)
    try:
        assert check(probe, CRONISTA) == SERVING
        with ThreadPoolExecutor(2) as pool:
            inflight = pool.submit(client.extract, TEXT)
            try:
                assert gate.entered.wait(30)
                stopping = pool.submit(running.stop, 30)
                # Wait until the server refuses new calls: the stop (with grace) has begun.
                # A refused call is UNAVAILABLE or, when it reached the server as it shut
                # down, CANCELLED (gRPC core's choice, not ours).
                while True:
                    try:
                        health.Check(health_pb2.HealthCheckRequest(service=CRONISTA), timeout=10)
                    except grpc.RpcError as err:
                        assert err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
                        break
                    time.sleep(0.02)
                assert not inflight.done() and not stopping.done()  # stop waits for the call
            finally:
                gate.release.set()
            assert inflight.result(timeout=30) == cronista.extract(TEXT)
            stopping.result(timeout=30)
        # Stopped for good: a new call is refused.
        late = GrpcExtractor(addr, timeout_s=0.5)
        try:
            with pytest.raises(Unavailable):
                late.extract(TEXT)
        finally:
            late.close()
    finally:
        gate.release.set()
        probe.close()
        client.close()
        running.stop(0)


def test_a_call_made_while_the_server_is_down_waits_for_the_new_one(tmp_path: Path) -> None:
    addr = f"127.0.0.1:{free_port()}"
    store = SQLiteStore(tmp_path / "restart.db")
    first = storage_server(store, addr)
    first.set_serving(True)
    client = GrpcStorage(addr, timeout_s=60)
    failed, down = threading.Event(), threading.Event()
    stopped = threading.Event()

    def watch(state: grpc.ChannelConnectivity) -> None:
        if stopped.is_set() and state != grpc.ChannelConnectivity.READY:
            down.set()  # the client has seen the old server go
        if state == grpc.ChannelConnectivity.TRANSIENT_FAILURE:
            failed.set()

    try:
        node = client.remember_note(NoteWrite(NewNote(raw_text="Survives a restart", tags=("restart",)))).node
        client._channel.subscribe(watch)
        stopped.set()
        first.stop(0)  # returns once the server has stopped
        # A call made while the server is down, as the client sees it. (Sent in the moment the
        # server is closing, before the client has seen it go, a call is on the old connection
        # and fails UNAVAILABLE: that race made this test fail once in a full CI run.)
        assert down.wait(30)
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(client.get, node.id)
            # The channel tried to connect and failed; the call is still waiting, not failed.
            assert failed.wait(30)
            assert not pending.done()
            second = storage_server(store, addr)
            second.set_serving(True)
            try:
                assert pending.result(timeout=60) == node
                # And the channel is healthy again for the next call.
                again = client.remember_note(NoteWrite(NewNote(raw_text="After the restart"), supersedes=node.id)).node
                assert again.version == 2
            finally:
                second.stop(0)
    finally:
        client._channel.unsubscribe(watch)
        client.close()
        store.close()


class FlakyStorage(StorageServicer):
    """Storage whose GetStats and ForgetNode answer UNAVAILABLE ``fails`` times first, as a
    server closing under a call does, and count the calls that reached it."""

    def __init__(self, store: SQLiteStore, fails: int) -> None:
        super().__init__(LocalStorage(store))
        self.fails = {"GetStats": fails, "ForgetNode": fails}
        self.calls = {"GetStats": 0, "ForgetNode": 0}

    def _flake(self, name: str, context: Any) -> None:
        self.calls[name] += 1
        if self.fails[name] > 0:
            self.fails[name] -= 1
            context.abort(grpc.StatusCode.UNAVAILABLE, "closing")

    def GetStats(self, request: Any, context: Any) -> Any:
        self._flake("GetStats", context)
        return super().GetStats(request, context)

    def ForgetNode(self, request: Any, context: Any) -> Any:
        self._flake("ForgetNode", context)
        return super().ForgetNode(request, context)


def test_a_read_that_fails_unavailable_is_sent_again_and_a_write_is_not(
    backing: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    flaky = FlakyStorage(backing, fails=2)
    running = create_server(
        "127.0.0.1:0", lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(flaky, s), (STORAGE,)
    )
    running.set_serving(True)
    client = GrpcStorage(f"127.0.0.1:{running.port}", timeout_s=30)
    try:
        node = client.remember_note(NoteWrite(NewNote(raw_text="Kept through a flaky read"))).node
        assert client.stats().by_status.get("active") == 1  # the third try answered
        assert flaky.calls["GetStats"] == 3
        with pytest.raises(Unavailable, match=r"the storage service is unavailable.*\(ref (\w+)\)") as caught:
            client.forget(node.id)
        ref = re.search(r"ref (\w+)", str(caught.value)).group(1)  # type: ignore[union-attr]
        # gRPC's detail and the address are in the log, under the reference the caller got.
        assert any(ref in r.getMessage() and "closing" in r.getMessage() for r in caplog.records)
        assert flaky.calls["ForgetNode"] == 1  # never sent twice
        assert backing.get(node.id).status == "active"  # type: ignore[union-attr]
    finally:
        client.close()
        running.stop(0)


def test_the_retried_calls_are_real_methods_that_change_nothing() -> None:
    """A misspelt name in the retry config turns its retries off without a word: every name is a
    method of its service, and none of them writes."""
    from evomem.adapters.grpc.clients import RETRIED, SERVICE_CONFIG
    from evomem.v1 import linker_pb2

    files = {
        "evomem.v1.StorageService": storage_pb2,
        "evomem.v1.CronistaService": cronista_pb2,
        "evomem.v1.LinkerService": linker_pb2,
    }
    writes = {"RememberNote", "LinkNodes", "UnlinkNode", "ReviewNode", "ForgetNode", "SetExtraction", "AppendAudit"}
    for service, methods in RETRIED.items():
        desc = files[service].DESCRIPTOR.services_by_name[service.rsplit(".", 1)[1]]
        assert set(methods) <= {m.name for m in desc.methods}, service
        assert not set(methods) & writes
    config = __import__("json").loads(SERVICE_CONFIG)
    assert config["methodConfig"][0]["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]


# ============================================================================ metrics


def _count(method: str, code: str) -> float:
    return REGISTRY.get_sample_value("evomem_grpc_requests_total", {"method": method, "code": code}) or 0.0


def _latency_count(method: str) -> float:
    return REGISTRY.get_sample_value("evomem_grpc_latency_seconds_count", {"method": method}) or 0.0


def test_metrics_count_every_call_by_method_and_code(served: RunningServer) -> None:
    wanted = [
        ("RememberNote", "OK"),
        ("GetNode", "OK"),
        ("ForgetNode", "NOT_FOUND"),
        ("LinkNodes", "FAILED_PRECONDITION"),
        ("GetStats", "OK"),
    ]
    before = {key: _count(*key) for key in wanted}
    latency_before = _latency_count("GetNode")
    client = GrpcStorage(f"127.0.0.1:{served.port}")
    try:
        v1 = client.remember_note(NoteWrite(NewNote(raw_text="The ledger uses Postgres"))).node
        v2 = client.remember_note(NoteWrite(NewNote(raw_text="The ledger uses SQLite"), supersedes=v1.id)).node
        assert client.get(v1.id) is not None
        assert client.get(UNKNOWN_ID) is None
        assert client.get(v2.id) is not None
        with pytest.raises(NotFound):
            client.forget(UNKNOWN_ID)
        with pytest.raises(EvoMemError):
            client.link(v1.id, v2.id, LinkProvenance("agent"))
        client.stats()
    finally:
        client.close()
    delta = {key: _count(*key) - before[key] for key in wanted}
    assert delta == {
        ("RememberNote", "OK"): 2,
        ("GetNode", "OK"): 3,
        ("ForgetNode", "NOT_FOUND"): 1,
        ("LinkNodes", "FAILED_PRECONDITION"): 1,
        ("GetStats", "OK"): 1,
    }
    assert _latency_count("GetNode") - latency_before == 3


def test_a_server_without_metrics_counts_nothing(backing: SQLiteStore) -> None:
    running = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), s),
        (STORAGE,),
        metrics=False,
    )
    before = _count("ListPendingExtractions", "OK")
    client = GrpcStorage(f"127.0.0.1:{running.port}")
    try:
        assert client.pending_extractions(5) == []
    finally:
        client.close()
        running.stop(0)
    assert _count("ListPendingExtractions", "OK") == before


# ============================================================================ evomem-service and the gateway


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env.update(extra)
    return env


@pytest.mark.parametrize("args", [[], ["bogus"], ["storage", "extra"]], ids=["none", "unknown", "two"])
def test_evomem_service_usage_errors_exit_2(args: list[str]) -> None:
    assert services.main(args) == 2


def test_evomem_service_help_lists_the_commands() -> None:
    proc = subprocess.run([EVOMEM_SERVICE, "--help"], env=_clean_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for command in ("storage", "cronista", "linker", "worker", "gateway"):
        assert re.search(rf"^  {command} +\S", proc.stdout, flags=re.MULTILINE), proc.stdout


def test_evomem_service_command_without_args_exits_2_with_usage() -> None:
    proc = subprocess.run([EVOMEM_SERVICE], env=_clean_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "usage: evomem-service {storage|cronista|linker|worker|gateway}" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("command", "env", "message"),
    [
        ("cronista", {"EVOMEM_CRONISTA_BACKEND": "triton"}, "EVOMEM_CRONISTA_BACKEND"),
        ("linker", {"EVOMEM_LINKER": "off"}, "EVOMEM_LINKER=off"),
        ("linker", {"EVOMEM_LINKER": "magic"}, "EVOMEM_LINKER must be one of off, heuristic, scored, pair, llm"),
        ("linker", {"EVOMEM_LINKER": "llm"}, "EVOMEM_LINKER=llm: auto_supersede llm needs"),
        ("linker", {"EVOMEM_GRPC_PORT": "not-a-port"}, "EVOMEM_GRPC_PORT must be an integer"),
        ("storage", {"EVOMEM_VECTORS": "maybe", "EVOMEM_DB": "/nonexistent/x.db"}, "EVOMEM_VECTORS must be one of"),
        ("worker", {"EVOMEM_JOB_MAX_ATTEMPTS": "0"}, "EVOMEM_JOB_MAX_ATTEMPTS must be between 1 and"),
        ("worker", {"EVOMEM_REDIS_URL": "redis://127.0.0.1:1/0"}, "EVOMEM_STORAGE_ADDR must be set"),
        ("gateway", {"EVOMEM_STORAGE_ADDR": "127.0.0.1:1"}, "EVOMEM_REDIS_URL must be set"),
    ],
    ids=[
        "cronista-backend",
        "linker-off",
        "linker-unknown",
        "linker-llm-no-model",
        "bad-port",
        "storage-vectors",
        "worker-attempts",
        "worker-storage",
        "gateway-redis",
    ],
)
def test_evomem_service_config_errors_exit_2(command: str, env: dict[str, str], message: str) -> None:
    proc = subprocess.run(
        [EVOMEM_SERVICE, command],
        env=_clean_env(EVOMEM_LOG_FORMAT="text", **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


SERVICE_ENUMS = {
    "storage": {"EVOMEM_VECTORS": ("auto2", "auto, on, off")},
    "cronista": {"EVOMEM_CRONISTA_BACKEND": ("lite2", "lite, onnx, triton")},
    "linker": {"EVOMEM_LINKER": ("scroed", "off, heuristic, scored, pair, llm")},
    "worker": {},
    "gateway": {"EVOMEM_VECTORS": ("auto2", "auto, on, off")},
}


@pytest.mark.parametrize("command", sorted(SERVICE_ENUMS))
def test_every_service_refuses_a_misspelt_choice_at_start_up(command: str) -> None:
    """``EVOMEM_AUTO_SUPERSEDE=scroed`` (and a misspelt value of the service's own choice) stops
    every service before it binds or connects: status 2, one line naming the variable and
    the allowed values."""
    cases = {"EVOMEM_AUTO_SUPERSEDE": ("scroed", "off, heuristic, scored, pair, llm"), **SERVICE_ENUMS[command]}
    for name, (value, allowed) in cases.items():
        proc = subprocess.run(
            [EVOMEM_SERVICE, command],
            env=_clean_env(**{name: value}),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, (name, proc.stderr)
        assert proc.stderr.strip() == f"evomem-service {command}: {name} must be one of {allowed}, got {value!r}"
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["storage", "cronista", "linker", "worker"])
def test_a_missing_extra_is_one_line_naming_it(tmp_path: Path, command: str) -> None:
    """Without grpc (hidden here by a module that fails to import) a service says which extra to install."""
    hidden = tmp_path / "hide" / "grpc"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'grpc\'", name="grpc")\n')
    path = os.pathsep.join([str(hidden.parent), os.environ.get("PYTHONPATH", "")])
    env = _clean_env(
        PYTHONPATH=path,
        EVOMEM_DB=str(tmp_path / "x.db"),
        EVOMEM_REDIS_URL="redis://127.0.0.1:1/0",
        EVOMEM_STORAGE_ADDR="127.0.0.1:1",
        EVOMEM_CRONISTA_ADDR="127.0.0.1:1",
        EVOMEM_VECTORS="off",
    )
    proc = subprocess.run([EVOMEM_SERVICE, command], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.strip()
        == f"evomem-service {command}: grpc is not installed: install it with pip install 'evomem-mcp[services]'"
    )


class _Stop(Exception):
    pass


@pytest.mark.parametrize(("value", "expected"), [(None, "/data/evomem.db"), ("/tmp/x/evomem.db", "/tmp/x/evomem.db")])
def test_storage_db_path_defaults_to_data(monkeypatch: pytest.MonkeyPatch, value: str | None, expected: str) -> None:
    opened: list[str] = []

    def fake_store(path: str, **_: Any) -> Any:
        opened.append(str(path))
        raise _Stop  # stop before binding a port

    monkeypatch.setattr("evomem.bootstrap.stores.SQLiteStore", fake_store)  # the composition root's store
    if value is None:
        monkeypatch.delenv("EVOMEM_DB", raising=False)
    else:
        monkeypatch.setenv("EVOMEM_DB", value)
    with pytest.raises(_Stop):
        bootstrap.build_storage(Settings.from_env())
    assert opened == [expected]


def wait_health(address: str, service: str, proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
    """Until the process's gRPC health says ``service`` is SERVING (fails if it exits)."""
    ch = grpc.insecure_channel(address)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if check(ch, service) == SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"{service} at {address} not serving after {timeout_s} s")
    finally:
        ch.close()


def _wait_serving(address: str, proc: subprocess.Popen[str]) -> None:
    wait_health(address, STORAGE, proc)


def test_storage_process_serves_and_drains_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "proc.db"
    proc = subprocess.Popen(
        [EVOMEM_SERVICE, "storage"],
        env=_clean_env(EVOMEM_DB=str(db), EVOMEM_GRPC_HOST="127.0.0.1", EVOMEM_GRPC_PORT=str(port)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_serving(f"127.0.0.1:{port}", proc)
        client = GrpcStorage(f"127.0.0.1:{port}")
        try:
            node = client.remember_note(NoteWrite(NewNote(raw_text="Written through the storage process"))).node
            assert client.get(node.id) == node
        finally:
            client.close()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out == ""  # logs go to stderr
    assert "SIGTERM" in err
    reopened = SQLiteStore(db)
    try:
        assert reopened.get(node.id) == node
    finally:
        reopened.close()


@pytest.fixture
def keep_logging() -> Iterator[None]:
    """create_app configures the root logger; put it back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def gateway_env(monkeypatch: pytest.MonkeyPatch, keep_logging: None) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("EVOMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVOMEM_LOG_LEVEL", "WARNING")
    return monkeypatch


def test_gateway_needs_the_storage_address(gateway_env: pytest.MonkeyPatch) -> None:
    gateway_env.setenv("EVOMEM_REDIS_URL", "redis://127.0.0.1:1/0")
    with pytest.raises(SettingsError, match="EVOMEM_STORAGE_ADDR must be set"):
        gateway.create_app()
    gateway_env.setenv("EVOMEM_STORAGE_ADDR", "")
    with pytest.raises(SettingsError, match="EVOMEM_STORAGE_ADDR must be set"):
        gateway.create_app()


def test_gateway_needs_redis_and_a_linker_when_auto_supersede_is_on(gateway_env: pytest.MonkeyPatch) -> None:
    gateway_env.setenv("EVOMEM_STORAGE_ADDR", "127.0.0.1:1")
    with pytest.raises(SettingsError, match="EVOMEM_REDIS_URL must be set"):
        gateway.create_app()
    gateway_env.setenv("EVOMEM_REDIS_URL", "redis://127.0.0.1:1/0")
    gateway_env.setenv("EVOMEM_AUTO_SUPERSEDE", "heuristic")
    with pytest.raises(SettingsError, match="EVOMEM_LINKER_ADDR"):
        gateway.create_app()


def test_a_misspelt_auto_supersede_does_not_turn_linking_on(gateway_env: pytest.MonkeyPatch) -> None:
    """It used to: any value but ``off`` linked, typos included. Now the gateway refuses to start."""
    gateway_env.setenv("EVOMEM_STORAGE_ADDR", "127.0.0.1:1")
    gateway_env.setenv("EVOMEM_REDIS_URL", "redis://127.0.0.1:1/0")
    gateway_env.setenv("EVOMEM_LINKER_ADDR", "127.0.0.1:1")
    gateway_env.setenv("EVOMEM_AUTO_SUPERSEDE", "scroed")
    with pytest.raises(SettingsError, match=r"^EVOMEM_AUTO_SUPERSEDE must be one of off, heuristic, scored, pair, llm"):
        gateway.create_app()
    gateway_env.setenv("EVOMEM_AUTO_SUPERSEDE", "off")
    service = bootstrap.build_gateway(Settings.from_env())
    try:
        assert service.linker is None  # off: the linker address is not used
    finally:
        if service.vectors is not None:
            service.vectors.close()  # type: ignore[attr-defined]
        service.close()  # type: ignore[attr-defined]


class _RpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


@pytest.mark.parametrize(
    "code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED]
)
def test_a_server_going_away_reads_as_unavailable(code):
    # CANCELLED reaches a client whose call arrived while the server was shutting down.
    from evomem.adapters.grpc.errors import from_rpc_error
    from evomem.domain.errors import Unavailable

    err = from_rpc_error(_RpcError(code, "failed to connect to 10.0.0.7:50051"), "storage", "10.0.0.7:50051")
    assert isinstance(err, Unavailable)
    assert str(err).startswith("[unavailable] the storage service is unavailable")
    assert "10.0.0.7" not in str(err) and "50051" not in str(err)  # the address is in the log only
    assert re.search(r"\(ref [0-9a-f]{8}\)$", str(err))
