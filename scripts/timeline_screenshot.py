"""Save a screenshot of the decision timeline (/ui) for the README: docs/timeline.png.

    python scripts/timeline_screenshot.py [OUT.png] [--chain CHAIN.png]

Starts ``evomem-mcp --transport http`` on a fresh database in a temporary folder, writes a
short story through the MCP tools (the ledger moving from Postgres to SQLite, a report built on
the Postgres decision, now flagged for review, and backups that implement the SQLite move), and
opens ``/ui`` without a query (the chains changed last) with every version shown, in a headless
Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by selenium: ``make test-deps``
and the test extra install both). ``--chain OUT.png`` also saves the SQLite decision's own page,
with the decisions built on it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))


async def story(url: str) -> str:
    """The story; the id of the decision in force for the ledger (the SQLite move)."""

    async def remember(client: Client, **args: object) -> str:
        out = await client.call_tool("remember", args)
        if out.is_error:
            raise SystemExit(f"remember failed: {out.content}")
        return str(out.structured_content["id"])

    async with Client(url) as c:
        pg = await remember(c, raw_text="We use Postgres for the ledger", tags=["ledger", "db"], author="alice")
        await remember(
            c,
            raw_text="Monthly ledger reports read from a Postgres read replica",
            tags=["ledger", "reports"],
            author="dave",
            relations={"depends_on": [pg]},
        )
        sqlite = await remember(
            c,
            raw_text="We moved the ledger to SQLite because Postgres was overkill for one writer",
            supersedes=pg,
            tags=["ledger", "db"],
            author="bob",
        )
        backup = await remember(
            c, raw_text="Ledger backups run nightly to S3", tags=["ledger", "ops"], author="alice", scope="production"
        )
        await remember(
            c,
            raw_text="Ledger backups now stream with Litestream instead of the nightly S3 copy, "
            "since a day of lost writes was too much",
            supersedes=backup,
            tags=["ledger", "ops"],
            author="carol",
            scope="production",
            relations={"implements": [sqlite]},
        )
        return sqlite


def shoot(chrome: Any, url: str, out: Path, width: int = 1100) -> None:
    """``url`` as shown in a viewport ``width`` wide and as tall as the page (no scroll bar, no blank)."""
    chrome.get(url)
    time.sleep(0.3)
    metrics = {"width": width, "height": 400, "deviceScaleFactor": 1, "mobile": False}
    chrome.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    height = int(chrome.execute_script("return document.documentElement.scrollHeight"))
    chrome.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": height + 16})
    time.sleep(0.3)
    chrome.save_screenshot(str(out))


def main() -> int:
    args = sys.argv[1:]
    chain_out = None
    if "--chain" in args:
        at = args.index("--chain")
        chain_out = Path(args[at + 1])
        del args[at : at + 2]
    out = Path(args[0] if args else ROOT / "docs" / "timeline.png")
    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver_path is None:
        print("install chromium and chromium-driver (apt-get install -y chromium chromium-driver)", file=sys.stderr)
        return 1
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "stderr.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [EVOMEM_MCP, "--db", f"{tmp}/demo.db", "--transport", "http", "--port", "0"], stderr=err
            )
        try:
            url = None
            for _ in range(300):
                found = re.search(r"http://127\.0\.0\.1:\d+/mcp", log.read_text(errors="replace"))
                if found:
                    url = found.group(0)
                    break
                time.sleep(0.1)
            if url is None:
                print(log.read_text(errors="replace"), file=sys.stderr)
                return 1
            sqlite = asyncio.run(story(url))
            options = webdriver.ChromeOptions()
            options.binary_location = browser
            for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,1080"):
                options.add_argument(arg)
            chrome = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
            try:
                base = url.removesuffix("/mcp")
                shoot(chrome, base + "/ui?view=all", out)
                if chain_out is not None:
                    shoot(chrome, f"{base}/ui/chain/{sqlite}", chain_out)
            finally:
                chrome.quit()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
