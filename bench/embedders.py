"""MiniLM against the static table distilled from it (EVOMEM_EMBEDDER=static), quality and cost, in one run.

    python -m bench.embedders --out bench/results          # make bench-embedders
    python -m bench.embedders --no-quality --no-agents     # the embedders' own numbers only (a minute)

For each embedder (``minilm``: the shipped int8 ONNX all-MiniLM-L6-v2; ``static``: the model2vec
table of ``lab/distill_static.py``), on the development sets (bench/data's odr, vdr, para and
lab/devdata) and the blind sets (bench/blind: run, never read; aggregates only):

- **vector ranking** (the embedder alone, no BM25): a main question's notes ranked by cosine, is
  the note in force in the top 5 (``q_hit5``; para by wording, ``neither`` being the paraphrase that
  shares no name with any version); a replacing note's earlier notes ranked by cosine, is the note it
  replaces in the top 3 (``edge_r3``: the linker's candidates by meaning);
- **noise floor**: the cosine of notes of different scenarios (seeded pairs), its p95 and p99, and
  the static cosine at the quantile where MiniLM's is 0.2 (``bootstrap.vectors`` drops neighbours
  below 0.2 for MiniLM; a static floor that drops as many cut paraphrases, so it ships 0.2 too);
- **cost**: ms to embed one note (p50 / p95, one thread, as remember does), load time, and remember
  and recall p50 / p95 in-core with hybrid recall on a 10k-note store (``bench.speed.in_core``, the
  store's vectors from the embedder under test, ``bench.datagen.add_vectors``);
- **the product's benches** with ``EVOMEM_EMBEDDER`` set (subprocesses, same run): ``bench.quality``
  on the paraphrase set (``--no-quality`` leaves it out) and ``bench.agents`` without the PEPs
  (recall if confirmed, ODR; ``--no-agents``).

Writes ``embedders.json`` and ``embedders.md``. Nothing is asserted; the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.stats import summary

ROOT = Path(__file__).resolve().parents[1]
EMBEDDERS = ("minilm", "static")
MINILM_FLOOR = 0.2  # bootstrap.vectors.VECTOR_MIN_SIMILARITY


def make_embedder(name: str) -> Any:
    if name == "static":
        from evomem.adapters.models.static import StaticEmbedder

        return StaticEmbedder()
    from evomem.adapters.models.embedding import OnnxEmbedder

    return OnnxEmbedder(threads=1)


def load_sets() -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """name -> (dev or blind, scenarios) in the shared format."""
    from bench.agents import blind_sets, dev_sets

    out: dict[str, tuple[str, list[dict[str, Any]]]] = {n: ("dev", s) for n, s in dev_sets().items()}
    out.update({n: ("blind", s) for n, s in blind_sets().items()})
    return out


# ---------------------------------------------------------------------------- the embedder alone


def _rank_of(target: int, scores: Any, among: Sequence[int]) -> int:
    """1-based rank of ``target`` among the indices ``among`` by descending score (ties: earlier first)."""
    order = sorted(among, key=lambda j: (-float(scores[j]), j))
    return order.index(target) + 1


def vector_ranking(
    encode: Callable[[list[str]], Any], scenarios: list[dict[str, Any]], keep: list[Any] | None = None
) -> dict[str, Any]:
    """q_hit5 (overall and by wording) and edge_r3 of one set; ``keep`` collects each scenario's note vectors."""
    import numpy as np

    hits: dict[str, list[int]] = {}
    edges: list[int] = []
    for sc in scenarios:
        notes = [n["text"] for n in sc["notes"]]
        questions = [q for q in sc.get("questions", []) if q.get("kind") == "main" and q.get("gold_note") is not None]
        if not notes:
            continue
        vecs = np.asarray(encode(notes + [q["text"] for q in questions]), dtype=np.float32)
        nv, qv = vecs[: len(notes)], vecs[len(notes) :]
        if keep is not None:
            keep.append(nv)
        for q, v in zip(questions, qv, strict=True):
            gold = int(q["gold_note"])
            if not 0 <= gold < len(notes):
                continue
            rank = _rank_of(gold, nv @ v, range(len(notes)))
            for key in ("all", str(q.get("wording") or "")):
                if key:
                    hits.setdefault(key, []).append(int(rank <= 5))
        for i, n in enumerate(sc["notes"]):
            j = n.get("supersedes")
            if isinstance(j, int) and 0 <= j < i:
                edges.append(int(_rank_of(j, nv @ nv[i], range(i)) <= 3))
    out: dict[str, Any] = {k: {"q_hit5": round(sum(v) / len(v), 4), "n": len(v)} for k, v in hits.items()}
    out["edges"] = {"edge_r3": round(sum(edges) / len(edges), 4) if edges else None, "n": len(edges)}
    return out


