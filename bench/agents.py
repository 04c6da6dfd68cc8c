"""Five simulated agents read the same answers of the default server (issue 30).

What the server contributes to "memory that knows when you changed your mind", beyond the
``supersedes`` an agent passes itself, is what it *says*: ``remember``'s ``possible_supersedes``
(the likely predecessors, with a score or probability and a reason) and ``recall``'s
``maybe_replaced_by`` hints. This bench measures what an agent that reads them would do.

Every scenario's notes are replayed in order through the embedded server with its default settings
(``Settings(db=...)``: ``build_embedded``, as ``evomem-mcp`` starts; no automatic links, offers on),
behind the official MCP client in-process (``bench.memories.EvoMemMemory``), one fresh database per
scenario and replay. The agents never pass ``supersedes``; they differ only in what they do with
the answers:

1. ``ignore``: ignores offers and hints;
2. ``hints``: answers each question from recall, but when the hit it would act on carries
   ``maybe_replaced_by``, it answers with that newer note (the first listed) instead;
3. ``perfect``: confirms an offer (``supersede``) only if it is the note's gold predecessor;
4. ``calibrated``: confirms the top offer when its shown probability (score) is >= 0.9;
5. ``credulous``: confirms the top offer always.

The top offer is the offer with the highest shown probability (the first listed on a tie, or
when the answer shows none). Agents 3-5 confirm during the replay, so the store they query has
their links. ``ignore`` and ``hints`` share one replay (neither changes the store); an agent that
would confirm nothing in a scenario (judged on that replay's answers, which are its own up to its
first confirm) reuses it too. Then every question is asked with ``recall`` (k=5, ``detail=full``).

The answer: an agent acts on the first hit that decides the asked topic in the asked scope and is
not marked superseded (no date reasoning: "the answer's top hit"). The baseline, flat BM25 with
dates (``bench.memories.FlatMemory``), acts on the newest-dated such note among its top 5
(``bench.judge.DeterministicJudge``), as in ``bench.quality``.

Reported per set and agent: ODR (the answer is an obsolete version), misses (no answer of the
topic), still-valid decisions hidden (a decision valid when the questions are asked whose status
is not active at the end), confirmed links' precision and recall against the gold edges; for the
hint reader how often it followed a hint, and how often that turned a right answer wrong. Per set
(from the shared replay): offers per note on notes that replace nothing (share with at least one
offer), recall if confirmed (the gold predecessor among the offers, over replacing notes), and a
reliability table: every offer bucketed by its shown probability (0-0.1, ..., 0.9-1.0), count and
observed share right. The Python PEP chains (external data, ``bench.external.load_peps``) have no
questions: only their offers, links and hidden PEPs are reported, on a row of their own (not pooled).
Issue 30's targets are checked per set (``bench.agents_report``).

Sets: development (``bench/data`` odr, vdr, para; ``lab/devdata/dev-*.jsonl``) and blind
(``bench/blind/blind-*.jsonl`` and the PEP chains), reported side by side; blind sets in aggregate
only. ``--dev-sample N`` / ``--blind-sample N``: N scenarios per set drawn with ``--seed`` (the
output says so).

    python -m bench.agents --out bench/results --dev-sample 30     # make bench-agents
    python -m bench.agents --out /tmp/a --sets odr,vdr --dev-sample 10 --no-peps
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.agents_counts import (
    AGENTS,
    BASELINE,
    CONFIRM_AT,
    CONFIRMERS,
    ROOT,
    blank_set,
    bucket,
)
from bench.judge import HIDDEN_STATUSES, DeterministicJudge, classify
from bench.memories import BenchError, EvoMemMemory, FlatMemory, K, scope_label

# ----------------------------------------------------------------------------- what the server says


@dataclass(frozen=True)
class Offer:
    """One entry of ``possible_supersedes``: the scenario note it names (None: not one of them),
    the probability or score shown with it (None: none shown) and its reason."""

    target: int | None
    score: float | None
    why: str = ""


@dataclass
class Hit:
    note: int | None  # the scenario note (None: an id not in the scenario)
    status: str
    hints: list[int | None] = field(default_factory=list)  # maybe_replaced_by, in the answer's order


@dataclass
class Replay:
    """One replay of a scenario: what the server offered, what the agent confirmed, the final
    statuses of the still-valid notes and every question's hits."""

    offers: dict[int, list[Offer]] = field(default_factory=dict)
    confirmed: list[tuple[int, int]] = field(default_factory=list)  # (new, old) as the server linked them
    refused: int = 0  # confirms the server refused
    statuses: dict[int, str] = field(default_factory=dict)
    hits: dict[str, list[Hit]] = field(default_factory=dict)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_offers(answer: Mapping[str, Any], back: Mapping[str, int]) -> list[Offer]:
    """The offers of a ``remember`` answer, whatever shape it gives them: ``possible_supersedes`` as
    ids (scores from ``link_decision.candidates`` or a parallel ``possible_supersedes_confidence``)
    or as objects with an ``id`` and a ``probability``, ``confidence`` or ``score``."""
    listed = answer.get("possible_supersedes") or []
    decision = answer.get("link_decision") or {}
    scores: dict[str, float | None] = {}
    whys: dict[str, str] = {}
    for c in decision.get("candidates") or []:
        if isinstance(c, Mapping) and isinstance(c.get("id"), str):
            scores[c["id"]] = _number(c.get("probability", c.get("confidence", c.get("score"))))
            whys[c["id"]] = str(c.get("why") or c.get("reason") or "")
    parallel = answer.get("possible_supersedes_confidence") or []
    out: list[Offer] = []
    for n, entry in enumerate(listed):
        if isinstance(entry, Mapping):
            node_id = str(entry.get("id", ""))
            score = _number(entry.get("probability", entry.get("confidence", entry.get("score"))))
            why = str(entry.get("why") or entry.get("reason") or "")
        else:
            node_id, score, why = str(entry), None, ""
        if score is None:
            score = _number(parallel[n]) if n < len(parallel) else scores.get(node_id)
        out.append(Offer(back.get(node_id), score, why or whys.get(node_id, "")))
    return out


