"""Parity of a node's fields across the places that carry them: the dataclass (the source),
the SQL table, the proto messages and the MCP view.

The SQL columns and the protobuf conversion are derived from the dataclass fields
(``evomem.adapters.sqlite.codec``), so a field added to ``MemoryNode`` is stored and sent with no
other edit to the mapping, but it still needs a migration, a proto field and a place in the
hand-written MCP view. These tests fail until all of them agree, except where
``VIEW_DIFFERENCES`` says why the public view shows a field another way.
"""

from __future__ import annotations

import dataclasses
from contextlib import closing
from pathlib import Path

import pytest

from evomem.adapters.fields import field_kinds
from evomem.adapters.grpc import convert
from evomem.adapters.sqlite import codec
from evomem.adapters.sqlite.codec import NODE_COLUMNS, NODE_SQL, node_to_row
from evomem.adapters.sqlite.driver import sqlite
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    LinkProvenance,
    MemoryNode,
    NewNote,
    ReviewFlag,
    Status,
    new_id,
)
from evomem.domain.recall import Match, RecallQuery, Successor
from evomem.entrypoints.mcp.answers import full_node, link_fields
from evomem.v1 import common_pb2, storage_pb2

# Dataclass fields the MCP view shows under another name or shape, with the reason.
VIEW_DIFFERENCES: dict[str, tuple[str, str]] = {
    "extraction_state": ("extraction", "grouped as extraction.state: one object for the cronista's work"),
    "extractor": ("extraction", "grouped as extraction.extractor"),
    "extraction_error": ("extraction", "grouped as extraction.error"),
    "extraction_attempts": ("extraction", "grouped as extraction.attempts"),
    "purged_at": ("purged", "a bool: when a purge happened is not part of the public answer"),
}

RECORDS = [
    (MemoryNode, common_pb2.MemoryNode),
    (NewNote, common_pb2.NewNote),
    (LinkProvenance, common_pb2.LinkProvenance),
    (Extraction, common_pb2.Extraction),
    (ReviewFlag, common_pb2.ReviewFlag),
    (RecallQuery, storage_pb2.RecallNodesRequest),
    (Match, storage_pb2.RecallMatch),
    (Successor, storage_pb2.PossibleSuccessor),
]


@pytest.mark.parametrize(("cls", "message"), RECORDS, ids=[c.__name__ for c, _ in RECORDS])
def test_every_dataclass_field_has_its_proto_field_and_back(cls: type, message: type) -> None:
    proto = {f.name: f for f in message.DESCRIPTOR.fields}
    fields = {k.name: k for k in field_kinds(cls)}
    assert set(fields) - set(proto) == set(), f"fields of {cls.__name__} missing from proto {message.__name__}"
    assert set(proto) - set(fields) == set(), f"proto {message.__name__} fields missing from {cls.__name__}"
    for name, kind in fields.items():
        pb = proto[name]
        repeated = pb.is_repeated
        repeats = kind.shape in ("strings", "numbers", "string_list", "relations")
        assert repeated == repeats, f"{cls.__name__}.{name}: repeated/map mismatch"
        if not repeated and kind.shape != "record":  # a message field always has presence in proto3
            assert pb.has_presence == kind.optional, f"{cls.__name__}.{name}: `| None` needs `optional` in the proto"


