"""The decision timeline page (/ui) in a real headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium), on the embedded HTTP server and on the team gateway.

Without chromium the browser tests skip and say why; ``EVOMEM_REQUIRE_BROWSER=1`` (CI) makes
that a failure. ``EVOMEM_UI_SCREENSHOT=docs/timeline.png`` saves the embedded page as shown
(the README's screenshot).
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_mcp_transports import POSTGRES, SQLITE, HttpServer, http_server  # noqa: F401 - the fixture
from test_team_gateway import TeamGateway

from evomem.domain.model import MemoryNode, ReviewFlag, Status
from evomem.entrypoints.web import pages

pytestmark = pytest.mark.anyio

HOSTILE = '<script>window.__pwned = 1</script> the ledger logs <img src=x onerror="window.__pwned = 2"> to Loki'
WAIT_S = 20
UNKNOWN_ID = "01J9ZK3V8W5Q6R7S8T9V0W1X2Y"
BACKUPS = "Nightly backups copy the ledger's SQLite file to the NAS"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _chromium() -> tuple[str, str]:
    """The paths of chromium and chromedriver, or skip (fail under EVOMEM_REQUIRE_BROWSER=1)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        browser = None
    if browser is None or driver is None:
        message = "chromium, chromium-driver or selenium is missing (apt-get install -y chromium chromium-driver)"
        if os.environ.get("EVOMEM_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return browser, driver


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium (selenium's WebDriver), a fresh profile per test."""
    binary, driver_path = _chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def _search(driver: Any, query: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element(By.NAME, "q")
    box.clear()
    box.send_keys(query, Keys.ENTER)
    _wait(driver, "#summary")


def _versions(driver: Any, chain_root: str) -> list[tuple[str, str, str, bool]]:
    """(id, version, status, shown) of each version of the chain on the page, top to bottom."""
    from selenium.webdriver.common.by import By

    section = driver.find_element(By.CSS_SELECTOR, f'section[data-chain="{chain_root}"]')
    return [
        (
            li.get_attribute("id").removeprefix("v-"),
            li.get_attribute("data-version"),
            li.get_attribute("data-status"),
            li.is_displayed(),
        )
        for li in section.find_elements(By.CSS_SELECTOR, "li.version[id]")
    ]


async def _story(client: Client, **extra: Any) -> tuple[str, str]:
    """The ledger story (Postgres, then SQLite replacing it) and a hostile note; the two ids."""
    first = await client.call_tool("remember", {"raw_text": POSTGRES, "tags": ["ledger"], **extra})
    assert not first.is_error, first.content
    a = first.structured_content["id"]
    second = await client.call_tool("remember", {"raw_text": SQLITE, "supersedes": a, "tags": ["ledger"], **extra})
    assert not second.is_error, second.content
    hostile = await client.call_tool("remember", {"raw_text": HOSTILE, "relations": {"related": [a]}, **extra})
    assert not hostile.is_error, hostile.content
    return a, second.structured_content["id"]


def _base(mcp_url: str) -> str:
    return mcp_url.removesuffix("/mcp")


# ---------------------------------------------------------------------------- no browser needed


def test_every_value_is_escaped_and_flags_have_one_place() -> None:
    node = MemoryNode(
        id="01J9ZK3V8W5Q6R7S8T9V0W1X2Y",
        raw_text='<script>alert(1)</script> "quoted" & more',
        scope="<b>staging</b>",
        author="<i>eve</i>",
        tags=("a",),
        relations={"related": ("01J9ZK3V8W5Q6R7S8T9V0W1X2Z",)},
        status=Status.ACTIVE,
        chain_root="01J9ZK3V8W5Q6R7S8T9V0W1X2Y",
        trigger="because <svg onload=x>",
    )
    item = pages.version_item(node)
    assert "<script>" not in item and "<svg" not in item and "<b>staging" not in item and "<i>eve" not in item
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &amp; more" in item
    assert "/ui/chain/01J9ZK3V8W5Q6R7S8T9V0W1X2Z" in item  # the relation is a link to follow
    assert pages.review_flags(node) == []
    flagged = replace(
        node,
        needs_review=ReviewFlag(replaced=("OLD<i>",), replaced_by=("NEW",), via=("DEP",), flagged_at=1),
    )
    (flag,) = pages.review_flags(flagged)
    assert "OLD<i>" in flag and "NEW" in flag and "DEP" in flag
    item = pages.version_item(flagged)
    assert 'class="flag"' in item and "OLD&lt;i&gt;" in item and "OLD<i>" not in item


async def test_embedded_ui_answers_with_the_page_and_its_guards(http_server: HttpServer) -> None:  # noqa: F811
    async with Client(http_server.url) as client:
        old, new = await _story(client)
    base = _base(http_server.url)
    page = httpx2.get(f"{base}/ui", params={"q": "ledger"}, timeout=30)
    assert page.status_code == 200, page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'nonce-" in csp and "unsafe-inline" not in csp
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
    assert "1 superseded version hidden" in page.text
    assert page.text.index(f'id="v-{new}"') < page.text.index(f'id="v-{old}"')
    assert "<script>window.__pwned" not in page.text and "&lt;script&gt;window.__pwned" in page.text
    # The Host check of /mcp (DNS rebinding) holds for /ui too.
    assert httpx2.get(f"{base}/ui", headers={"Host": "evil.example"}, timeout=30).status_code == 421
    # A bad or unknown id is a clear error, not a trace.
    bad = httpx2.get(f"{base}/ui/chain/not-an-id", timeout=30)
    assert bad.status_code == 400 and "invalid" in bad.text.lower() and "Traceback" not in bad.text
    missing = httpx2.get(f"{base}/ui/chain/{UNKNOWN_ID}", timeout=30)
    assert missing.status_code == 404 and "not_found" in missing.text
    # No query: the chains changed last, newest first, with the count of what the view hides.
    listing = httpx2.get(f"{base}/ui", timeout=30)
    assert listing.status_code == 200 and "changed last, newest first" in listing.text
    assert "1 superseded version hidden" in listing.text and f'data-chain="{old}"' in listing.text
    assert listing.text.index(f'id="v-{new}"') < listing.text.index(f'id="v-{old}"')
    nothing = httpx2.get(f"{base}/ui", params={"tag": "nothing-here"}, timeout=30)
    assert nothing.status_code == 200 and "No decision matches" in nothing.text and "data-chain" not in nothing.text
    cursor = httpx2.get(f"{base}/ui", params={"before": "not-an-id"}, timeout=30)
    assert cursor.status_code == 400 and "before" in cursor.text and "Traceback" not in cursor.text


async def test_the_listing_pages_twenty_chains_at_a_time(http_server: HttpServer) -> None:  # noqa: F811

    async with Client(http_server.url) as client:
        for i in range(21):
            out = await client.call_tool("remember", {"raw_text": f"Service {i} logs to Loki at level info"})
            assert not out.is_error, out.content
    base = _base(http_server.url)
    first = httpx2.get(f"{base}/ui", timeout=30)
    assert first.status_code == 200 and first.text.count('<section class="chain"') == 20
    assert "Service 20 logs" in first.text and "Service 0 logs" not in first.text  # newest first
    more = re.search(r'<a id="more" href="([^"]+)"', first.text)
    assert more is not None and "before=" in more.group(1)
    second = httpx2.get(base + html.unescape(more.group(1)), timeout=30)
    assert second.status_code == 200 and second.text.count('<section class="chain"') == 1
    assert "Service 0 logs" in second.text and 'id="more"' not in second.text and "← newest" in second.text


# ---------------------------------------------------------------------------- in Chromium


async def test_embedded_timeline_in_chromium(browser: Any, http_server: HttpServer) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    async with Client(http_server.url) as client:
        old, new = await _story(client, author="alice")
    base = _base(http_server.url)
    browser.get(f"{base}/ui")
    assert "decision timeline" in browser.title.lower() or browser.find_element(By.CSS_SELECTOR, "header h1")
    _search(browser, "ledger")
    # The current-only view: the head in force, the replaced version hidden and counted.
    summary = browser.find_element(By.ID, "summary").text
    assert "1 superseded version hidden" in summary, summary
    assert _versions(browser, old) == [(new, "2", "in force", True), (old, "1", "superseded", False)]
    # Every version, by the page's script (no reload): the chain in order, the replaced one marked.
    browser.find_element(By.ID, "view-all").click()
    assert _versions(browser, old) == [(new, "2", "in force", True), (old, "1", "superseded", True)]
    assert "view=all" in browser.current_url
    text = browser.find_element(By.CSS_SELECTOR, f'section[data-chain="{old}"]').text
    assert text.index("We moved the ledger from Postgres to SQLite") < text.index("We picked Postgres for the ledger")
    assert "Postgres was overkill" in text  # why it changed (the cronista's trigger)
    # The hostile note is shown as text and ran nothing.
    assert browser.execute_script("return window.__pwned === undefined")
    assert "<script>window.__pwned = 1</script>" in browser.find_element(By.TAG_NAME, "main").text
    # Filters: a tag keeps the ledger's chain, another tag finds nothing.
    browser.get(f"{base}/ui?q=ledger&tag=ledger&view=all")
    _wait(browser, "#summary")
    assert [v[0] for v in _versions(browser, old)] == [new, old]
    browser.get(f"{base}/ui?q=ledger&tag=nothing-here")
    assert "No decision matches" in _wait(browser, "main").text
    shot = os.environ.get("EVOMEM_UI_SCREENSHOT")
    if shot:
        browser.get(f"{base}/ui?q=ledger&view=all")
        _wait(browser, "#summary")
        browser.save_screenshot(str(Path(shot)))
    # One chain's page, opened from a result, the version asked for highlighted.
    browser.get(f"{base}/ui?q=ledger")
    _wait(browser, "#summary")
    browser.find_element(By.CSS_SELECTOR, f'section[data-chain="{old}"] h2 a').click()
    _wait(browser, "li.focus")
    assert "/ui/chain/" in browser.current_url
    assert [(v[0], v[2]) for v in _versions(browser, old)] == [(new, "in force"), (old, "superseded")]
    assert browser.find_element(By.CSS_SELECTOR, "li.focus").get_attribute("id") == f"v-{old}"
    # Relations are links to follow: the hostile note names the Postgres decision as related.
    browser.get(f"{base}/ui?q=loki")
    _wait(browser, "#summary")
    browser.find_element(By.CSS_SELECTOR, ".relation a").click()
    _wait(browser, "li.focus")
    assert browser.find_element(By.CSS_SELECTOR, "li.focus").get_attribute("id") == f"v-{old}"
    assert [v[0] for v in _versions(browser, old)] == [new, old]


async def test_embedded_listing_and_dependencies_in_chromium(browser: Any, http_server: HttpServer) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    async with Client(http_server.url) as client:
        old, new = await _story(client, author="alice")
        built = await client.call_tool("remember", {"raw_text": BACKUPS, "relations": {"depends_on": [new]}})
        assert not built.is_error, built.content
    backups = built.structured_content["id"]
    base = _base(http_server.url)
    # No query: the chains changed last, newest first; the ledger's chain in order, the replaced
    # version hidden and counted until every version is asked for.
    browser.get(f"{base}/ui")
    summary = _wait(browser, "#summary").text
    assert "3 chains changed last, newest first; 1 superseded version hidden" in summary, summary
    sections = browser.find_elements(By.CSS_SELECTOR, "section.chain")
    assert sections[0].get_attribute("data-chain") == backups  # written last
    assert _versions(browser, old) == [(new, "2", "in force", True), (old, "1", "superseded", False)]
    browser.find_element(By.ID, "view-all").click()
    assert _versions(browser, old) == [(new, "2", "in force", True), (old, "1", "superseded", True)]
    # Filters hold without a query too.
    browser.get(f"{base}/ui?tag=ledger")
    _wait(browser, "#summary")
    assert [s.get_attribute("data-chain") for s in browser.find_elements(By.CSS_SELECTOR, "section.chain")] == [old]
    # The dependent's page links to its dependency (outgoing), and the dependency's page lists
    # the dependent (incoming), whichever version's page it is.
    browser.get(f"{base}/ui/chain/{backups}")
    _wait(browser, "li.focus")
    link = browser.find_element(By.CSS_SELECTOR, f"li.focus .relation a[href*='{new}']")
    assert "depends_on" in browser.find_element(By.CSS_SELECTOR, "li.focus .relation").text
    link.click()
    _wait(browser, f"li.focus#v-{new}")
    incoming = browser.find_element(By.CSS_SELECTOR, f'#dependents li.dependent[data-id="{backups}"]')
    assert "depended on by" in incoming.text and "Nightly backups" in incoming.text
    assert incoming.get_attribute("data-kind") == "depends_on"
    browser.get(f"{base}/ui/chain/{old}")
    _wait(browser, "li.focus")
    browser.find_element(By.CSS_SELECTOR, f'#dependents li.dependent[data-id="{backups}"] a').click()
    _wait(browser, f"li.focus#v-{backups}")
    assert "no decision in force depends on" in browser.find_element(By.ID, "dependents").text


async def _team_story(team_gateway: TeamGateway) -> tuple[str, str]:
    headers = {"Authorization": f"Bearer {team_gateway.token('alice')}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(team_gateway.url, http_client=http)) as alice,
    ):
        return await _story(alice, namespace="team-a")


async def test_gateway_ui_refuses_a_call_without_the_tools_token(team_gateway: TeamGateway) -> None:
    old, _ = await _team_story(team_gateway)
    base = _base(team_gateway.url)
    headers = {"Authorization": f"Bearer {team_gateway.token('alice')}"}
    # No token: refused, with the sign-in form and nothing of the memory.
    for path in ("/ui", "/ui?q=ledger&namespace=team-a", f"/ui/chain/{old}"):
        refused = httpx2.get(base + path, timeout=30)
        assert refused.status_code == 401, (path, refused.status_code)
        assert "Postgres" not in refused.text and 'action="/ui/login"' in refused.text
    # A token in the URL is never read.
    in_url = httpx2.get(f"{base}/ui", params={"q": "ledger", "token": team_gateway.token("alice")}, timeout=30)
    assert in_url.status_code == 401
    # The header, as for the tools; the caller's namespaces hold.
    shown = httpx2.get(f"{base}/ui", params={"q": "ledger", "namespace": "team-a"}, headers=headers, timeout=30)
    assert shown.status_code == 200 and SQLITE in shown.text
    bob = {"Authorization": f"Bearer {team_gateway.token('bob')}"}
    other = httpx2.get(f"{base}/ui", params={"q": "ledger", "namespace": "team-a"}, headers=bob, timeout=30)
    assert other.status_code == 403 and "Postgres" not in other.text
    assert httpx2.get(f"{base}/ui/chain/{old}", headers=bob, timeout=30).status_code in (403, 404)
    # The listing without a query, through the gateway's storage service, under the same rules.
    listed = httpx2.get(f"{base}/ui", params={"namespace": "team-a"}, headers=headers, timeout=30)
    assert listed.status_code == 200 and f'data-chain="{old}"' in listed.text
    assert "1 superseded version hidden" in listed.text
    assert httpx2.get(f"{base}/ui", params={"namespace": "team-a"}, headers=bob, timeout=30).status_code == 403
    page = httpx2.get(f"{base}/ui/chain/{old}", headers=headers, timeout=30)
    assert page.status_code == 200 and 'id="dependents"' in page.text
    # A sign-in with a token the gate does not know sets no cookie.
    wrong = httpx2.post(f"{base}/ui/login", data={"token": "tok-nobody-" + "n" * 30}, timeout=30)
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers


async def test_gateway_timeline_signs_in_with_the_tools_token(browser: Any, team_gateway: TeamGateway) -> None:
    from selenium.webdriver.common.by import By

    old, new = await _team_story(team_gateway)
    base = _base(team_gateway.url)
    # The login form sets an HttpOnly, SameSite=Strict cookie; a wrong token is refused.
    browser.get(f"{base}/ui")
    _wait(browser, "input[name=token]").send_keys("tok-nobody-" + "n" * 30)
    browser.find_element(By.CSS_SELECTOR, "form[action='/ui/login'] button").click()
    assert "not accepted" in _wait(browser, "[role=alert]").text
    _wait(browser, "input[name=token]").send_keys(team_gateway.token("rita"))  # a reader of team-a
    browser.find_element(By.CSS_SELECTOR, "form[action='/ui/login'] button").click()
    _wait(browser, "input[name=q]")
    cookie = browser.get_cookie("evomem_ui")
    assert cookie is not None and cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert team_gateway.token("rita") not in browser.current_url
    _search(browser, "ledger")
    assert [(v[0], v[2]) for v in _versions(browser, old)] == [(new, "in force"), (old, "superseded")]
    assert "signed in as rita" in browser.find_element(By.TAG_NAME, "header").text
    # Signing out clears the cookie: the page asks for the token again.
    browser.find_element(By.CSS_SELECTOR, "form[action='/ui/logout'] button").click()
    _wait(browser, "input[name=token]")
    assert browser.get_cookie("evomem_ui") is None


async def test_the_sign_in_cookie_counts_against_the_tokens_rate() -> None:
    from evomem.security.ratelimit import UI_COOKIE, RateLimitMiddleware, build_limiter
    from evomem.security.tokens import TokenRegistry, TokenVerifier, digest, parse_entries

    token = "tok-rita-" + "r" * 30
    entry = {"name": "rita", "sha256": digest(token), "role": "reader", "namespaces": ["team-a"], "rate": 1}
    verifier = TokenVerifier(TokenRegistry(entries=parse_entries({"tokens": [entry]})))
    passed: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        passed.append(scope["path"])

    statuses: list[int] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    limited = RateLimitMiddleware(app, verifier, build_limiter(None))
    cookie = f"theme=dark; {UI_COOKIE}={token}".encode()
    for _ in range(5):
        await limited({"type": "http", "path": "/ui", "headers": [(b"cookie", cookie)]}, None, send)
    assert 429 in statuses and len(passed) < 5
    strangers = [(b"cookie", f"{UI_COOKIE}=tok-nobody".encode())]
    await limited({"type": "http", "path": "/ui", "headers": strangers}, None, send)
    assert passed[-1] == "/ui"  # an unknown token passes on, to be refused by the page itself