def noise_cosines(per_scenario: list[Any], n: int, seed: int) -> Any:
    """Cosines of ``n`` seeded pairs of notes from different development scenarios (unrelated, mostly),
    the same pairs for every embedder (the scenarios come in the same order)."""
    import numpy as np

    rng = random.Random(seed)
    out = []
    while len(out) < n:
        a, b = rng.sample(range(len(per_scenario)), 2)
        va, vb = per_scenario[a], per_scenario[b]
        out.append(float(va[rng.randrange(len(va))] @ vb[rng.randrange(len(vb))]))
    return np.asarray(out)


def per_note_ms(embedder: Any, texts: list[str]) -> dict[str, float]:
    embedder.encode(texts[:2])  # loaded
    times = []
    for t in texts:
        s = time.perf_counter()
        embedder.encode([t])
        times.append((time.perf_counter() - s) * 1000)
    return summary(times)


# ---------------------------------------------------------------------------- remember on a 10k store


def remember_cost(name: str, embedder: Any, workdir: Path, n: int, notes: int, rounds: int) -> dict[str, Any]:
    """Remember and recall p50 / p95 in-core, hybrid, on an ``n``-note store whose vectors ``embedder`` wrote."""
    from bench import datagen, speed

    base = workdir / f"store-{n}.db"
    if not base.exists():
        datagen.build(base, n, seed=1)
    db = workdir / f"store-{n}-{name}.db"
    import shutil

    shutil.copyfile(base, db)
    datagen.add_vectors(db, seed=1, progress=False, embedder=embedder)
    os.environ["EVOMEM_EMBEDDER"] = name  # read by Settings() in speed.in_core: the wiring under test
    try:
        times = speed.in_core(db, speed.QUERIES, speed.new_notes(notes, n), rounds, vectors="on")
    finally:
        os.environ.pop("EVOMEM_EMBEDDER", None)
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    return {"notes": n, "remember": summary(times["remember"]), "recall": summary(times["recall"])}


# ---------------------------------------------------------------------------- the product's benches


def _run(cmd: list[str], embedder: str, log: Path) -> float:
    env = {**os.environ, "EVOMEM_EMBEDDER": embedder, "PYTHONPATH": f"{ROOT / 'services'}:{ROOT}"}
    started = time.perf_counter()
    with log.open("w") as f:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} (EVOMEM_EMBEDDER={embedder}) failed: see {log}")
    return round(time.perf_counter() - started, 1)


def quality_para(embedder: str, workdir: Path) -> dict[str, Any]:
    """bench.quality on the paraphrase set: hit rate and ODR by wording, links, recall if confirmed."""
    out = workdir / f"quality-{embedder}"
    cmd = [
        sys.executable,
        "-m",
        "bench.quality",
        "--sets",
        "para",
        "--no-progress",
        "--out",
        str(out),
        "--memories",
        "evomem-agent,evomem-auto:pair",
    ]
    seconds = _run(cmd, embedder, workdir / f"quality-{embedder}.log")
    report = json.loads((out / "quality.json").read_text())
    return {"seconds": seconds, **pick_quality(report)}


def pick_quality(report: dict[str, Any]) -> dict[str, Any]:
    """The paraphrase set's numbers per memory, from bench.quality's JSON."""
    para = report["sets"]["para"]
    picked: dict[str, Any] = {}
    for mem, m in para["memories"].items():
        row: dict[str, Any] = {"odr": m["main"]["odr"]}
        for wording, w in (m.get("by_wording") or {}).items():
            row[f"hit_{wording}"] = w.get("hit_rate")
        links = m.get("links") or {}
        for key in ("precision", "recall", "recall_if_confirmed"):
            if key in links:
                row[key] = links[key]
        picked[mem] = row
    return {"memories": picked}