def top_offer(offers: Sequence[Offer]) -> Offer | None:
    """The offer with the highest shown probability; the first listed on a tie or without scores."""
    best: Offer | None = None
    for o in offers:
        if best is None or (o.score or 0.0) > (best.score or 0.0):
            best = o
    return best


def gold_of(note: Mapping[str, Any]) -> set[int]:
    """The note's gold predecessors (a PEP may replace several)."""
    if note.get("gold_targets") is not None:
        return set(note["gold_targets"])
    return set() if note.get("supersedes") is None else {note["supersedes"]}


Policy = Callable[[Mapping[str, Any], Sequence[Offer]], int | None]


def _perfect(note: Mapping[str, Any], offers: Sequence[Offer]) -> int | None:
    gold = gold_of(note)
    return next((o.target for o in offers if o.target in gold), None)


def _calibrated(note: Mapping[str, Any], offers: Sequence[Offer]) -> int | None:
    top = top_offer(offers)
    return top.target if top is not None and top.score is not None and top.score >= CONFIRM_AT else None


def _credulous(note: Mapping[str, Any], offers: Sequence[Offer]) -> int | None:
    top = top_offer(offers)
    return None if top is None else top.target


POLICIES: dict[str, Policy] = {"perfect": _perfect, "calibrated": _calibrated, "credulous": _credulous}


# ----------------------------------------------------------------------------- replaying


