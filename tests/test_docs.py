"""The README is the reference: it must keep up with the server.

Rules checked here:

- README.md has a section ``## Tools`` with one ``### `<tool>``` heading per tool the MCP
  server registers (asked with ``list_tools`` on an in-process server), and no heading for a
  tool that does not exist;
- every parameter of every tool (its input schema) is mentioned as code, a whole word inside
  a `code span` or a fenced block, in that tool's subsection (the signature line counts);
- every setting of the embedded server has its ``EVOMEM_*`` variable and its ``--flag`` in the
  README;
- every variable the settings model reads (``evomem.settings.env_names()``, the services' too)
  has a row in docs/SERVICES.md's "Every variable" table, naming its setting and its default;
- no document or compose file names an ``EVOMEM_*`` variable that nothing reads;
- ``.ci/run`` runs the README's test command, ``make test``, and the Makefile has that target.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import anyio
import pytest
from mcp import Client

from evomem.entrypoints.cli.mcp import FLAGS, parser
from evomem.entrypoints.mcp.server import build_mcp_server
from evomem.settings import PREFIX, describe, env_names

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SERVICES = ROOT / "docs" / "SERVICES.md"
#: Variables read by compose or by the tests, not by an EvoMem process.
# Read by something other than EvoMem's settings: docker compose on the host (bind address, image,
# model paths mounted into triton and llm, the secrets folder), and the benchmark's LLM judge.
NOT_SETTINGS = {
    "EVOMEM_BIND",
    "EVOMEM_IMAGE",
    "EVOMEM_JUDGE_API_KEY",
    "EVOMEM_MODEL_REPOSITORY",
    "EVOMEM_LLM_MODELS",
    "EVOMEM_LLM_GGUF",
    "EVOMEM_SECRETS_DIR",  # compose: the folder holding tokens.toml and grpc-secret
}
CI_RUN = ROOT / ".ci" / "run"
MAKEFILE = ROOT / "Makefile"
TEST_COMMAND = "make test"


def _no_service() -> NoReturn:
    raise AssertionError("listing tools must not need the memory service")


async def _list_tools() -> dict[str, dict[str, Any]]:
    async with Client(build_mcp_server(_no_service)) as client:
        listed = await client.list_tools()
    return {tool.name: tool.input_schema for tool in listed.tools}


@pytest.fixture(scope="module")
def tools() -> dict[str, dict[str, Any]]:
    found = anyio.run(_list_tools)
    assert found, "the server registers no tools"
    return found


@pytest.fixture(scope="module")
def readme() -> str:
    assert README.is_file(), f"{README} is missing"
    return README.read_text(encoding="utf-8")


def _section(text: str, heading: str, level: int) -> str:
    """The body under ``heading`` (a whole line), up to the next heading of the same or a higher level."""
    lines = text.splitlines()
    try:
        start = lines.index(heading)
    except ValueError:
        raise AssertionError(f"README.md has no {heading!r} heading") from None
    body: list[str] = []
    fence = False
    for line in lines[start + 1 :]:
        if line.lstrip().startswith("```"):
            fence = not fence
        if not fence and re.match(rf"^#{{1,{level}}} ", line):
            break
        body.append(line)
    return "\n".join(body)


def _tool_sections(readme: str) -> dict[str, str]:
    tools_part = _section(readme, "## Tools", 2)
    names = re.findall(r"^### `([^`]+)`\s*$", tools_part, flags=re.MULTILINE)
    return {name: _section(tools_part, f"### `{name}`", 3) for name in names}


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text) is not None


def _code(text: str) -> str:
    """The code in a Markdown text: fenced blocks and inline `spans`, one per line."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return "\n".join([*blocks, *re.findall(r"`([^`\n]+)`", prose)])


def test_readme_documents_every_tool(readme: str, tools: dict[str, dict[str, Any]]) -> None:
    documented = _tool_sections(readme)
    missing = sorted(set(tools) - set(documented))
    assert not missing, f"tools registered on the server but without a '### `name`' heading under '## Tools': {missing}"
    stale = sorted(set(documented) - set(tools))
    assert not stale, f"README documents tools the server does not register: {stale}"


def test_readme_documents_every_parameter(readme: str, tools: dict[str, dict[str, Any]]) -> None:
    documented = _tool_sections(readme)
    missing = [
        f"{tool}.{param}"
        for tool, schema in sorted(tools.items())
        for param in schema.get("properties", {})
        if tool in documented and not _mentions(_code(documented[tool]), param)
    ]
    assert not missing, f"parameters not mentioned in their tool's README section: {missing}"
    for tool, body in documented.items():
        assert len(body.strip()) > 80, f"the README section for {tool} is nearly empty"


def test_readme_lists_every_setting(readme: str) -> None:
    variables = [PREFIX + key.upper() for key in FLAGS] + ["EVOMEM_LINKER_STRUCTURED", "EVOMEM_LINKER_API_KEY"]
    assert set(variables) <= env_names()
    missing = [v for v in variables if v not in readme]
    assert not missing, f"settings without their environment variable in README.md: {missing}"
    flags = [
        option
        for action in parser()._actions
        for option in action.option_strings
        if option.startswith("--") and option not in ("--help", "--version")
    ]
    assert flags, "the command line has no flags?"
    missing = [flag for flag in flags if not re.search(rf"{re.escape(flag)}(?![a-z-])", readme)]
    assert not missing, f"command-line flags not in README.md: {missing}"


def _table_rows(text: str, heading: str) -> dict[str, list[str]]:
    """The rows of the first table under ``heading``, keyed by their first cell's `code`."""
    rows: dict[str, list[str]] = {}
    for line in _section(text, heading, 3).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and re.fullmatch(r"`[A-Z0-9_]+`", cells[0]):
            rows[cells[0].strip("`")] = cells
    return rows


