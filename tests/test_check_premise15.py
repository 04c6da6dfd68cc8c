"""check, in both wirings: rules of helper premise15 (issue 33's premise check on long documents): a
decision record, an RFC or a policy is read by the part that decides (its title and its decision section,
else the section about the statement's topic, else its summary), not by every word of it; a document as a
statement is read the same way; what a record in force decides about another part leaves this one as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_document import deciding

CONTEXT = (
    "The team is small and already runs several stateful systems on its own virtual machines. Any choice "
    "here has to be patched, monitored and upgraded by the same four people, and the on-call rota is already "
    "stretched across two time zones, which makes every new pager alert expensive for everyone. We looked "
    "at the incidents of the last year, at the cost of the current "
    "set-up, and at what the other product teams in the company run, so that knowledge can be shared."
)


def adr(title: str, context: str, decision: str, consequences: str) -> str:
    text = (
        f"{title}\n\nStatus: Accepted\nDate: 2023-05-22\n\n## Context\n\n{context} {CONTEXT}\n\n"
        f"## Decision\n\n{decision}\n\n## Consequences\n\n- {consequences}\n- {CONTEXT}\n"
    )
    assert len(text) > 1200  # a document, not a note
    return text


RABBIT = adr(
    "ADR-7: Choose a message broker for order events",
    "Checkout calls fulfilment and invoicing synchronously; an outage of invoicing stopped checkout for an hour. "
    "Apache Kafka offers replay but was judged too heavy for the team.",
    "We will use RabbitMQ as the message broker for order events, with one quorum queue per consumer.",
    "Replaying history is not possible once a message is acknowledged.",
)
KAFKA = adr(
    "ADR-14: Move order events to Apache Kafka",
    "RabbitMQ has delivered reliably, but RabbitMQ keeps no history and the data team needs replay. RabbitMQ "
    "would be the only cluster of its kind left in the company.",
    "Order events move from RabbitMQ to Apache Kafka on the managed company cluster.",
    "History becomes replayable for 30 days; consumers must stay idempotent as they were with RabbitMQ.",
)


def test_the_deciding_part_of_a_document() -> None:
    part = deciding(KAFKA)
    assert part is not None and part.startswith("ADR-14: Move order events to Apache Kafka")
    assert "from RabbitMQ to Apache Kafka" in part and "keeps no history" not in part
    assert deciding("We will use RabbitMQ for order events.") is None  # a short note is read whole
    policy = (
        "HR-4: Hybrid working policy\nStatus: In force\n\n1. Purpose\n" + CONTEXT + "\n\n2. Remote work allowance\n"
        "Employees may work from home two days per week.\n\n3. Equipment\n" + CONTEXT + "\n\n4. Review\n" + CONTEXT
    )
    assert len(policy) > 1200
    # no decision section: the one whose heading holds the statement's topic, else none
    assert "two days per week" in (deciding(policy, {"remote", "work", "day"}) or "")
    assert deciding(policy) is None
    pep = (
        "PRP 411 -- Feature release schedule\n\nPRP: 411\nStatus: Active\nResolution: 2016-02-10\n\nAbstract\n"
        "This PRP sets the schedule of feature releases.\n\nMotivation\n" + CONTEXT + "\n\nSpecification\n"
        "1. A new feature release is made every 18 months.\n\nRationale\n" + CONTEXT + "\n\nCopyright\n" + CONTEXT
    )
    assert len(pep) > 1200
    # a header field is no section ("Resolution: 2016-02-10"); a proposal's specification says what it decides
    assert "every 18 months" in (deciding(pep) or "")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_record_that_names_the_old_option_throughout_replaced_it(tmp_path: Path, wiring: str) -> None:
    """The record in force names RabbitMQ in its context and its consequences: read whole it holds every
    word of the statement. Its decision says it moved from RabbitMQ to Kafka: `superseded`."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(RABBIT).node.id
        now = service.remember(KAFKA, supersedes=first).node.id
        old = service.check("The platform message broker uses RabbitMQ.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert len(old.named[0].raw_text) > 1200  # the evidence is the stored note, whole
        held = service.check("The platform message broker uses Apache Kafka.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_record_given_as_the_statement_is_read_by_its_decision(tmp_path: Path, wiring: str) -> None:
    """The statement is a record itself (an agent that quotes the decision it builds on)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(RABBIT).node.id
        service.remember(KAFKA, supersedes=first)
        assert service.check(RABBIT).verdict == "superseded"
        assert service.check(KAFKA).verdict == "in_force"


METRICS = adr(
    "OBS-5: Metrics and dashboards",
    "Teams run their own monitoring and nobody can see a service end to end.",
    "Metrics are collected and stored with Prometheus. Dashboards: all dashboards are built in Grafana.",
    "Every team learns PromQL.",
)
STORAGE = adr(
    "OBS-12: Long-term metrics storage",
    "Prometheus keeps 15 days; capacity planning needs a year. Grafana dashboards stay as they are.",
    "Metrics are stored and queried in VictoriaMetrics, with 13 months of retention; vmagent replaces the "
    "Prometheus servers for scraping.",
    "Existing PromQL queries keep working.",
)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_record_that_decides_another_part_leaves_this_one(tmp_path: Path, wiring: str) -> None:
    """The record in force decides the metrics store; its deciding part holds no word of "the dashboard
    tool": read by that part alone it would have left Grafana. It is read whole, as before."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(METRICS).node.id
        service.remember(STORAGE, supersedes=first)
        assert service.check("The obs metrics store uses Prometheus.").verdict == "superseded"
        assert service.check("The obs dashboard tool uses Grafana.").verdict not in ("superseded", "contradicted")


NATS = adr(
    "ADR-11: Use NATS JetStream for order events",
    "RabbitMQ keeps no history and quorum queues use more memory than we sized for.",
    "We will use NATS JetStream for order events, with streams kept for 14 days.",
    "Consumers can be rewound.",
).replace("Status: Accepted", "Status: Rejected")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_rejected_record_is_not_read_by_its_decision(tmp_path: Path, wiring: str) -> None:
    """Its decision section says "We will use NATS JetStream", its status that it was rejected: it decides
    nothing, read by its decision or whole."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember(RABBIT)
        service.remember(NATS)
        assert service.check("The platform message broker uses NATS JetStream.").verdict != "in_force"
        assert service.check("The platform message broker uses RabbitMQ.").verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_record_whose_status_says_superseded_no_longer_decides(tmp_path: Path, wiring: str) -> None:
    """No note was linked as its replacement, but its own status line says another replaced it."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember(RABBIT.replace("Status: Accepted", "Status: Superseded by ADR-14"))
        assert service.check("The platform message broker uses RabbitMQ.").verdict != "in_force"
        service.remember(RABBIT.replace("ADR-7", "ADR-8"))  # the same record, in force
        assert service.check("The platform message broker uses RabbitMQ.").verdict == "in_force"
