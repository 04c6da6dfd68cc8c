"""The token file, the registry and ``evomem-admin`` (issue 14): unit level, real files."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from evomem.app.access import Principal, require_role, visible_info
from evomem.domain.errors import Forbidden
from evomem.security.tokens import AuthFileError, TokenRegistry, digest, load_token_file

GOOD = """
[[tokens]]
name = "alice"
sha256 = "{a}"
role = "writer"
namespaces = ["team-a", "shared"]
rate = 2.5

[[tokens]]
name = "root"
sha256 = "{r}"
role = "admin"
namespaces = ["*"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_gives_principals_and_only_exact_tokens_match(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.format(a=digest("alice-token"), r=digest("root-token").upper()))
    registry = TokenRegistry(path)
    assert len(registry) == 2
    assert registry.verify("alice-token") == Principal("alice", "writer", ("team-a", "shared"), 2.5)
    assert registry.verify("root-token") == Principal("root", "admin", ("*",), None)
    for wrong in ("", "alice-token ", "Alice-token", "alice-toke", digest("alice-token"), "x" * 5000, "\udcff"):
        assert registry.verify(wrong) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"no \[\[tokens\]\] table"),
        ("[[tokens]]\nname='a'\nsha256='00'\nrole='writer'\nnamespaces=['a']\n", "64-character hex digest"),
        (f"[[tokens]]\nname='a'\nsha256='{'0' * 64}'\nrole='owner'\nnamespaces=['a']\n", "role must be one of"),
        (f"[[tokens]]\nname='a'\nsha256='{'0' * 64}'\nrole='reader'\nnamespaces=[]\n", "namespaces must be"),
        (f"[[tokens]]\nname='a'\nsha256='{'0' * 64}'\nrole='reader'\nnamespaces=['a']\nrate=0\n", "rate must be"),
        (f"[[tokens]]\nname='a'\nsha256='{'0' * 64}'\nrole='reader'\nnamespaces=['a']\nrole2=1\n", "unknown key"),
        (
            f"[[tokens]]\nname='a'\nsha256='{'0' * 64}'\nrole='reader'\nnamespaces=['a']\n"
            f"[[tokens]]\nname='a'\nsha256='{'1' * 64}'\nrole='reader'\nnamespaces=['a']\n",
            "used twice",
        ),
        ("not toml [[[", "not valid TOML"),
    ],
)
def test_a_bad_file_is_refused_with_the_entry_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(AuthFileError, match=message):
        load_token_file(write(tmp_path, text))


def test_reload_swaps_tokens_and_keeps_them_on_a_bad_file(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.format(a=digest("one"), r=digest("root")))
    registry = TokenRegistry(path)
    write(tmp_path, GOOD.format(a=digest("two"), r=digest("root")))
    assert registry.reload() is True
    assert registry.verify("one") is None and registry.verify("two") is not None
    write(tmp_path, "broken = [")
    assert registry.reload() is False
    assert registry.verify("two") is not None


def test_roles_and_what_stats_shows() -> None:
    reader = Principal("rita", "reader", ("a",))
    with pytest.raises(Forbidden, match="needs the writer role"):
        require_role(reader, "remember")
    with pytest.raises(Forbidden, match=r"forget\(purge=true\) needs the admin role"):
        require_role(Principal("w", "writer", ("a",)), "purge")
    require_role(Principal("r", "admin", ("a",)), "audit")
    info = {"version": "1", "db": "/data/evomem.db", "storage": "storage:50051", "wiring": "gateway"}
    assert visible_info(reader, info) == {"version": "1", "wiring": "gateway"}
    assert visible_info(Principal("r", "admin", ("*",)), info) == info
    # Without auth (a loopback server): everything but the peers' addresses.
    assert visible_info(None, info) == {"version": "1", "db": "/data/evomem.db", "wiring": "gateway"}


def test_evomem_admin_token_create_prints_a_token_the_server_accepts(tmp_path: Path) -> None:
    args = ["token", "create", "--name", "alice", "--role", "writer", "--namespaces", "team-a,shared", "--rate", "5"]
    done = subprocess.run(
        [sys.executable, "-m", "evomem.entrypoints.cli.admin", *args], capture_output=True, text=True, check=True
    )
    token = next(line for line in done.stderr.splitlines() if line.startswith("evm_"))
    assert token not in done.stdout  # the entry holds only the digest
    assert tomllib.loads(done.stdout)["tokens"][0]["sha256"] == digest(token)
    registry = TokenRegistry(write(tmp_path, done.stdout))
    assert registry.verify(token) == Principal("alice", "writer", ("team-a", "shared"), 5.0)
    bad = subprocess.run(
        [sys.executable, "-m", "evomem.entrypoints.cli.admin", "token", "create", "--name", "x", "--role", "reader",
         "--namespaces", "bad name!"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode == 2 and "namespace" in bad.stderr
    admin = "evomem.entrypoints.cli.admin"
    secret = subprocess.run(
        [sys.executable, "-m", admin, "grpc-secret"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert len(secret.stdout.strip()) >= 40