def agents(embedder: str, workdir: Path, dev_sample: int, blind_sample: int) -> dict[str, Any]:
    """bench.agents without the PEP chains: per group, ODR of the agents and recall if confirmed."""
    out = workdir / f"agents-{embedder}"
    cmd = [
        sys.executable,
        "-m",
        "bench.agents",
        "--no-peps",
        "--no-progress",
        "--out",
        str(out),
        "--dev-sample",
        str(dev_sample),
        "--blind-sample",
        str(blind_sample),
    ]
    seconds = _run(cmd, embedder, workdir / f"agents-{embedder}.log")
    report = json.loads((out / "agents.json").read_text())
    picked: dict[str, Any] = {"seconds": seconds}
    for group, p in report["pooled"].items():
        a, offers = p["agents"], p["offers"]
        picked[group] = {
            "recall_if_confirmed": offers.get("recall_if_confirmed"),
            "offered_no_gold": round(offers["no_gold_offered"] / max(1, offers["no_gold_notes"]), 4),
            **{f"odr_{k}": a[k]["odr"] for k in ("ignore", "hints", "perfect", "credulous") if k in a},
            "perfect_link_recall": a.get("perfect", {}).get("link_recall"),
        }
    return picked


# ---------------------------------------------------------------------------- the run


def run(args: argparse.Namespace, save: Callable[[dict[str, Any]], None] = lambda r: None) -> dict[str, Any]:
    import numpy as np

    sets = load_sets()
    report: dict[str, Any] = {
        "benchmark": "evomem-embedders/1",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": platform.python_version(),
        "sets": {name: {"group": kind, "scenarios": len(scs)} for name, (kind, scs) in sets.items()},
        "embedders": {},
    }
    sample_notes = [n["text"] for _, (k, scs) in sorted(sets.items()) if k == "dev" for sc in scs for n in sc["notes"]]
    random.Random(args.seed).shuffle(sample_notes)
    workdir = Path(tempfile.mkdtemp(prefix="evomem-embedders-"))
    for name in args.embedders:
        print(f"[{name}] vectors ...", file=sys.stderr, flush=True)
        emb = make_embedder(name)
        started = time.perf_counter()
        emb.load()
        entry: dict[str, Any] = {"name": emb.name, "dim": emb.dim, "load_s": round(time.perf_counter() - started, 3)}
        entry["embed_ms"] = per_note_ms(emb, sample_notes[: args.notes])
        ranking: dict[str, Any] = {}
        dev_vectors: list[Any] = []
        for set_name, (kind, scs) in sets.items():
            ranking[set_name] = vector_ranking(emb.encode, scs, dev_vectors if kind == "dev" else None)
            print(f"[{name}] {set_name} {ranking[set_name]}", file=sys.stderr, flush=True)
        entry["ranking"] = ranking
        cos = noise_cosines(dev_vectors, args.pairs, args.seed)
        entry["noise"] = {
            "p50": round(float(np.percentile(cos, 50)), 4),
            "p95": round(float(np.percentile(cos, 95)), 4),
            "p99": round(float(np.percentile(cos, 99)), 4),
        }
        entry["_cos"] = cos
        if args.store:
            print(f"[{name}] remember on {args.store:,} notes ...", file=sys.stderr, flush=True)
            entry["in_core_hybrid"] = remember_cost(name, emb, workdir, args.store, args.remembers, args.rounds)
        report["embedders"][name] = entry
        save(report)
    if "minilm" in report["embedders"] and "static" in report["embedders"]:
        mc, sc = report["embedders"]["minilm"]["_cos"], report["embedders"]["static"]["_cos"]
        q = float((mc < MINILM_FLOOR).mean())
        report["floor"] = {
            "minilm": MINILM_FLOOR,
            "quantile": round(q, 4),
            "static": round(float(np.quantile(sc, q)), 3),
        }
    for entry in report["embedders"].values():
        entry.pop("_cos", None)
    for name in args.embedders:
        entry = report["embedders"][name]
        if args.quality:
            print(f"[{name}] bench.quality para ...", file=sys.stderr, flush=True)
            entry["quality_para"] = quality_para(name, workdir)
            save(report)
        if args.agents:
            print(f"[{name}] bench.agents ...", file=sys.stderr, flush=True)
            entry["agents"] = agents(name, workdir, args.dev_sample, args.blind_sample)
            save(report)
    report["workdir"] = str(workdir)
    return report


