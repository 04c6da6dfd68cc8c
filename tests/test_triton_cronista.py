"""The ``triton`` cronista backend against a real Triton server on the CPU.

The server is PyTriton's tritonserver 2.51 serving models/triton-cpu (Python-backend models that
run the same model.onnx with onnxruntime) on loopback, in its own venv (tests/triton_support.py).
The cronista model is the tiny random-weights one (scripts/make_tiny_cronista.py, the real
model's tensors): it tests the protocol and the contract, never quality; where the trained model
is in the repository, the parity test runs on it too.

What must hold: the backend satisfies the Extractor port exactly as the lite cronista does
(tests/test_cronista.py: fields are source spans, the summary is source sentences in order), it
returns what ``onnx`` in process returns for the same file, concurrent calls are batched by the
server without mixing rows, and when Triton goes away
mid-run every note is still extracted, by lite, recorded on the node and counted, while the
cronista service's health says it is degraded.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.procs import free_port
from evomem.adapters.models.onnx_cronista import OnnxCronista
from evomem.adapters.models.triton import TritonModel
from evomem.adapters.models.triton_cronista import TritonCronista, fallback_count
from evomem.app.ports import Extractor
from evomem.domain.model import Extraction, ExtractionState
from tests.test_cronista import made_of_source_spans, summary_is_source_sentences_in_order
from tests.triton_support import ROOT, TritonServer, cpu_repository, make_tiny_cronista, triton_venv

pytest.importorskip("tritonclient.grpc")

FIELDS = ("trigger", "change", "alternatives_tried", "consequences", "summary")
TRAINED = ROOT / "services" / "evomem" / "adapters" / "models" / "cronista"
NOTES = [
    "We moved the ledger to SQLite because Postgres was overkill for a single writer. "
    "We tried DuckDB but it lacked concurrent writers. As a result, backups are now a file copy.",
    "Switched CI from Jenkins to GitHub Actions due to constant plugin breakage; we considered GitLab CI too.",
    "fix: pin grpcio to 1.85 (1.86 broke the health servicer)",
    "- cache: Redis\n- reason: the team already runs it\n- rejected: Memcached",
    "Décidé : on garde PostgreSQL pour l'entrepôt, MySQL écarté.",
    "ok",
]
LONG_NOTE = " ".join(
    f"Decision {i}: we switched service {i} from REST to gRPC because latency mattered; as a result clients changed."
    for i in range(40)
)  # several windows of 256 tokens


def tiny_model(directory: Path) -> Path:
    return make_tiny_cronista(directory / "tiny-cronista")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    pytest.importorskip("onnx")
    return tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny) -> TritonServer:
    python = triton_venv()
    base = tmp_path_factory.mktemp("triton")
    server = TritonServer(cpu_repository(base, cronista_dir=tiny), base / "run", python).start()
    yield server
    server.stop()


def cronista(server: TritonServer, tiny: Path, **kw) -> TritonCronista:
    return TritonCronista(TritonModel(server.grpc_url, "cronista", timeout_s=kw.pop("timeout_s", 5.0)), tiny, **kw)


# ----------------------------------------------------------------------------- the Extractor contract


def test_it_is_an_extractor_named_after_the_backend_and_the_model(server, tiny):
    c = cronista(server, tiny)
    assert isinstance(c, Extractor)
    ex = c.extract(NOTES[0])
    assert isinstance(ex, Extraction)
    assert ex.extractor == c.name == "triton/cronista-minilm-1"
    assert c.degraded is None


@pytest.mark.parametrize("text", [*NOTES, LONG_NOTE])
def test_every_field_is_made_of_source_spans(server, tiny, text):
    ex = cronista(server, tiny).extract(text)
    for name in FIELDS[:4]:
        assert made_of_source_spans(getattr(ex, name), text), (name, getattr(ex, name))
    assert summary_is_source_sentences_in_order(ex.summary, text)


def test_blank_text_gives_an_empty_extraction_without_calling_triton(tiny):
    dead = TritonCronista(TritonModel(f"127.0.0.1:{free_port()}", "cronista", timeout_s=0.5), tiny)
    ex = dead.extract("   \n")
    assert ex == Extraction(extractor=dead.name)
    assert dead.degraded is None


def test_a_non_string_is_a_type_error(server, tiny):
    with pytest.raises(TypeError):
        cronista(server, tiny).extract(b"bytes")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the client cannot tell


@pytest.mark.parametrize("text", [*NOTES, LONG_NOTE])
def test_triton_returns_what_onnx_returns_in_process_for_the_same_file(server, tiny, text):
    over_triton = cronista(server, tiny).extract(text)
    in_process = OnnxCronista(tiny).extract(text)
    assert [getattr(over_triton, f) for f in FIELDS] == [getattr(in_process, f) for f in FIELDS]


def test_the_trained_model_gives_the_same_fields_over_triton(tmp_path):
    if not (TRAINED / "model.onnx").is_file():
        pytest.skip("no trained cronista model in the repository yet (make -C lab train-cronista)")
    repo = cpu_repository(tmp_path, cronista_dir=TRAINED, models="cronista")
    real = TritonServer(repo, tmp_path / "run", triton_venv()).start()
    try:
        remote = TritonCronista(TritonModel(real.grpc_url, "cronista", timeout_s=10), TRAINED)
        plain = TritonCronista(TritonModel(real.grpc_url, "cronista", timeout_s=10, length_buckets=()), TRAINED)
        local = OnnxCronista(TRAINED)
        for text in [*NOTES, LONG_NOTE]:
            a, b = remote.extract(text), local.extract(text)
            assert [getattr(a, f) for f in FIELDS] == [getattr(b, f) for f in FIELDS]
            # padded to a length bucket or not: the same clauses and spans (the int8 graph masks padding)
            bucketed, unpadded = remote.reader.analyse(text), plain.reader.analyse(text)
            assert (bucketed.clauses, bucketed.spans) == (unpadded.clauses, unpadded.spans)
    finally:
        real.stop()


@pytest.mark.parametrize("text", [*NOTES, LONG_NOTE])
def test_length_buckets_give_the_same_clauses_and_spans(server, tiny, text):
    bucketed = cronista(server, tiny).reader.analyse(text)
    plain = TritonCronista(TritonModel(server.grpc_url, "cronista", timeout_s=5.0, length_buckets=()), tiny)
    unpadded = plain.reader.analyse(text)
    assert (bucketed.extraction, bucketed.clauses, bucketed.spans) == (
        unpadded.extraction,
        unpadded.clauses,
        unpadded.spans,
    )


def test_concurrent_notes_are_batched_by_the_server_without_mixing_rows(server, tiny):
    c = cronista(server, tiny)
    notes = [f"{NOTES[i % 4]} Note {i}." for i in range(48)]
    serial = [c.extract(t) for t in notes]
    with ThreadPoolExecutor(8) as pool:
        parallel = list(pool.map(c.extract, notes))
    assert parallel == serial


# ----------------------------------------------------------------------------- Triton goes away mid-run


def test_when_triton_dies_mid_run_every_note_is_extracted_by_lite_recorded_and_counted(tmp_path, tiny):
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.app.memory import MemoryService, ServiceConfig

    own = TritonServer(cpu_repository(tmp_path, cronista_dir=tiny, models="cronista"), tmp_path / "run", triton_venv())
    own.start()
    store = SQLiteStore(tmp_path / "evomem.db")
    try:
        model = TritonModel(own.grpc_url, "cronista", timeout_s=1.0, retries=1, backoff_s=0.05)
        c = TritonCronista(model, tiny, retry_after_s=60)
        states: list[str | None] = []
        c.on_change = states.append
        service = MemoryService.local(store, extractor=c, config=ServiceConfig(extract_inline=True))
        before = fallback_count()
        ids = [service.remember(f"{NOTES[i % 4]} (note {i})").node.id for i in range(10)]
        own.kill()  # mid-run: the server and its model stubs, SIGKILL
        ids += [service.remember(f"{NOTES[i % 4]} (note {i})").node.id for i in range(10, 25)]
        nodes = [store.get(i) for i in ids]
        assert all(n is not None and n.extraction_state == ExtractionState.DONE for n in nodes)
        used = [n.extractor for n in nodes]  # type: ignore[union-attr]
        assert used[:10] == ["triton/cronista-minilm-1"] * 10
        assert used[10:] == ["lite/1 (fallback from triton/cronista-minilm-1)"] * 15
        assert all(n.change or n.trigger or n.consequences for n in nodes[10:])  # type: ignore[union-attr]
        assert fallback_count() - before == 15
        assert c.degraded in {"unavailable", "deadline"}
        assert states == [c.degraded]  # told once, when it happened
        assert c.check() is not None  # still down
    finally:
        own.stop()
        store.close()


def test_the_cronista_service_reports_degraded_while_triton_is_down_and_recovers(tmp_path, tiny):
    """The gRPC cronista service with EVOMEM_CRONISTA_BACKEND=triton: NOT_SERVING for its
    service name (but "" SERVING) while Triton is down, SERVING again once it is back; its
    ExtractFields answers throughout."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from evomem.adapters.grpc.clients import GrpcExtractor
    from evomem.bootstrap.services import build_cronista
    from evomem.settings import Settings

    repo = cpu_repository(tmp_path, cronista_dir=tiny, models="cronista")
    first = TritonServer(repo, tmp_path / "run1", triton_venv()).start()
    settings = Settings.from_env(
        {
            "EVOMEM_CRONISTA_BACKEND": "triton",
            "EVOMEM_TRITON_URL": first.grpc_url,
            "EVOMEM_CRONISTA_MODEL_DIR": str(tiny),
            "EVOMEM_TRITON_TIMEOUT_MS": "1000",
            "EVOMEM_TRITON_RETRY_AFTER_S": "1",
            "EVOMEM_GRPC_HOST": "127.0.0.1",
            "EVOMEM_GRPC_PORT": "0",
        }
    )
    service = build_cronista(settings)
    assert service.description == "backend triton/cronista-minilm-1"
    second: TritonServer | None = None
    try:
        running = service.start()
        channel = grpc.insecure_channel(f"127.0.0.1:{running.port}")
        health = health_pb2_grpc.HealthStub(channel)

        def status(name: str) -> str:
            res = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=2)
            return health_pb2.HealthCheckResponse.ServingStatus.Name(res.status)

        client = GrpcExtractor(f"127.0.0.1:{running.port}")
        assert client.extract(NOTES[0]).extractor == "triton/cronista-minilm-1"
        assert status("evomem.v1.CronistaService") == "SERVING"
        first.kill()
        assert client.extract(NOTES[1]).extractor.startswith("lite/1 (fallback")
        assert status("evomem.v1.CronistaService") == "NOT_SERVING"
        assert status("") == "SERVING"
        # Triton back on the same port: the probe (every second) clears the state.
        second = TritonServer(repo, tmp_path / "run2", triton_venv())
        second.grpc_port, second.http_port, second.metrics_port = first.grpc_port, first.http_port, first.metrics_port
        second.start()
        deadline = time.monotonic() + 20
        while status("evomem.v1.CronistaService") != "SERVING" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status("evomem.v1.CronistaService") == "SERVING"
        assert client.extract(NOTES[2]).extractor == "triton/cronista-minilm-1"
        assert fallback_count() >= 1
        channel.close()
    finally:
        service.stop()
        first.stop()
        if second is not None:
            second.stop()


def test_a_triton_cronista_without_a_url_refuses_to_start():
    from evomem.bootstrap.services import build_cronista
    from evomem.ops.runtime import ConfigError
    from evomem.settings import Settings

    with pytest.raises(ConfigError, match="EVOMEM_TRITON_URL"):
        build_cronista(Settings.from_env({"EVOMEM_CRONISTA_BACKEND": "triton"}))
