"""The decision timeline's HTML: pure functions from nodes to a page, every value escaped.

Notes are user text, so nothing reaches the page unescaped: ``esc`` (``html.escape``, quotes
included) wraps every value, attribute or text, and the page's Content-Security-Policy
(``timeline.SECURITY_HEADERS``) runs only the one inline script that carries the response's
nonce, so a note that slips a tag through still runs nothing.

A chain is drawn like ``git log --graph``: the version in force on top, each earlier version
below it on one line of dots. The search page shows the heads recall answers with their
history, or without a query the chains changed last (a page, then "more"); the "current only"
view hides the superseded versions and says how many it hides. A chain's page also lists the
decisions built on it ("depended on by", "implemented by"), each a link.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from evomem.domain.model import MemoryNode, Status, iso

#: The longest note text a version shows before "more" (the whole text is one click away).
TEXT_SHOWN = 600
SHORT_ID = 10


def esc(value: object) -> str:
    """``value`` as HTML text or a quoted attribute value."""
    return html.escape("" if value is None else str(value), quote=True)


def url(path: str, **params: object) -> str:
    """``path`` with the non-empty ``params`` as a query string (escape it again in a page)."""
    kept = {k: str(v) for k, v in params.items() if v not in (None, "", False)}
    return f"{path}?{urlencode(kept)}" if kept else path


def review_flags(node: MemoryNode) -> list[str]:
    """The ``needs_review`` flags a version shows: one line each, naming the replaced dependency
    and what replaced it (drawn as a flag beside the version)."""
    flag = node.needs_review
    if flag is None:
        return []
    return [
        f"{old} (depended on through {via}) was replaced by {new}"
        for old, new, via in zip(flag.replaced, flag.replaced_by, flag.via, strict=False)
    ]


@dataclass(frozen=True, slots=True)
class Filters:
    """What the search form holds: the query, the namespace, scope and tag, and the view
    (``current``: the versions in force only; ``all``: every version of each chain)."""

    q: str = ""
    namespace: str = ""
    scope: str = ""
    tag: str = ""
    view: str = "current"
    before: str = ""  # the listing's cursor (no query): chains older than this head

    def params(self, **changed: str) -> dict[str, str]:
        values = {"q": self.q, "namespace": self.namespace, "scope": self.scope, "tag": self.tag, "view": self.view}
        if self.before and not self.q:
            values["before"] = self.before
        values.update(changed)
        if values.get("view") == "current":
            values.pop("view")
        return values


@dataclass(slots=True)
class ChainView:
    """One chain as the page draws it: ``versions`` newest first (the head first), how many older
    versions were not fetched, the version asked for (highlighted), and recall's extras."""

    versions: list[MemoryNode]
    older_not_shown: int = 0
    focus: str | None = None
    matched: set[str] = field(default_factory=set)
    maybe_replaced_by: list[MemoryNode] = field(default_factory=list)
    scope_match: str | None = None
    dependents: list[tuple[str, MemoryNode]] = field(default_factory=list)  # (depends_on | implements, node)


