"""The answers of the premise check (``evomem.domain.premise``): a verdict, one chain as it bears on
the statement (``Reading``), and the judgement with its evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from evomem.domain.model import MemoryNode


class Verdict(StrEnum):
    IN_FORCE = "in_force"
    SUPERSEDED = "superseded"
    CONTRADICTED = "contradicted"
    UNKNOWN = "unknown"


@dataclass(slots=True)
class Reading:
    """One chain as it bears on the statement."""

    head: MemoryNode  # its version in force (or its forgotten head)
    relation: str  # the subject relation: exact, narrower, broader
    stance: str  # supports, replaced, contradicts
    named: MemoryNode | None = None  # the version that named the statement's option
    successor: MemoryNode | None = None  # the version that replaced ``named``
    option: str | None = None  # the option the head names
    turned: bool = False  # the head chose another option than the version it replaced, which chose the statement's


@dataclass(slots=True)
class Judgement:
    verdict: Verdict
    confidence: float
    option: str | None = None  # the statement's option, as read
    subject: tuple[str, ...] = ()  # the statement's subject tokens
    readings: list[Reading] = field(default_factory=list)  # the chains that decided, best first
    reason: str = ""
