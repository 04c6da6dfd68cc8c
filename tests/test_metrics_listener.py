"""/metrics follows the bind rule of every listener (issue 34): loopback by default; a
non-loopback address needs a bearer token (EVOMEM_METRICS_TOKEN or _FILE), or
EVOMEM_METRICS_INSECURE and then a warning at every start; a request without the token is 401.

Real parts: the metrics server of ``ops.runtime`` on loopback, a real ``evomem-service storage``
process refusing to start.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from procutil import free_port

from evomem.ops.runtime import ConfigError, start_metrics
from evomem.security.configure import metrics_listen
from evomem.settings import Settings, SettingsError

EVOMEM_SERVICE = str(Path(sys.executable).with_name("evomem-service"))


def test_a_non_loopback_metrics_address_needs_a_token_or_says_it_is_insecure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert metrics_listen(Settings(metrics_port=9464)) == (9464, "127.0.0.1", None)  # loopback: no token needed
    assert metrics_listen(Settings(metrics_host="0.0.0.0")) == (0, "0.0.0.0", None)  # off: nothing listens
    with pytest.raises(ConfigError, match="without a token: set EVOMEM_METRICS_TOKEN_FILE"):
        metrics_listen(Settings(metrics_host="0.0.0.0", metrics_port=9464))
    with pytest.raises(ConfigError):
        metrics_listen(Settings(metrics_host="10.1.2.3", metrics_port=9464))
    with caplog.at_level(logging.WARNING, logger="evomem.security"):
        assert metrics_listen(Settings(metrics_host="0.0.0.0", metrics_port=9464, metrics_insecure=True))[2] is None
    assert "INSECURE: /metrics on 0.0.0.0:9464" in caplog.text
    token = tmp_path / "metrics-token"
    token.write_text("scrape-me\n")
    assert metrics_listen(Settings(metrics_host="0.0.0.0", metrics_port=9464, metrics_token_file=str(token))) == (
        9464,
        "0.0.0.0",
        "scrape-me",
    )
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(SettingsError, match=r"EVOMEM_METRICS_TOKEN_FILE: .* is empty"):
        metrics_listen(Settings(metrics_host="0.0.0.0", metrics_port=9464, metrics_token_file=str(empty)))


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        assert exc.code != 401 or exc.headers["WWW-Authenticate"] == "Bearer"
        return exc.code, exc.read().decode()


def test_metrics_with_a_token_answer_401_without_it() -> None:
    port = free_port()
    start_metrics(port, "127.0.0.1", token="scrape-me")
    url = f"http://127.0.0.1:{port}/metrics"
    assert _get(url)[0] == 401
    assert _get(url, "scrape-me-not")[0] == 401
    assert _get(url, "scrape")[0] == 401
    status, body = _get(url, "scrape-me")
    assert status == 200 and "python_info" in body


def test_a_service_refuses_to_start_with_open_metrics_and_says_why(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env.update(
        EVOMEM_DB=str(tmp_path / "s.db"),
        EVOMEM_GRPC_PORT=str(free_port()),
        EVOMEM_METRICS_HOST="0.0.0.0",
        EVOMEM_METRICS_PORT=str(free_port()),
        EVOMEM_VECTORS="off",
    )
    done = subprocess.run([EVOMEM_SERVICE, "storage"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "refusing to serve /metrics on 0.0.0.0" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_container_health_probe_sends_the_metrics_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's compose health check reads /metrics: with a token set, it must send it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("healthcheck", Path(__file__).parents[1] / "docker/healthcheck.py")
    assert spec is not None and spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    port = free_port()
    start_metrics(port, "127.0.0.1", token="probe-me")
    (tmp_path / "token").write_text("probe-me\n")
    monkeypatch.delenv("EVOMEM_METRICS_TOKEN", raising=False)
    monkeypatch.setenv("EVOMEM_METRICS_TOKEN_FILE", str(tmp_path / "token"))
    assert probe.metrics_token() == "probe-me"
    assert "HTTP Error 401" in (probe.probe_http(port, "/metrics") or "")
    assert probe.probe_http(port, "/metrics", probe.metrics_token()) is None