@dataclass(slots=True)
class Listing:
    """What the search page lists: chains (recall's, or without a query the chains changed last),
    recall's notes, and the cursor of the next page (``more``: the listing only)."""

    chains: list[ChainView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    more: str | None = None


STYLE = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--ok:#1a7f37;--old:#9a6700;--gone:#cf222e;--bg:#f6f8fa}
*{box-sizing:border-box}body{font:14px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
margin:0;background:#fff}header{background:var(--bg);border-bottom:1px solid var(--line);padding:10px 24px;
display:flex;gap:16px;align-items:center;flex-wrap:wrap}header h1{font-size:16px;margin:0}header a{color:inherit}
main{padding:16px 24px;max-width:1100px}form.search{display:flex;gap:8px;flex-wrap:wrap;align-items:center}
input,select,button{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:6px;background:#fff}
input[name=q]{min-width:280px}button{cursor:pointer;background:var(--bg)}.muted{color:var(--muted)}
.notice{margin:12px 0;padding:8px 12px;background:var(--bg);border:1px solid var(--line);border-radius:6px}
.error{border-color:var(--gone);color:var(--gone)}.chain{margin:18px 0;border:1px solid var(--line);border-radius:8px}
.chain>h2{font-size:14px;margin:0;padding:8px 12px;background:var(--bg);border-bottom:1px solid var(--line);
border-radius:8px 8px 0 0;font-weight:600}.graph{list-style:none;margin:0;padding:8px 12px}
.version{position:relative;padding:6px 0 10px 28px}.version:before{content:"";position:absolute;left:8px;top:0;
bottom:0;border-left:2px solid var(--line)}.version:first-child:before{top:14px}
.version:last-child:before{bottom:calc(100% - 14px)}
.dot{position:absolute;left:3px;top:8px;width:12px;height:12px;border-radius:50%;background:var(--ok);
border:2px solid #fff;box-shadow:0 0 0 1px var(--ok)}.superseded .dot{background:#fff;box-shadow:0 0 0 1px var(--old)}
.forgotten .dot{background:#fff;box-shadow:0 0 0 1px var(--gone)}.meta{display:flex;gap:10px;flex-wrap:wrap;
align-items:baseline}.badge{font-size:12px;padding:0 8px;border-radius:10px;border:1px solid}
.in-force .badge.status{color:var(--ok);border-color:var(--ok)}.superseded .badge.status{color:var(--old);
border-color:var(--old)}.forgotten .badge.status{color:var(--gone);border-color:var(--gone)}
.superseded .change{color:var(--muted);text-decoration:line-through;text-decoration-color:#d1d9e0}
.flag{color:var(--gone);font-weight:600}.change{margin:2px 0;white-space:pre-wrap;word-break:break-word}
.why{margin:2px 0;color:var(--muted)}.why b{color:var(--fg);font-weight:600}code{font-size:12px}
.focus{background:#fff8c5;border-radius:6px}.hidden-count{padding:0 12px 8px 40px}
body.current .superseded,body.current .forgotten{display:none}body.all .hidden-count{display:none}
details{margin:2px 0}.maybe{padding:0 12px}summary{cursor:pointer;color:var(--muted)}a{color:#0969da}
.incoming{margin:18px 0;border:1px solid var(--line);border-radius:8px}.incoming>h2{font-size:14px;margin:0;
padding:8px 12px;background:var(--bg);border-bottom:1px solid var(--line);border-radius:8px 8px 0 0}
.incoming ul{margin:0;padding:8px 12px 8px 28px}.pager{margin:12px 0;font-weight:600}
"""

SCRIPT = """
(function(){
  var body=document.body, box=document.getElementById('view-all');
  if(!box){return;}
  box.addEventListener('change',function(){
    var all=box.checked; body.className=all?'all':'current';
    var u=new URL(window.location.href);
    if(all){u.searchParams.set('view','all');}else{u.searchParams.delete('view');}
    window.history.replaceState(null,'',u.toString());
  });
  document.addEventListener('keydown',function(e){
    var q=document.querySelector('input[name=q]');
    if(e.key==='/'&&q&&document.activeElement!==q){e.preventDefault();q.focus();}
  });
})();
"""


def layout(title: str, content: str, *, nonce: str, view: str = "all", who: str | None = None) -> str:
    """The page around ``content``: the header (who is signed in, a sign-out button), the style,
    and the one inline script (``nonce``)."""
    user = ""
    if who is not None:
        user = (
            f'<span class="muted">signed in as {esc(who)}</span>'
            '<form method="post" action="/ui/logout"><button type="submit">Sign out</button></form>'
        )
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · EvoMem</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="same-origin"><style nonce="{esc(nonce)}">{STYLE}</style></head>'
        f'<body class="{"current" if view == "current" else "all"}">'
        '<header><h1><a href="/ui">EvoMem · decision timeline</a></h1>'
        f'<span class="muted">read-only</span>{user}</header><main>{content}</main>'
        f'<script nonce="{esc(nonce)}">{SCRIPT}</script></body></html>\n'
    )


def status_of(node: MemoryNode) -> tuple[str, str]:
    """(CSS class, label) of a version: in force, superseded (by which), or forgotten."""
    if node.status == Status.FORGOTTEN:
        return "forgotten", "forgotten"
    if node.status == Status.SUPERSEDED or node.superseded_by is not None:
        return "superseded", "superseded"
    return "in-force", "in force"


def _short(node_id: str) -> str:
    return node_id[-SHORT_ID:]


def chain_link(node_id: str, text: str | None = None) -> str:
    href = f"{url('/ui/chain/' + node_id)}#v-{node_id}"
    return f'<a href="{esc(href)}"><code>{esc(text or _short(node_id))}</code></a>'


def _text_block(node: MemoryNode) -> str:
    """The change (the cronista's ``change`` when it extracted one, else the note's text) and
    the note's whole text one click away when they differ or the text is long."""
    if node.purged:
        return '<p class="change muted">(purged: the text is gone for good)</p>'
    change = node.change.strip() or node.raw_text
    shown = change if len(change) <= TEXT_SHOWN else change[:TEXT_SHOWN].rstrip() + " …"
    out = f'<p class="change">{esc(shown)}</p>'
    if shown != node.raw_text:
        out += f'<details><summary>the whole note</summary><p class="change">{esc(node.raw_text)}</p></details>'
    return out


def _why_block(node: MemoryNode) -> str:
    parts = []
    if node.trigger.strip():
        parts.append(f'<p class="why"><b>why:</b> {esc(node.trigger)}</p>')
    if node.alternatives_tried.strip() and node.alternatives_tried.strip() not in (node.change or node.raw_text):
        parts.append(f'<p class="why"><b>tried:</b> {esc(node.alternatives_tried)}</p>')
    if node.consequences.strip():
        parts.append(f'<p class="why"><b>so:</b> {esc(node.consequences)}</p>')
    return "".join(parts)


def _link_block(node: MemoryNode) -> str:
    """How this version came to replace the previous one (who or what linked it, how sure)."""
    if node.supersedes is None or node.link is None:
        return ""
    link = node.link
    by = f" by {esc(link.by)}" if link.by else ""
    sure = f", confidence {link.confidence:.2f}" if link.method != "agent" else ""
    asked = ""
    if link.requested_id and link.requested_id != node.supersedes:
        asked = f" (asked to replace {chain_link(link.requested_id)}, re-targeted to the head)"
    return f'<p class="why muted">replaces {chain_link(node.supersedes)}: {esc(link.method)}{by}{sure}{asked}</p>'


def _relations_block(relations: Mapping[str, Sequence[str]]) -> str:
    if not relations:
        return ""
    rows = []
    for kind in sorted(relations):
        targets = " ".join(chain_link(t) for t in relations[kind])
        rows.append(f'<span class="relation">{esc(kind)}: {targets}</span>')
    return '<p class="why">' + " · ".join(rows) + "</p>"


def version_item(node: MemoryNode, *, focus: bool = False, matched: bool = False) -> str:
    """One version: its dot on the graph, status, version, scope, author, time, tags, the change
    and why, the link that made it replace the previous one, relations and review flags."""
    css, label = status_of(node)
    status = f'<span class="badge status">{esc(label)}</span>'
    if node.superseded_by is not None:
        status += f' <span class="muted">by {chain_link(node.superseded_by)}</span>'
    meta = [
        f"<b>v{node.version}</b>",
        status,
        f'<a href="{esc(url("/ui/chain/" + node.id))}#v-{esc(node.id)}"><code>{esc(node.id)}</code></a>',
        f"<span>scope <b>{esc(node.scope or 'default')}</b></span>",
        f"<span>by <b>{esc(node.author or 'unknown')}</b></span>",
        f'<time datetime="{esc(iso(node.created_at))}">{esc(_when(node.created_at))}</time>',
    ]
    if node.namespace:
        meta.append(f'<span class="muted">{esc(node.namespace)}</span>')
    if node.tags:
        meta.append(" ".join(f'<span class="badge">{esc(t)}</span>' for t in node.tags))
    if matched:
        meta.append('<span class="muted">matched</span>')
    flags = "".join(f'<p class="flag">needs review: {esc(f)}</p>' for f in review_flags(node))
    classes = f"version {css}" + (" focus" if focus else "")
    return (
        f'<li class="{classes}" id="v-{esc(node.id)}" data-version="{node.version}" data-status="{esc(label)}">'
        f'<span class="dot"></span><div class="meta">{" ".join(meta)}</div>{flags}'
        f"{_text_block(node)}{_why_block(node)}{_link_block(node)}{_relations_block(node.relations)}</li>"
    )


def _when(ms: int) -> str:
    shown = iso(ms) or ""
    return shown.replace("T", " ")[:16] + " UTC" if shown else ""


def _title(node: MemoryNode) -> str:
    """A version's subject in one line: its summary, or the change, or the first words of its text."""
    if node.purged:
        return "(purged)"
    lines = (node.summary or node.change or node.raw_text).strip().splitlines()
    title = lines[0] if lines else ""
    return title if len(title) <= 120 else title[:120].rstrip() + " …"


def chain_section(chain: ChainView) -> str:
    """One chain: a title (its subject: the head's summary or first words), the graph of its
    versions newest first, and the count of versions the current view hides."""
    if not chain.versions:
        return ""
    head = chain.versions[0]
    title = _title(head)
    older = head.version - 1  # what the current view hides: every version before the head
    count = f"{head.version} version{'s' if head.version != 1 else ''}"
    extra = ""
    if chain.scope_match == "default":
        extra = ' <span class="muted">(the default scope\'s decision: in force here too)</span>'
    items = "".join(
        version_item(v, focus=v.id == chain.focus, matched=v.id in chain.matched and len(chain.versions) > 1)
        for v in chain.versions
    )
    hidden = ""
    if older:
        hidden = f'<p class="hidden-count muted">{older} earlier version{"s" if older != 1 else ""} hidden</p>'
    if chain.older_not_shown:
        items += (
            f'<li class="version superseded"><span class="dot"></span><p class="muted">'
            f"{chain.older_not_shown} older version(s) not shown</p></li>"
        )
    maybe = ""
    if chain.maybe_replaced_by:
        links = " ".join(chain_link(n.id) for n in chain.maybe_replaced_by)
        maybe = f'<p class="why maybe">may be replaced by (unconfirmed): {links}</p>'
    return (
        f'<section class="chain" data-chain="{esc(head.chain_root)}"><h2>{esc(title)} '
        f'<span class="muted">· {esc(count)} · chain {chain_link(head.chain_root)}</span>{extra}</h2>'
        f'<ol class="graph">{items}</ol>{hidden}{maybe}</section>'
    )


def _options(values: Iterable[str], chosen: str, empty: str) -> str:
    out = [f'<option value=""{" selected" if not chosen else ""}>{esc(empty)}</option>']
    for v in values:
        sel = " selected" if v == chosen else ""
        out.append(f'<option value="{esc(v)}"{sel}>{esc(v)}</option>')
    return "".join(out)


def search_form(filters: Filters, namespaces: Sequence[str]) -> str:
    checked = " checked" if filters.view == "all" else ""
    return (
        '<form class="search" method="get" action="/ui" role="search">'
        f'<input name="q" type="search" placeholder="search decisions (press /)" value="{esc(filters.q)}" autofocus>'
        '<select name="namespace" aria-label="namespace">'
        f"{_options(namespaces, filters.namespace, 'default namespace')}</select>"
        f'<input name="scope" placeholder="scope" value="{esc(filters.scope)}" size="10">'
        f'<input name="tag" placeholder="tag" value="{esc(filters.tag)}" size="10">'
        f'<label><input type="checkbox" id="view-all" name="view" value="all"{checked}> every version</label>'
        '<button type="submit">Search</button></form>'
    )


def _summary(filters: Filters, chains: Sequence[ChainView], recent: bool) -> str:
    """The line above the chains: how many, and how many superseded versions the current view hides."""
    hidden = sum(c.versions[0].version - 1 for c in chains if c.versions)
    total = f"{len(chains)} chain{'s' if len(chains) != 1 else ''}"
    if recent:
        total += " changed last, newest first" + (" (older page)" if filters.before else "")
    if filters.view == "current":
        other = url("/ui", **filters.params(view="all"))
        summary = (
            f"{total}; {hidden} superseded version{'s' if hidden != 1 else ''} "
            f'hidden (<a href="{esc(other)}">show every version</a>)'
        )
    else:
        other = url("/ui", **filters.params(view="current"))
        summary = f'{total}, every version (<a href="{esc(other)}">current only</a>)'
    return f'<p class="notice" data-hidden="{hidden}"><span id="summary">{summary}</span></p>'


def search_page(
    filters: Filters,
    namespaces: Sequence[str],
    chains: Sequence[ChainView],
    *,
    nonce: str,
    notes: Sequence[str] = (),
    error: str | None = None,
    who: str | None = None,
    counts: Mapping[str, int] | None = None,
    more: str | None = None,
) -> str:
    """The search page: the form, then each chain recall answered with; without a query, the
    chains changed last (newest first, ``more``: the cursor of the next page) and the namespaces."""
    parts = [search_form(filters, namespaces)]
    recent = not filters.q
    if error is not None:
        parts.append(f'<p class="notice error" role="alert">{esc(error)}</p>')
    for n in notes:
        parts.append(f'<p class="notice">{esc(n)}</p>')
    if error is None:
        parts.append(_summary(filters, chains, recent))
        if not chains:
            narrowed = filters.q or filters.scope or filters.tag or filters.before
            empty = "No decision matches." if narrowed else "Nothing is remembered in this namespace yet."
            parts.append(f'<p class="notice">{esc(empty)}</p>')
        parts.extend(chain_section(c) for c in chains)
        pager = []
        if recent and filters.before:
            pager.append(f'<a href="{esc(url("/ui", **filters.params(before="")))}">← newest</a>')
        if recent and more:
            pager.append(f'<a id="more" href="{esc(url("/ui", **filters.params(before=more)))}">more →</a>')
        if pager:
            parts.append(f'<p class="pager">{" · ".join(pager)}</p>')
    if recent and counts:
        rows = "".join(
            f'<li><a href="{esc(url("/ui", namespace=ns))}">{esc(ns)}</a> '
            f'<span class="muted">{n} note{"s" if n != 1 else ""}</span></li>'
            for ns, n in sorted(counts.items())
        )
        parts.append(f"<h2>Namespaces</h2><ul>{rows}</ul>")
    return layout(filters.q or "recent decisions", "".join(parts), nonce=nonce, view=filters.view, who=who)


KIND_LABELS = {"depends_on": "depended on by", "implements": "implemented by"}


def dependents_section(chain: ChainView) -> str:
    """The decisions built on this chain (any of its versions): who depends on or implements it,
    each a link to its own chain, with its ``needs_review`` flag when it has one."""
    if not chain.dependents:
        items = '<li class="muted">no decision in force depends on or implements this one</li>'
    else:
        items = "".join(
            f'<li class="dependent" data-kind="{esc(kind)}" data-id="{esc(node.id)}">'
            f'<span class="muted">{esc(KIND_LABELS.get(kind, kind))}</span> {chain_link(node.id)} {esc(_title(node))}'
            + (' <span class="flag">needs review</span>' if node.needs_review is not None else "")
            + "</li>"
            for kind, node in chain.dependents
        )
    return f'<section class="incoming" id="dependents"><h2>Built on this decision</h2><ul>{items}</ul></section>'


def chain_page(chain: ChainView, *, nonce: str, who: str | None = None) -> str:
    head = chain.versions[0]
    back = '<p><a href="/ui">← search</a></p>'
    content = back + chain_section(chain) + dependents_section(chain)
    return layout(f"chain {_short(head.chain_root)}", content, nonce=nonce, who=who)


def error_page(message: str, *, nonce: str, who: str | None = None) -> str:
    content = f'<p><a href="/ui">← search</a></p><p class="notice error" role="alert">{esc(message)}</p>'
    return layout("error", content, nonce=nonce, who=who)


def login_page(*, nonce: str, problem: str | None = None) -> str:
    """The sign-in form: the token goes in the POST body, never in a URL; the server answers
    with an HttpOnly, SameSite=Strict cookie."""
    alert = f'<p class="notice error" role="alert">{esc(problem)}</p>' if problem else ""
    content = (
        "<h2>Sign in</h2>"
        '<p class="muted">This memory needs a token, the same as its MCP tools. '
        "Paste yours; it is kept in a cookie this page alone reads (HttpOnly, SameSite=Strict).</p>"
        f"{alert}"
        '<form method="post" action="/ui/login" class="search">'
        '<input type="password" name="token" autocomplete="current-password" placeholder="token" required>'
        '<button type="submit">Sign in</button></form>'
    )
    return layout("sign in", content, nonce=nonce)