class CachedEmbedder:
    """The embedding model with each text's vector kept across replays: every scenario is replayed up
    to four times, and its notes and questions are the same texts each time. The model is stateless,
    so a kept vector is the one it computes for that text again (up to the float noise of the batch it
    came in: the service's own cache asks the model only for texts it has not seen); only the time
    changes."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.name = model.name
        self._vectors: dict[str, Any] = {}

    def encode(self, texts: Sequence[str]) -> list[Any]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.model.encode(missing), strict=True))
        return [self._vectors[t] for t in texts]

    def clear(self) -> None:
        self._vectors.clear()

    def __getattr__(self, name: str) -> Any:  # load, state, available...: the model's
        return getattr(self.model, name)


class DefaultServer(EvoMemMemory):
    """The default server (``bench.memories.EvoMemMemory`` with no linker, its default settings), one
    embedding model for every replay, its vectors kept (``CachedEmbedder``)."""

    def __init__(self) -> None:
        super().__init__(linker=None, label="evomem-default")

    def _share_embedder(self, service: Any) -> None:
        semantic = getattr(service, "vectors", None)
        model = getattr(semantic, "embedder", None)
        if model is None:
            return
        if not isinstance(self._embedder, CachedEmbedder) or self._embedder.name != model.name:
            self._embedder = CachedEmbedder(model)
        semantic.embedder = self._embedder  # type: ignore[union-attr]


async def remember_note(
    memory: EvoMemMemory, note: Mapping[str, Any], ns: str, ids: dict[int, str], back: dict[str, int]
) -> dict[str, Any]:
    """``remember`` one scenario note (its scope as a label) in ``ns``; its id kept both ways."""
    args: dict[str, Any] = {"raw_text": note["text"], "namespace": ns}
    if note.get("scope"):
        args["scope"] = scope_label(note["scope"])
    answer = await memory.call("remember", args)
    ids[note["i"]] = answer["id"]
    back[answer["id"]] = note["i"]
    return answer


async def replay(
    memory: EvoMemMemory, scenario: Mapping[str, Any], policy: Policy | None, k: int = K, tag: str = ""
) -> Replay:
    """The scenario's notes in order through a fresh default server, the agent confirming what
    ``policy`` picks; then every question through recall, and every still-valid note's status."""
    ns = f"{scenario['set']}{scenario['index']}{tag}"
    out = Replay()
    ids: dict[int, str] = {}
    back: dict[str, int] = {}
    notes: Any = scenario["notes"]
    if len(notes) > 200:  # the PEP chains: one scenario of hundreds of long notes
        from tqdm import tqdm

        notes = tqdm(notes, desc=f"{scenario['set']} remember{tag}", unit="note", leave=False, file=sys.stderr)
    with memory.session():
        for note in notes:
            answer = await remember_note(memory, note, ns, ids, back)
            offers = parse_offers(answer, back)
            out.offers[note["i"]] = offers
            target = policy(note, offers) if policy is not None else None
            if target is None:
                continue
            try:
                done = await memory.call("supersede", {"node_id": answer["id"], "supersedes": ids[target]})
            except BenchError:
                out.refused += 1
                continue
            linked = back.get(done.get("supersedes") or "")
            if linked is not None:
                out.confirmed.append((note["i"], linked))
        for q in scenario["questions"]:
            got = await memory.call("recall", {"query": q["text"], "k": k, "namespace": ns, "detail": "full"})
            out.hits[q["id"]] = [
                Hit(
                    back.get(h.get("id", "")),
                    str(h.get("status", "active")),
                    [back.get(y.get("id", "")) for y in h.get("maybe_replaced_by") or ()],
                )
                for h in got.get("results") or ()
            ]
        for note in scenario["notes"]:
            if note["valid_at_question"]:
                got = await memory.call("get_node", {"node_id": ids[note["i"]]})
                out.statuses[note["i"]] = str(got["status"])
    return out


def would_confirm(scenario: Mapping[str, Any], shared: Replay, policy: Policy) -> bool:
    """Whether the agent confirms anything on the shared replay's answers (its own answers up to its
    first confirm: before it the two replays are the same calls on the same store)."""
    return any(policy(n, shared.offers.get(n["i"], [])) is not None for n in scenario["notes"])


async def run_scenario(memory: EvoMemMemory, scenario: Mapping[str, Any], k: int = K) -> dict[str, Replay]:
    """The shared replay (``ignore`` and ``hints``) and one per confirming agent (the shared one
    where the agent would confirm nothing)."""
    shared = await replay(memory, scenario, None, k)
    runs = {"ignore": shared, "hints": shared}
    for name in CONFIRMERS:
        policy = POLICIES[name]
        runs[name] = (
            await replay(memory, scenario, policy, k, f"-{name}") if would_confirm(scenario, shared, policy) else shared
        )
    return runs