def pooled(entry: dict[str, Any], sets: dict[str, Any], group: str, key: str, sub: str = "all") -> tuple[float, int]:
    """A ranking metric pooled over a group's sets (weighted by count)."""
    total, n = 0.0, 0
    for name, info in sets.items():
        if info["group"] != group:
            continue
        cell = entry["ranking"][name].get("edges" if key == "edge_r3" else sub)
        if cell and cell.get(key) is not None:
            total += cell[key] * cell["n"]
            n += cell["n"]
    return (round(total / n, 4) if n else float("nan")), n


def _f(x: Any, digits: int = 3) -> str:
    return "–" if x is None or x != x else f"{x:.{digits}f}"


def markdown(r: dict[str, Any]) -> str:
    """embedders.md: dev and blind side by side, then cost, then the product's benches."""
    embs, sets = r["embedders"], r["sets"]
    lines = [
        "# MiniLM against its static distillation (`EVOMEM_EMBEDDER=static`)",
        "",
        f"{r['date']}, Python {r['python']}, {r.get('seconds', 0):.0f} s. `python -m bench.embedders` "
        "(`make bench-embedders`); one run, both embedders. Blind sets are run, never read: aggregates only.",
        "",
        "## The embedder alone: vector ranking (no BM25)",
        "",
        "*q_hit5*: a main question's notes ranked by cosine, the note in force in the top 5. *edge_r3*: a "
        "replacing note's earlier notes ranked by cosine, the note it replaces in the top 3 (the linker's "
        "candidates by meaning). *para neither*: questions that share no name with any version (the paraphrase).",
        "",
        "| embedder | dim | dev q_hit5 | blind q_hit5 | dev edge_r3 | blind edge_r3 | para q_hit5 | para neither |"
        " para edge_r3 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, e in embs.items():
        dq, dn = pooled(e, sets, "dev", "q_hit5")
        bq, bn = pooled(e, sets, "blind", "q_hit5")
        de, den = pooled(e, sets, "dev", "edge_r3")
        be, ben = pooled(e, sets, "blind", "edge_r3")
        para = e["ranking"].get("para", {})
        lines.append(
            f"| {name} (`{e['name']}`) | {e['dim']} | {_f(dq)} (n={dn}) | {_f(bq)} (n={bn}) | {_f(de)} (n={den}) | "
            f"{_f(be)} (n={ben}) | {_f(para.get('all', {}).get('q_hit5'))} | "
            f"{_f(para.get('neither', {}).get('q_hit5'))} | {_f(para.get('edges', {}).get('edge_r3'))} |"
        )
    lines += [
        "",
        "Per set (q_hit5 / edge_r3):",
        "",
        "| set | group | " + " | ".join(embs) + " |",
        "|---|---|" + "---|" * len(embs),
    ]
    for set_name, info in sets.items():
        cells = []
        for e in embs.values():
            rk = e["ranking"][set_name]
            cells.append(f"{_f(rk.get('all', {}).get('q_hit5'))} / {_f(rk['edges'].get('edge_r3'))}")
        lines.append(f"| {set_name} | {info['group']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Noise floor",
        "",
        "Cosine of development notes from different scenarios.",
        "",
        "| embedder | p50 | p95 | p99 |",
        "|---|---|---|---|",
    ]
    for name, e in embs.items():
        lines.append(f"| {name} | {_f(e['noise']['p50'])} | {_f(e['noise']['p95'])} | {_f(e['noise']['p99'])} |")
    if "floor" in r:
        fl = r["floor"]
        lines += [
            "",
            f"MiniLM's floor {fl['minilm']} is its {fl['quantile']:.3f} quantile of these cosines; the static "
            f"table's cosine at that quantile is **{fl['static']}**: a floor that drops as many unrelated pairs "
            "(the sweep below says what it costs paraphrases).",
        ]
    lines += [
        "",
        "## Cost",
        "",
        "One note embedded at a time (as remember does), one thread; remember and recall in-core, "
        "hybrid, on a store of generated notes whose vectors the embedder wrote (`bench.speed.in_core`).",
        "",
        "| embedder | load s | embed one note p50 / p95 ms | store | remember p50 / p95 ms | recall p50 / p95 ms |",
        "|---|---|---|---|---|---|",
    ]
    for name, e in embs.items():
        ic = e.get("in_core_hybrid")
        store = f"{ic['notes']:,}" if ic else "–"
        rem = f"{_f(ic['remember']['p50_ms'], 2)} / {_f(ic['remember']['p95_ms'], 2)}" if ic else "–"
        rec = f"{_f(ic['recall']['p50_ms'], 2)} / {_f(ic['recall']['p95_ms'], 2)}" if ic else "–"
        em = e["embed_ms"]
        lines.append(
            f"| {name} | {_f(e['load_s'], 2)} | {_f(em['p50_ms'], 3)} / {_f(em['p95_ms'], 3)} | {store} | "
            f"{rem} | {rec} |"
        )
    if any("quality_para" in e for e in embs.values()):
        lines += [
            "",
            "## bench.quality, paraphrase set (EVOMEM_EMBEDDER set for the whole run)",
            "",
            "| embedder | memory | ODR | hit all | old words | new words | neither | links P / R | "
            "recall if confirmed |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, e in embs.items():
            for mem, m in e.get("quality_para", {}).get("memories", {}).items():
                lines.append(
                    f"| {name} | {mem} | {_f(m.get('odr'))} | {_f(m.get('hit_all'))} | {_f(m.get('hit_old_words'))} | "
                    f"{_f(m.get('hit_new_words'))} | {_f(m.get('hit_neither'))} | "
                    f"{_f(m.get('precision'))} / {_f(m.get('recall'))} | {_f(m.get('recall_if_confirmed'))} |"
                )
    if r.get("floor_sweep"):
        sw = r["floor_sweep"]
        lines += [
            "",
            "## The static floor (`bootstrap.vectors.STATIC_MIN_SIMILARITY`)",
            "",
            sw["how"],
            "",
            "| static floor | para: agent hit all | neither | pair ODR | pair recall if confirmed | "
            "agents dev / blind recall if confirmed |",
            "|---|---|---|---|---|---|",
        ]
        for row in sw["rows"]:
            lines.append(
                f"| {row['floor']} | {_f(row['hit_all'])} | {_f(row['hit_neither'])} | {_f(row['pair_odr'])} | "
                f"{_f(row['pair_ric'])} | {_f(row.get('agents_dev_ric'))} / {_f(row.get('agents_blind_ric'))} |"
            )
    if any("agents" in e for e in embs.values()):
        lines += [
            "",
            "## bench.agents without the PEPs (the default server's offers, EVOMEM_EMBEDDER set)",
            "",
            "| embedder | group | recall if confirmed | offered, no gold | ODR ignore | ODR hints | ODR perfect | "
            "ODR credulous | perfect link recall |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, e in embs.items():
            for group in ("dev", "blind"):
                a = e.get("agents", {}).get(group)
                if a:
                    lines.append(
                        f"| {name} | {group} | {_f(a['recall_if_confirmed'])} | {_f(a['offered_no_gold'])} | "
                        f"{_f(a.get('odr_ignore'))} | {_f(a.get('odr_hints'))} | {_f(a.get('odr_perfect'))} | "
                        f"{_f(a.get('odr_credulous'))} | {_f(a.get('perfect_link_recall'))} |"
                    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.embedders", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--embedders", default=",".join(EMBEDDERS))
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--pairs", type=int, default=20000, help="note pairs of different scenarios for the noise floor")
    ap.add_argument("--notes", type=int, default=400, help="notes embedded one at a time for the per-note cost")
    ap.add_argument("--store", type=int, default=10_000, help="notes in the remember store (0: skip)")
    ap.add_argument("--remembers", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=10, help="rounds of the 10 recall queries")
    ap.add_argument("--no-quality", dest="quality", action="store_false")
    ap.add_argument("--no-agents", dest="agents", action="store_false")
    ap.add_argument("--dev-sample", type=int, default=30)
    ap.add_argument("--blind-sample", type=int, default=0)
    ap.add_argument("--render", action="store_true", help="only rewrite embedders.md from --out's embedders.json")
    args = ap.parse_args(argv)
    args.embedders = [e.strip() for e in args.embedders.split(",") if e.strip()]
    out = Path(args.out)
    if args.render:
        report = json.loads((out / "embedders.json").read_text())
    else:
        started = time.perf_counter()
        out.mkdir(parents=True, exist_ok=True)

        def save(partial: dict[str, Any]) -> None:  # after each stage: a run cut short keeps what it measured
            partial["seconds"] = round(time.perf_counter() - started, 1)
            clean = {
                **partial,
                "embedders": {k: {f: v for f, v in e.items() if f != "_cos"} for k, e in partial["embedders"].items()},
            }
            (out / "embedders.json").write_text(json.dumps(clean, indent=2) + "\n", encoding="utf-8")

        report = run(args, save)
        save(report)
    text = markdown(report)
    (out / "embedders.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
