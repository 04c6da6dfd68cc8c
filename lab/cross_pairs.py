"""The cross-encoder's pair data: (note, candidate, label) texts from development data only.

    python -m lab.cross_pairs --out build/cross/pairs.jsonl [--vector-cache build/linker-vectors.json]

The notes are replayed exactly as ``lab.train_linker`` replays them for the pair model
(``build_groups``: every scenario of every development file and of one generated set per
generator, with the earlier gold links made and with none made, three long notes of other
scenarios first). The pair model's own out-of-fold probability (grouped 5-fold by scenario,
``train_linker.calibrate``) ranks each note's candidates, and the first ``TOP`` become pairs:
the cross-encoder is asked only about the candidates the pair model already put at the top,
which is what the linker asks it at run time (``PairLinker``'s ``cross`` stage). The gold
predecessor is added when it was a candidate but not among them, so every note with a gold edge
in reach teaches one positive.

Each line: ``source``, ``group`` (scenario id), ``entry`` (the note's replay), ``split``
(``train`` or ``calib``), ``note`` and ``cand`` (the texts the encoder reads: a long document's
title and decision part, ``pair.cross_text``), ``label``, ``gbt`` (the pair model's
out-of-fold probability), ``rank`` (by it), ``best`` (the pair model's first choice),
``gold`` (the note has a gold predecessor).

Split: ``CALIB_SHARE`` of the scenarios are ``calib``: never trained on, they set the link
threshold. Which ones is a hash of the seed, the source's name and the scenario's id
(``in_calib``), so a source or a scenario added later moves no other scenario between the
splits (until 2026-12-06 it was one draw per scenario in source order: adding a source moved
scenarios the shipped encoder had trained on into ``calib``). The odd halves of the development
files named with ``--hold-out`` (the halves the linking table reports as development rows) are
left out entirely, as ``make train-linker`` leaves them out of the held-out pair model. Blind data
is refused (``train_linker.dev_files``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from evomem.domain.linkers import pair as pl
from evomem.domain.linkers.pair_features import MAX_LISTED
from evomem.domain.linkers.pair_model import PairModel
from lab import train_linker as tl

TOP = MAX_LISTED  # the linker asks the encoder about at most this many listed candidates
CALIB_SHARE = 0.2


def in_calib(source: str, scenario_id: str, seed: int) -> bool:
    """Whether a scenario is held back for calibration: ``CALIB_SHARE`` of them, by a hash of the
    seed, the source and the scenario's id (the same answer whatever else is in the data)."""
    digest = hashlib.sha256(f"{seed}:{source}:{scenario_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < CALIB_SHARE


def pairs(sources: list[Any], groups: list[Any], oof: Any, seed: int) -> list[dict[str, Any]]:
    texts = {name: items for name, items, _ in sources}
    calib = {(name, k) for name, k, _ in groups if in_calib(name, str(texts[name][k].get("id", k)), seed)}
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    pos = 0
    for g, (name, k, entries) in enumerate(groups):
        notes = {n["i"]: n["text"] for n in texts[name][k]["notes"]}
        for e_idx, e in enumerate(entries):
            distractor_texts = {-(j + 1): t for j, t in enumerate(e.get("extra", ()))}
            ps = oof[pos : pos + len(e["rows"])].tolist()
            pos += len(e["rows"])
            order = sorted(range(len(ps)), key=lambda j: -ps[j])
            chosen = order[:TOP]
            gold_at = [j for j, lab in enumerate(e["labels"]) if lab]
            if gold_at and gold_at[0] not in chosen:
                chosen = [*chosen, gold_at[0]]
            for j in chosen:
                c = e["cands"][j]
                cand = notes.get(c, distractor_texts.get(c))
                if cand is None:
                    continue
                key = (notes[e["note"]], cand, name)
                if key in seen:  # the linked and unlinked replays often ask the same pair
                    continue
                seen.add(key)
                out.append(
                    {
                        "source": name,
                        "group": g,
                        "entry": f"{g}:{e_idx}",
                        "split": "calib" if (name, k) in calib else "train",
                        "note": pl.cross_text(notes[e["note"]]),
                        "cand": pl.cross_text(cand),
                        "label": int(e["labels"][j]),
                        "gbt": round(ps[j], 5),
                        "rank": order.index(j),
                        "best": j == order[0],
                        "gold": e["gold"] is not None,
                    }
                )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.cross_pairs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/cross/pairs.jsonl")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--hold-out", action="append", default=[], help="leave out the odd half of this source")
    ap.add_argument("--vector-cache", default="", help="the embeddings file of lab.train_linker (read and updated)")
    args = ap.parse_args(argv)
    from evomem.adapters.models.embedding import OnnxEmbedder

    embedder = OnnxEmbedder(threads=1)
    linker = pl.PairLinker(embedder, model=PairModel(kind="lr", link_at=1.0, abstain_at=1.0), cache_size=1_000_000)
    cache = Path(args.vector_cache) if args.vector_cache else None
    if cache is not None:
        linker._vectors.update(tl._read_vector_cache(cache, embedder.name))
    sources = tl.load_sources(tl.dev_files(), gen_seeds=1)
    if args.hold_out:
        sources = tl.hold_out(sources, args.hold_out, "build/cross/held-out")
    groups = tl.build_groups(sources, linker, args.seed)
    if cache is not None:
        tl._write_vector_cache(cache, embedder.name, linker._vectors)
    cal = tl.calibrate(sources, groups, args.seed)  # the shipped pair model's kind (train_linker's default)
    rows = pairs(sources, groups, cal["oof"], args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    n_pos = sum(r["label"] for r in rows)
    n_cal = sum(r["split"] == "calib" for r in rows)
    print(f"wrote {len(rows)} pairs ({n_pos} positive, {n_cal} for calibration) -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
