"""The linker of a wiring (``auto_supersede``) and the one whose decisions are only offered."""

from __future__ import annotations

import functools
from collections.abc import Callable

from evomem.app.ports import Embedder, Linker, Store
from evomem.domain.linkers.lazy import LazyLinker
from evomem.domain.recall import HintCutoffs
from evomem.settings import Settings


def linker_for(
    mode: str, settings: Settings | None = None, store: Store | None = None, embedder: Embedder | None = None
) -> Linker | None:
    """The linker called ``mode`` (an ``AUTO_SUPERSEDE`` value). ``store``: lets the scored
    linker read the earlier versions of a candidate's chain (what a terse "Ledger runs on
    SQLite" is about). ``llm`` takes its model, endpoint and key from ``settings``."""
    if mode == "off":
        return None
    from evomem.domain.linkers.scored import ScoredLinker  # here: a server without a linker never imports one

    if mode == "llm":
        from evomem.adapters.llm_linker import LLMLinker
        from evomem.domain.linkers.cascade import CascadeLinker, pair_unsure

        settings = settings if settings is not None else Settings()
        model, base_url = settings.require_llm("auto_supersede")
        # The LLM behind the pair linker, asked whenever that one is unsure about a plausible
        # candidate (it abstained). The pair linker, not the scored one, because on the held-out
        # development halves it lists the true predecessor for 82-89 % of the replacing notes
        # (what the LLM is shown), where the scored linker's gate rarely opens (docs/BENCHMARKS.md).
        return CascadeLinker(
            pair_linker(store, embedder, cross=settings.linker.cross_encoder, offer_at=settings.linker.offer_min_p),
            LLMLinker(
                model,
                base_url,
                structured=settings.linker.structured,
                timeout_s=float(settings.linker.timeout_s),
                api_key=settings.api_key(),
            ),
            pair_unsure,
        )
    if mode == "heuristic":
        from evomem.domain.linkers.heuristic import HeuristicLinker

        return HeuristicLinker()
    if mode == "scored":
        return ScoredLinker(lookup=store.get_many if store is not None else None, embedder=embedder)
    if mode == "pair":
        settings = settings if settings is not None else Settings()
        return pair_linker(store, embedder, cross=settings.linker.cross_encoder, offer_at=settings.linker.offer_min_p)
    raise ValueError(f"unknown linker {mode!r}")  # pragma: no cover - Settings validates


def pair_linker(
    store: Store | None = None, embedder: Embedder | None = None, *, cross: bool = False, offer_at: float | None = None
) -> Linker:
    """The pair linker (``evomem.domain.linkers.pair``) with the shipped model
    (``evomem.adapters.models.pair_weights.shipped_pair_model``, checked against its pins):
    ``embedder`` for its similarity features (the service passes the search's cosines, so it
    embeds only what the search did not), ``store`` to read a candidate's earlier versions.
    ``cross``: with the packaged cross-encoder (``evomem.adapters.models.onnx_pair``), which reads the
    plausible candidates the pair model is unsure of (when onnxruntime or the model is missing,
    the pair model's answer stands)."""
    from evomem.adapters.models.pair_weights import shipped_pair_model
    from evomem.domain.linkers.pair import PairLinker

    scorer = None
    if cross:
        from evomem.adapters.models.onnx_pair import OnnxPairScorer

        scorer = OnnxPairScorer.shared()
    lookup = store.get_many if store is not None else None
    return PairLinker(embedder, model=shipped_pair_model(), lookup=lookup, cross=scorer, offer_at=offer_at)


def offerer_for(
    settings: Settings, store: Store | None = None, embedder: Embedder | None = None, *, lazy: bool = False
) -> Linker | None:
    """With ``auto_supersede`` off and ``offer_candidates`` on: the pair linker, whose decision
    ``remember`` only offers (``possible_supersedes``, up to 3), never links. No LLM.
    ``lazy``: built at the first ``remember`` (``LazyLinker``; the embedded server's start)."""
    if settings.linker.auto_supersede != "off" or not settings.linker.offer_candidates:
        return None
    offer_at = settings.linker.offer_min_p
    if lazy:
        return LazyLinker(lambda: pair_linker(store, embedder, offer_at=offer_at))
    return pair_linker(store, embedder, offer_at=offer_at)


def hint_floor(settings: Settings) -> Callable[[], HintCutoffs]:
    """The probabilities from which recall shows a hit's possible successor: the setting (for a
    successor among the results and not alike), else the shipped pair model's ``hint_at`` and
    ``hint_at_shown``, read at the first recall that has a successor to show (not at start: the
    embedded server builds its pair linker lazily too); above 1 (none shown) with ``recall_hints`` off."""
    if not settings.linker.recall_hints:
        return lambda: HintCutoffs.both(HINTS_OFF)
    given = settings.linker.hint_min_p
    if given is not None:
        return lambda: HintCutoffs.both(given)

    @functools.cache
    def shipped() -> HintCutoffs:
        from evomem.adapters.models.pair_weights import shipped_pair_model

        model = shipped_pair_model()
        return HintCutoffs(model.hint_at, model.hint_at if model.hint_at_shown is None else model.hint_at_shown)

    return shipped


HINTS_OFF = 1.01