def test_the_nodes_table_has_exactly_the_codec_columns(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        table = {r[1] for r in store._conn().execute("PRAGMA table_info(nodes)")} - {"rowid"}
    finally:
        store.close()
    assert table == set(NODE_COLUMNS)
    assert len(NODE_COLUMNS) == len(set(NODE_COLUMNS))


def test_the_mcp_view_shows_every_node_field() -> None:
    """detail=full shows every field of a node whose fields all differ from their defaults."""
    node = _full_node()
    view = set(full_node(node, 10**6))
    node_fields = {f.name for f in dataclasses.fields(MemoryNode)}
    for name in node_fields:
        shown_as = VIEW_DIFFERENCES[name][0] if name in VIEW_DIFFERENCES else name
        assert shown_as in view, f"MemoryNode.{name} is not in the MCP full view (nor in VIEW_DIFFERENCES)"
    unexplained = view - node_fields - {shown for shown, _ in VIEW_DIFFERENCES.values()}
    assert unexplained == set(), f"full view fields with no MemoryNode field: {unexplained}"
    stale = set(VIEW_DIFFERENCES) - node_fields
    assert stale == set(), f"VIEW_DIFFERENCES names fields MemoryNode no longer has: {stale}"
    assert node.link is not None
    assert set(link_fields(node.link) or {}) == {f.name for f in dataclasses.fields(LinkProvenance)}
    cut = full_node(node, 5)
    assert cut["truncated"] is True and cut["text_chars"] == len(node.raw_text) and len(cut["raw_text"]) == 5


def _full_node() -> MemoryNode:
    """A node where every field differs from its default, so a dropped field shows."""
    return MemoryNode(
        id=new_id(),
        raw_text="Moved the ledger to SQLite because Postgres was overkill.",
        namespace="team",
        scope="staging",
        trigger="Postgres was overkill",
        change="moved the ledger to SQLite",
        alternatives_tried="DuckDB",
        consequences="backups are a file copy",
        summary="Moved the ledger to SQLite.",
        tags=("db", "ledger"),
        session="s1",
        author="alice",
        created_at=1_700_000_000_123,
        relations={"caused_by": (new_id(), new_id())},
        status=Status.SUPERSEDED,
        supersedes=new_id(),
        superseded_by=new_id(),
        chain_root=new_id(),
        version=3,
        link=LinkProvenance(
            method="heuristic",
            confidence=0.75,
            by="linker/1",
            evidence=("ledger", "sqlite"),
            requested_id=new_id(),
            created_at=1_700_000_000_456,
        ),
        extraction_state=ExtractionState.FAILED,
        extractor="cronista/1",
        extraction_error="timeout",
        extraction_attempts=2,
        forgotten_at=1_700_000_000_789,
        purged_at=1_700_000_000_999,
        file_erased_at=1_700_000_001_000,
        scope_source="inferred",
        scope_evidence="in staging",
        possible_supersedes=(new_id(),),
        needs_review=ReviewFlag((new_id(),), (new_id(),), (new_id(),), 1_700_000_001_111),
    )


def test_full_node_differs_from_the_defaults_in_every_field() -> None:
    node, bare = _full_node(), MemoryNode(id="x", raw_text="")
    same = [f.name for f in dataclasses.fields(MemoryNode) if getattr(node, f.name) == getattr(bare, f.name)]
    assert same == [], f"_full_node leaves these at their defaults, so their mapping is untested: {same}"


def test_a_node_survives_the_sql_row_and_the_proto_message(tmp_path: Path) -> None:
    node = _full_node()
    assert convert.node_from_pb(convert.node_to_pb(node)) == node
    store = SQLiteStore(tmp_path / "m.db")
    try:
        with closing(sqlite.connect(store.path)) as conn:  # no foreign-key checks: the ids are made up
            marks = ",".join("?" * len(NODE_COLUMNS))
            conn.execute(f"INSERT INTO nodes ({NODE_SQL}) VALUES ({marks})", node_to_row(node))
            conn.commit()
        assert store.get(node.id) == node
    finally:
        store.close()


def test_a_node_without_optional_values_survives_both() -> None:
    node = MemoryNode(id=new_id(), raw_text="x", chain_root="r")
    back = convert.node_from_pb(convert.node_to_pb(node))
    assert back == node and back.link is None and back.scope is None


def test_a_field_type_without_a_codec_is_refused_by_name() -> None:
    @dataclasses.dataclass
    class Odd:
        weights: list[float]

    with pytest.raises(TypeError, match="no codec for fields of type"):
        field_kinds(Odd)


def _row_to_node_before(row: tuple[object, ...]) -> MemoryNode:
    """``codec.row_to_node`` as it was: a loop over the plan's decoders."""
    values: dict[str, object] = {}
    for name, record, cols in codec._PLAN:
        if record is None:
            values[name] = cols[0][2](row[cols[0][1]])
        elif row[cols[0][1]] is None:
            values[name] = None
        else:
            values[name] = record(**{attr: decode(row[i]) for attr, i, decode, _ in cols})
    return MemoryNode(**values)  # type: ignore[arg-type]


def test_the_compiled_row_decoder_reads_what_the_decoders_read() -> None:
    """Every column of a full and a bare node's row, each also NULL, empty and odd in turn: the
    same node, field for field and type for type, or the same error."""
    bases = [node_to_row(_full_node()), node_to_row(MemoryNode(id="n", raw_text="x", chain_root="r"))]
    rows = list(bases)
    for base in bases:
        for k in range(len(NODE_COLUMNS)):
            for value in (None, "[]", "{}", "", "[1.5]", '{"a": ["b"]}', 0, "active"):
                rows.append((*base[:k], value, *base[k + 1 :]))
    decoded = 0
    for row in rows:
        try:
            want = _row_to_node_before(row)
        except Exception as exc:  # the same failure either way
            with pytest.raises(type(exc)):
                codec.row_to_node(row)
            continue
        got = codec.row_to_node(row)
        assert got == want
        assert [type(getattr(got, f.name)) for f in dataclasses.fields(got)] == [
            type(getattr(want, f.name)) for f in dataclasses.fields(want)
        ]
        decoded += 1
    assert decoded > len(rows) // 2
    assert codec.row_to_node(("pad", *bases[0]), 1) == _row_to_node_before(bases[0])  # an offset
