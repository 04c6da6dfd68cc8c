"""Linking long documents faster decides exactly what it decided before.

``lab/tests/data/long_linking_decisions.json`` holds every decision (outcome, target, confidence,
evidence, listed candidates and the candidates the search gave the linker) made on
``lab.linker_long.sample()``: 20 dev-long notes, 3 concatenations of dev-long records and 15
generated 2-8k character records, each set remembered in order into one store, with vectors off
and on. The same run must answer the same. It was recorded with f20a8e6 (before the long-note
speed-ups, which changed nothing in it), and recorded again when the candidate search of a long
note changed on purpose to its title and decision part (``decision_text.search_text``): the
searched candidates and the probabilities moved, no outcome or target did. Recorded again on
2026-12-03 for two changes on purpose: the whole-note subject gate (with vectors on, 8 notes
went from none to abstain and 19 listings changed) and the pair model retrained with dev-e (the
probabilities and the link threshold in the evidence moved); no link target moved. Recorded
again in the second session of 2026-12-03, when ``abstain_at`` was calibrated under the rule the
linker runs (0.182 to 0.130): with vectors off one generated note went from none to abstain;
nothing else moved. Recorded again in the third session of 2026-12-03, when a scope inferred from
a text stopped ruling candidates out (``scope.may_list``: listed, never linked): 14 notes' searched
candidates and 12-13 listings changed, 6 notes (vectors off) and 1 (vectors on) went from none to
abstain; no link was made or lost and no link target moved. Recorded again in the fourth session
of 2026-12-03 for two changes on purpose: the linker's vector neighbours skip superseded versions
(``ACTIVE_NEIGHBOURS_OVERSAMPLE``: with vectors on, one note searched one candidate more and one
in another order) and ``link_at_long`` must be shown by enough links (1.0 now: the evidence of
the explicit-reference links names the new threshold); no decision, listing or target moved.
Recorded again in the same session when an abstention's last listed place went to the closest
plausible candidate (``pair_features.listed``): with vectors on, one generated note lists a candidate the
note leaves, at cosine 0.76, instead of one at 0.44. Recorded again on 2026-12-04 when only a
record's declaration ("ADR-12 supersedes ADR-7.", ``pair_reading.declares``) became a link on its own: the
one explicit-reference link here is such a declaration; its reason, why and evidence now say so,
and no decision, listing or target moved. Recorded again on 2026-12-06 when the pair model became
monotone histogram boosting with the frame features (``pair_reading.frame``) and dev-f in its training
data: no link was made or lost and no target moved; with vectors off and on one note each went
from abstain to none, and 4 (off) and 16 (on) listings changed order or members. Recorded again
later on 2026-12-06 when the pair model was trained on the candidates the service's own search
gives (``train_linker.replay``) and no threshold showed precision 0.98 on the hand-written
development files (``link_at`` 1.0): no link was made or lost (the sample's links are
declarations); with vectors off only probabilities and thresholds in the evidence moved, with
vectors on one note went from abstain to none and 9 listings changed. Recorded again the same
day when dev-h and dev-i joined the training data: no decision or link moved; 2 (off) and 9 (on)
listings changed. Recorded again in the fifth session of 2026-12-06 when the offers became
calibrated and selective (issue 30: the decides gate, the scope gate, ``offer_at`` 0.40 on the
calibrated probability, the model retrained with dev-j, dev-k, dev-l and replays without embeddings):
the one link (a declaration) stays; with vectors off 12 abstentions became none and 4 nones became
abstentions, with vectors on 18 abstentions became none; the other listings' probabilities moved.
Recorded again in the sixth session of 2026-12-06 when an offer's reason says that its note keeps part
of the decision ("only", "still", "except": "may be a partial change"): 11 reasons gained it; no
decision, listing, probability or target moved. Recorded again in the seventh session of 2026-12-06
when the pair model was retrained with a calibration of its own for long documents (``calibration_long``;
``offer_at`` 0.37, ``link_at`` 0.95): no link was made or lost and no target moved; with vectors off one
listing gained a second candidate and the rest is probabilities and the threshold in the evidence; with
vectors on 2 abstentions became none and 1 none an abstention. Recorded again on 2026-12-07 (speed9) when
a note the ``decides`` gate rejects stopped being searched for (``Linker.wants_candidates``): the 3
such dev-long notes (off and on) have ``searched`` [] instead of their candidates; their decision
(none, "the note decides nothing") and everything else is the same.
The other tests check each speed-up against what it replaced.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from evomem.adapters.models.pair_weights import shipped_pair_model
from evomem.adapters.sqlite import search as sqlite_search
from evomem.adapters.sqlite.search import fts_query
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.linkers import decision_text as dt
from evomem.domain.linkers import pair_model, pair_reading
from evomem.domain.linkers.pair import PairLinker
from evomem.domain.linkers.pair_features import FEATURES
from evomem.domain.model import NewNote
from lab import linker_long
from tests.test_pair_linker import node

GOLDEN = Path(__file__).with_name("data") / "long_linking_decisions.json"


def _model_available() -> bool:
    from evomem.adapters.models.embedding import OnnxEmbedder

    return bool(OnnxEmbedder(threads=1).available)


@pytest.mark.parametrize("vectors", ["off", "auto"])
def test_long_notes_get_the_decisions_they_got_before(vectors: str) -> None:
    if vectors == "auto" and not _model_available():
        pytest.skip("no embedding model installed")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))[vectors]
    got = [
        {"workload": name, "decisions": linker_long.run(name, notes, "pair", vectors=vectors)["decisions"]}
        for name, notes in linker_long.sample()
    ]
    assert linker_long.compare(want, got) == []
    assert [len(w["decisions"]) for w in got] == [len(w["decisions"]) for w in want]


def test_compiled_trees_add_up_to_the_walked_trees_to_the_bit() -> None:
    model = shipped_pair_model()
    assert model.kind == "gbt"
    rng = random.Random(3)
    rows = [[rng.choice((0.0, 1.0, rng.random(), rng.uniform(-2.0, 6.0))) for _ in FEATURES] for _ in range(3000)]
    linker = PairLinker(None, model=model)
    notes = [n["text"] for n in linker_long.long_records(12)] + [n["text"] for n in linker_long.dev_long_notes()[:12]]
    for k, text in enumerate(notes):
        rows += linker.features(text, None, [node(t) for j, t in enumerate(notes) if j != k])
    model.prob(rows[0])
    walk = model._walk[0]
    assert all(walk(x) == pair_model._tree_sum(model.trees, x) for x in rows)
    assert shipped_pair_model() is model  # one model (and one compilation) per file


def _refers_before(note: pair_reading.Reading, ident: str | None) -> bool:
    """``refers`` as it was: every sentence of the note, the pattern compiled each call."""
    if ident is None or ident == note.ident:
        return False
    prefix, num = ident.split()
    pat = re.compile(rf"{pair_reading._REF_VERB}(?::{re.escape(prefix)}:`|{re.escape(prefix)}\W{{0,3}})0*{num}\b", re.I)
    for sent in dt.sentences(note.text):
        m = pat.search(sent)
        if m is not None and dt.NEGATED.search(sent[: m.start()]) is None and dt.HEDGE.search(sent) is None:
            return True
    return False


def test_an_explicit_reference_is_found_as_before() -> None:
    texts = [n["text"] for n in linker_long.dev_long_notes()] + [n["text"] for n in linker_long.long_records(40)]
    texts += [
        "ADR-14: Queue\nThis record supersedes ADR-12. We use NATS.",
        "PEP: 9\nThis PEP replaces :pep:`215` and\nreplaces PEP 8 too.",
        "Title: RFC 3\nWe do not replace RFC 2; it replaces nothing. Maybe it supersedes RFC 1?",
        "KEP 5 -- supersedes\nKEP 4 (a line break between them).",
    ]
    reads = [pair_reading.read(t) for t in texts]
    idents = sorted({r.ident for r in reads if r.ident} | {"adr 12", "pep 215", "pep 8", "rfc 2", "rfc 1", "kep 4"})
    found = 0
    for r in reads:
        for ident in idents:
            assert pair_reading.refers(r, ident) == _refers_before(r, ident), (r.text[:60], ident)
            found += _refers_before(r, ident)
    assert found >= 3


def _search_before(store: SQLiteStore, terms: list[str], namespace: str, limit: int, active_only: bool) -> list:
    """Every match ranked over the terms some row has (what a small table's search did)."""
    status = "n.status = 'active'" if active_only else "n.status != 'forgotten'"
    conn = store._conn()
    count = "SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?"
    present = [t for t in dict.fromkeys(terms) if conn.execute(count, (fts_query([t]),)).fetchone()[0]]
    return sqlite_search.ranked(conn, [fts_query(present)], namespace, limit, status) if present else []


@pytest.mark.parametrize("size", [5, 60, 81, 160])
def test_a_small_table_is_searched_as_before(tmp_path: Path, size: int) -> None:
    """Below ``PRUNE_ROWS`` every match is ranked, as before the MaxScore passes."""
    assert size < sqlite_search.PRUNE_ROWS
    rng = random.Random(size)
    store = SQLiteStore(tmp_path / "s.db")
    texts = [n["text"] for n in linker_long.long_records(size, seed=size)]
    for i, text in enumerate(texts):
        node = store.insert(NewNote(raw_text=text, namespace="other" if i % 9 == 0 else "default"))
        if i % 13 == 0:
            store.forget(node.id)
    from evomem.domain import text as textrules

    for _ in range(25):
        terms = [*textrules.query_terms(rng.choice(texts)), "zzzabsent", "_"]
        rng.shuffle(terms)
        for namespace, limit, active_only in (("default", 20, True), ("default", 5, False), ("other", 20, True)):
            got = store.search(terms, namespace=namespace, limit=limit, active_only=active_only)
            want = _search_before(store, terms, namespace, limit, active_only)
            # The same notes in the same order. A query of many terms ranks without the words half
            # the rows have (``search_informative``): each score is lower by at most their bounds.
            assert [h.node_id for h in got] == [h.node_id for h in want]
            for g, w in zip(got, want, strict=True):
                assert w.score - 1.5e-4 < g.score <= w.score + 1e-9
    assert store.search(["zzzabsent"], namespace="default", limit=5) == []
    store.close()


def test_prepare_leaves_the_decision_as_it_was() -> None:
    if not _model_available():
        pytest.skip("no embedding model installed")
    from evomem.adapters.models.embedding import OnnxEmbedder

    embedder = OnnxEmbedder(threads=1)
    texts = [n["text"] for n in linker_long.long_records(8, seed=4)]
    cands = [node(t) for t in texts[:-1]]
    plain = PairLinker(embedder, model=shipped_pair_model()).decide(texts[-1], None, cands)
    ahead = PairLinker(embedder, model=shipped_pair_model())
    ahead.prepare(texts[-1])
    assert ahead.decide(texts[-1], None, cands) == plain
    PairLinker(None, model=shipped_pair_model()).prepare(texts[-1])  # without an embedder: only the reading


def test_a_long_document_is_searched_by_its_title_and_decision() -> None:
    """The candidate search of a long record asks for its title and decision part, not its front
    matter or background; a short note is its own query."""
    background = "We looked at many things this quarter. " * 40
    adr = (
        "# ADR 31: Message broker for the billing events\n\n"
        "Authors: Priya Natarajan, Tomasz Wiśniewski\n\n"
        f"## Context\n\n{background}\n\n"
        "## Decision\n\nBilling events go through NATS JetStream instead of RabbitMQ.\n\n"
        f"## Consequences\n\n{background}\n"
    )
    assert len(adr) > dt.SHORT_NOTE_CHARS
    query = dt.search_text(adr)
    assert query.startswith("ADR 31: Message broker for the billing events")
    assert "NATS JetStream instead of RabbitMQ" in query
    assert "Priya" not in query and "quarter" not in query
    short = "Billing events: NATS from now on."
    assert dt.search_text(short) == short


def test_the_service_searches_a_long_note_by_its_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """``MemoryService`` hands BM25 the terms of ``search_text``: a long record whose background
    never names its predecessor's subject still finds it by its decision part."""
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    service = build_embedded(Settings(db=":memory:", auto_supersede="pair", vectors="off"))
    searched: list[list[str]] = []
    real = service.storage.store.search

    def spy(terms: list[str], **kw: object) -> object:
        searched.append(list(terms))
        return real(terms, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(service.storage.store, "search", spy)
    old = service.remember("Billing events go through RabbitMQ.").node
    filler = " ".join(f"word{k} topic{k}." for k in range(120))  # 64 other terms before the decision
    record = f"# ADR 32: Billing events\n\n## Context\n\n{filler}\n\n## Decision\n\nRabbitMQ is out; NATS JetStream.\n"
    out = service.remember(record)
    assert "rabbitmq" in searched[-1] and "word0" not in searched[-1]
    assert out.decision is not None and old.id in {c for c, _ in out.decision.candidates} | {
        p.target_id for p in [out.decision.proposal] if p is not None
    }
    service.close()  # type: ignore[attr-defined]