# ----------------------------------------------------------------------------- answers


def _decides(note: Mapping[str, Any], q: Mapping[str, Any]) -> bool:
    return note.get("option") is not None and note["topic"] == q["topic"] and note["scope"] == q["scope"]


def top_answer(scenario: Mapping[str, Any], q: Mapping[str, Any], hits: Sequence[Hit]) -> Hit | None:
    """The hit an agent acts on: the first that decides the asked topic and scope, not superseded."""
    notes = scenario["notes"]
    for h in hits:
        if h.note is not None and h.status not in HIDDEN_STATUSES and _decides(notes[h.note], q):
            return h
    return None


def outcome_of(scenario: Mapping[str, Any], q: Mapping[str, Any], note: int | None) -> str:
    """What answering ``q`` with ``note`` is: correct, obsolete, wrong_scope, miss (it decides
    nothing, or no note) or other (another topic's decision)."""
    if note is None:
        return "miss"
    n = scenario["notes"][note]
    if n.get("option") is None:
        return "miss"
    if n["topic"] != q["topic"]:
        return "other"
    if n["scope"] != q["scope"]:
        return "wrong_scope"
    return classify(n["option"], q)


def answer(scenario: Mapping[str, Any], q: Mapping[str, Any], hits: Sequence[Hit], follow: bool) -> dict[str, Any]:
    """One agent's answer to ``q``: its outcome, and for the hint reader whether it followed a hint."""
    top = top_answer(scenario, q, hits)
    own = outcome_of(scenario, q, None if top is None else top.note)
    if not follow or top is None or not top.hints:
        return {"outcome": own, "followed": False, "own": own, "top": None if top is None else top.note}
    return {"outcome": outcome_of(scenario, q, top.hints[0]), "followed": True, "own": own, "top": top.note}


# ----------------------------------------------------------------------------- counting


def count_scenario(acc: dict[str, Any], scenario: Mapping[str, Any], runs: Mapping[str, Replay]) -> None:
    """Add one scenario's replays to the set's counters."""
    notes = scenario["notes"]
    replaced = {t for n in notes for t in gold_of(n)}
    edges = {(n["i"], t) for n in notes for t in gold_of(n)}
    acc["scenarios"] += 1
    for name in AGENTS:
        run, c = runs[name], acc["agents"][name]
        for q in scenario["questions"]:
            got = answer(scenario, q, run.hits.get(q["id"], []), follow=name == "hints")
            c["questions"] += 1
            c[got["outcome"]] += 1
            if name in ("ignore", "hints") and got["top"] is not None and got["top"] not in replaced:
                top = top_answer(scenario, q, run.hits.get(q["id"], []))
                c["top_unreplaced"] += 1
                c["top_unreplaced_hinted"] += bool(top is not None and top.hints)
            if got["followed"]:
                c["followed"] += 1
                c["followed_spoiled"] += got["own"] == "correct" and got["outcome"] != "correct"
                c["followed_fixed"] += got["own"] != "correct" and got["outcome"] == "correct"
        for n in notes:
            if n["valid_at_question"] and n.get("option") is not None:
                c["valid_decisions"] += 1
                c["hidden"] += run.statuses.get(n["i"], "active") != "active"
        c["confirmed"] += len(set(run.confirmed))
        c["confirmed_right"] += len(set(run.confirmed) & edges)
        c["refused"] += run.refused
        c["gold_edges"] += len(edges)
    o, shared = acc["offers"], runs["ignore"]
    for n in notes:
        offers = shared.offers.get(n["i"], [])
        gold = gold_of(n)
        o["notes"] += 1
        o["offers"] += len(offers)
        if gold:
            o["gold_notes"] += 1
            o["gold_offered"] += any(x.target in gold for x in offers)
            top = top_offer(offers)
            o["gold_top"] += top is not None and top.target in gold
        else:
            o["no_gold_notes"] += 1
            o["no_gold_offered"] += bool(offers)
            o["no_gold_offers"] += len(offers)
        if n.get("option") is None:
            o["nondecision_notes"] += 1
            o["nondecision_offered"] += bool(offers)
        for x in offers:
            right = x.target in gold
            o["offers_right"] += right
            if x.score is None:
                o["offers_unscored"] += 1
                continue
            band = acc["reliability"][bucket(x.score)]
            band[0] += 1
            band[1] += right