def test_services_doc_lists_every_variable_with_its_setting_and_default() -> None:
    rows = _table_rows(SERVICES.read_text(encoding="utf-8"), "### Every variable")
    missing = sorted(env_names() - set(rows))
    assert not missing, f"variables the settings model reads without a row in docs/SERVICES.md: {missing}"
    stale = sorted(set(rows) - env_names())
    assert not stale, f"docs/SERVICES.md lists variables nothing reads: {stale}"
    for var, path, default, _help in describe():
        _variable, setting, _read_by, documented, meaning = rows[var]
        assert setting == f"`{path}`", (var, setting, path)
        assert meaning, f"{var} has no meaning in docs/SERVICES.md"
        if default not in (None, ""):
            assert f"`{default}`" in documented, f"{var}: the code's default is {default!r}, the doc says {documented}"


@pytest.mark.parametrize(
    "name",
    [
        "README.md",
        "docs/SERVICES.md",
        "docs/ARCHITECTURE.md",
        "docs/BENCHMARKS.md",
        "charts/README.md",
        "bench/README.md",
        "compose.cpu.yaml",
        "compose.gpu.yaml",
        "compose.gpu-standin.yaml",
    ],
)
def test_no_document_names_a_variable_nothing_reads(name: str) -> None:
    path = ROOT / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this tree")
    named = set(re.findall(r"EVOMEM_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    stale = sorted(named - env_names() - NOT_SETTINGS)
    assert not stale, f"{name} names variables no EvoMem process reads: {stale}"


def test_ci_runs_the_readme_test_command(readme: str) -> None:
    assert TEST_COMMAND in readme, f"README.md does not give {TEST_COMMAND!r} as the test command"
    assert CI_RUN.is_file(), f"{CI_RUN} is missing"
    if sys.platform != "win32":
        assert os.access(CI_RUN, os.X_OK), f"{CI_RUN} is not executable"
    commands = [
        line.strip()
        for line in CI_RUN.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert any(re.match(rf"^(exec\s+)?{re.escape(TEST_COMMAND)}(\s|$)", c) for c in commands), (
        f"{CI_RUN} does not run {TEST_COMMAND!r}; its commands: {commands}"
    )
    assert MAKEFILE.is_file(), "README's test command needs a Makefile"
    assert re.search(r"^test\s*:", MAKEFILE.read_text(encoding="utf-8"), flags=re.MULTILINE), (
        "the Makefile has no 'test' target"
    )
