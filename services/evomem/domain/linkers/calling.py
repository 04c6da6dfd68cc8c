"""Calling a linker with what it declares it reads, in one place.

Every linker takes ``decide(text, scope, candidates)``. Some read more: the search's cosine of
the note with each candidate (``takes_similarities``: no second embedding) and whether the note's
scope was inferred from its text (``reads_inferred_scopes``: such a scope is a guess, see
``scope.may_list``). The service, the cascade (for its cheap linker) and the linker service's
servicer all call through ``decide``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evomem.domain.model import LinkDecision, MemoryNode

if TYPE_CHECKING:
    from evomem.app.ports import Linker


def decide(
    linker: Linker,
    text: str,
    scope: str | None,
    candidates: Sequence[MemoryNode],
    *,
    similarities: Mapping[str, float] | None = None,
    scope_inferred: bool = False,
) -> LinkDecision:
    """``linker.decide``, passing ``similarities`` and ``scope_inferred`` only to a linker that
    declares it reads them."""
    extra: dict[str, object] = {}
    if similarities is not None and getattr(linker, "takes_similarities", False):
        extra["similarities"] = similarities
    if getattr(linker, "reads_inferred_scopes", False):
        extra["scope_inferred"] = scope_inferred
    return linker.decide(text, scope, candidates, **extra)  # type: ignore[call-arg]