async def count_baseline(acc: dict[str, Any], scenario: Mapping[str, Any], judge: DeterministicJudge) -> None:
    """Flat BM25 with dates on the scenario's questions (``bench.quality``'s baseline and judge)."""
    if not scenario["questions"]:
        return
    run = await FlatMemory(dates=True).run(scenario)
    c = acc["agents"][BASELINE]
    for q in scenario["questions"]:
        c["questions"] += 1
        c[judge.judge(scenario, q, run.items[q["id"]]).outcome] += 1


# ----------------------------------------------------------------------------- sets


def dev_sets() -> dict[str, list[dict[str, Any]]]:
    """The development sets: bench/data's generated odr, vdr and para, and lab/devdata/dev-*.jsonl."""
    from bench import scenarios as scen
    from bench.quality import adapt_scenarios

    sets = {name: scen.load(ROOT / "bench" / "data" / f"{name}.jsonl") for name in ("odr", "vdr", "para")}
    for path in sorted((ROOT / "lab" / "devdata").glob("dev-*.jsonl")):
        sets[path.stem] = adapt_scenarios(scen.load(path), path.stem)
    return sets


def blind_sets() -> dict[str, list[dict[str, Any]]]:
    """The blind scenario sets, bench/blind/blind-*.jsonl (run, never read: aggregates only)."""
    from bench import scenarios as scen
    from bench.quality import adapt_scenarios

    return {
        p.stem: adapt_scenarios(scen.load(p), p.stem) for p in sorted((ROOT / "bench" / "blind").glob("blind-*.jsonl"))
    }


def pep_scenario(data: Path, limit: int = 0) -> dict[str, Any] | None:
    """The Python PEP chains (``bench.external.load_peps``) as one scenario without questions: the
    PEPs in order of creation, each with its gold predecessors created before it (several for some;
    the old side of any gold edge is not a still-valid PEP). None when the external data is missing."""
    from bench.external import load_peps

    if not (data / "peps").is_dir():
        return None
    peps, edges = load_peps(data)
    total = len(peps)
    if limit:
        peps = peps[:limit]
    at = {p["pep"]: i for i, p in enumerate(peps)}
    olds: dict[int, list[int]] = {}
    for new, old in edges:
        if new in at and old in at:
            olds.setdefault(at[new], []).append(at[old])
    replaced = {o for v in olds.values() for o in v}
    # an edge whose newer PEP was created first cannot be offered when it is remembered: not gold here
    olds = {n: [o for o in v if o < n] for n, v in olds.items()}
    notes = [
        {
            "i": i,
            "text": p["text"],
            "topic": f"pep-{p['pep']}",
            "scope": None,
            "option": f"PEP {p['pep']}",
            "supersedes": None,
            "gold_targets": sorted(olds.get(i, [])),
            "valid_at_question": i not in replaced,
            "kind": "pep",
        }
        for i, p in enumerate(peps)
    ]
    return {"id": "peps", "set": "peps", "index": 0, "notes": notes, "questions": [], "of": total}


def sample(items: Sequence[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` scenarios drawn with ``seed`` (all when ``n`` is 0 or the set is smaller), in file order."""
    if not n or n >= len(items):
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), n))
    return [items[i] for i in keep]


# ----------------------------------------------------------------------------- running


async def run_sets(
    sets: Mapping[str, Sequence[Mapping[str, Any]]], *, k: int = K, progress: bool = True
) -> dict[str, dict[str, Any]]:
    """Every scenario of every set through the five agents and the baseline: counters per set."""
    from tqdm import tqdm

    logging.getLogger("evomem.calls").setLevel(logging.WARNING)  # one line per tool call otherwise
    judge = DeterministicJudge()
    out: dict[str, dict[str, Any]] = {}
    async with DefaultServer() as memory:
        for name, items in sets.items():
            acc = blank_set()
            started = time.perf_counter()
            bar = tqdm(items, desc=f"agents {name}", unit="sc", disable=not progress, file=sys.stderr, leave=False)
            for scenario in bar:
                runs = await run_scenario(memory, scenario, k)
                count_scenario(acc, scenario, runs)
                await count_baseline(acc, scenario, judge)
            acc["seconds"] = round(time.perf_counter() - started, 1)
            out[name] = acc
            if isinstance(memory._embedder, CachedEmbedder):
                memory._embedder.clear()  # a set's texts are not the next set's
    return out


# ----------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    from bench import agents_report as tables
    from bench.external import DEFAULT_DATA

    ap = argparse.ArgumentParser(prog="python -m bench.agents", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench/results", help="folder for agents.json and agents.md")
    ap.add_argument("--sets", default="", help="comma list of sets to run (default: every dev and blind set)")
    ap.add_argument("--dev-sample", type=int, default=0, help="scenarios drawn per development set (0: all)")
    ap.add_argument("--blind-sample", type=int, default=0, help="scenarios drawn per blind set (0: all)")
    ap.add_argument("--seed", type=int, default=30, help="the seed of the draws")
    ap.add_argument("--no-peps", action="store_true", help="leave out the PEP chains")
    ap.add_argument("--peps-limit", type=int, default=0, help="only the first N PEPs in creation order (0: all)")
    ap.add_argument("--external", type=Path, default=DEFAULT_DATA, help="the external data folder (PEP chains)")
    ap.add_argument("--k", type=int, default=K)
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--render", action="store_true", help="only rewrite agents.md from --out's agents.json")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.render:
        report = json.loads((out / "agents.json").read_text(encoding="utf-8"))
        report["pooled"] = tables.pooled(report)  # as this code pools
        (out / "agents.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        (out / "agents.md").write_text(tables.markdown(report), encoding="utf-8")
        print(tables.short_table(report))
        return 0
    wanted = {s.strip() for s in args.sets.split(",") if s.strip()}
    sets: dict[str, list[dict[str, Any]]] = {}
    groups: dict[str, str] = {}
    sampled: dict[str, tuple[int, int]] = {}
    skipped: list[str] = []
    for group, found, n in (("dev", dev_sets(), args.dev_sample), ("blind", blind_sets(), args.blind_sample)):
        for name, items in found.items():
            if wanted and name not in wanted:
                continue
            sets[name] = sample(items, n, args.seed)
            groups[name] = group
            if len(sets[name]) < len(items):
                sampled[name] = (len(sets[name]), len(items))
    if not args.no_peps and (not wanted or "peps" in wanted):
        peps = pep_scenario(args.external, args.peps_limit)
        if peps is None:
            skipped.append(f"the PEP chains ({args.external / 'peps'} is missing)")
            print(f"bench.agents: {args.external / 'peps'} is missing; the PEP chains are skipped", file=sys.stderr)
        else:
            sets["peps"], groups["peps"] = [peps], "blind"
            if args.peps_limit:
                sampled["peps"] = (len(peps["notes"]), peps["of"])
    unknown = wanted - set(sets) - {"peps"}
    if unknown:
        raise SystemExit(f"unknown set {sorted(unknown)}")
    started, cpu = time.perf_counter(), time.process_time()
    counts = asyncio.run(run_sets(sets, k=args.k, progress=not args.no_progress))
    report = tables.build_report(counts, groups, k=args.k, seed=args.seed, seconds=time.perf_counter() - started)
    report["cpu_seconds"] = round(time.process_time() - cpu, 1)  # every thread of this process
    report["sampled"] = sampled
    report["skipped"] = skipped
    out.mkdir(parents=True, exist_ok=True)
    (out / "agents.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "agents.md").write_text(tables.markdown(report), encoding="utf-8")
    print(tables.short_table(report))
    if sampled:
        drawn = ", ".join(f"{n} {a} of {b}" for n, (a, b) in sampled.items())
        print(f"sampled (seed {args.seed}): {drawn}")
    print(f"wrote {out / 'agents.json'} and {out / 'agents.md'} in {report['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
