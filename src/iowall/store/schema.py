"""The store's tables (SQLAlchemy Core). Runs are immutable records: inserted once, never edited."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False, unique=True),
    Column("batch", String(36), nullable=False, index=True),
    Column("recipe", String(64), nullable=False, index=True),
    Column("label", String(128), nullable=False),
    Column("status", String(16), nullable=False, index=True),
    Column("point_key", Text, nullable=False),
    Column("point_json", Text, nullable=False),
    Column("fingerprint", String(32), nullable=False, index=True),
    Column("repeat_index", Integer, nullable=False, default=0),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float, nullable=False),
    Column("host", String(255), nullable=False, index=True),
    # on PostgreSQL the index is on kernel COLLATE "C" (0005): prefixes by code point
    Column("kernel", String(255), nullable=False, index=True),
    # '' when the document is in run_docs under env_ref / bed_ref (0003); the text otherwise
    Column("env_json", Text, nullable=False),
    Column("bed_json", Text, nullable=False),
    Column("error", Text, nullable=False, default=""),
    Column("notes_json", Text, nullable=False, default="[]"),
    Column("env_ref", String(32), nullable=True),
    Column("bed_ref", String(32), nullable=True),
    #: labels by their first run (Store.labels) and the runs of a label (0005)
    Index("ix_runs_label_id", "label", "id"),
)

#: Environment and bed documents, compressed, each content once (codec.pack_doc): the beds of
#: a series of runs are one document, their environments differ in a few numbers.
run_docs = Table(
    "run_docs",
    metadata,
    Column("ref", String(32), primary_key=True),
    Column("encoding", String(16), nullable=False),
    Column("data", LargeBinary, nullable=False),
)

#: What a metric is, apart from its value: each (name, unit, direction) once, by a small id
#: (0003: a metric row was its run, its name, unit and direction again, and its value).
metric_kinds = Table(
    "metric_kinds",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(128), nullable=False),
    Column("unit", String(32), nullable=False),
    Column("direction", String(8), nullable=False),
    UniqueConstraint("name", "unit", "direction", name="uq_metric_kinds"),
)

#: A run's metrics, in one compressed row (codec.pack_metrics: metric_kinds ids and values;
#: 0004: before it, ``metrics`` held a (run, kind, value) row per metric, 18 bytes a value).
#: No query selects runs by a metric's value: compare, history and the recipes' columns
#: select runs by their own columns and read the metrics of the runs selected.
run_metrics = Table(
    "run_metrics",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("encoding", String(16), nullable=False),
    Column("data", LargeBinary, nullable=False),
)

artifacts = Table(
    "artifacts",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("name", String(128), primary_key=True),
    Column("content_type", String(64), nullable=False),
    Column("body", Text, nullable=False),  # the text when encoding is identity, else ''
    #: codec.IDENTITY (the text in body) or codec.ZLIB (zlib of its UTF-8 in data)
    Column("encoding", String(16), nullable=False, server_default="identity"),
    Column("data", LargeBinary, nullable=True),
)

#: Every probe series of a run, in one compressed row (codec.pack_series; 0003: before it, a
#: ``series`` table held a row of JSON pairs per series).
series = Table(
    "run_series",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("encoding", String(16), nullable=False),
    Column("data", LargeBinary, nullable=False),
)

#: The report of one invocation (limits, a recipe or a plan), stored with its batch so that
#: ``iowall report BATCH`` prints it again: its sentences and notes as they were written.
reports = Table(
    "reports",
    metadata,
    Column("batch", String(36), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("name", String(128), nullable=False),
    Column("label", String(128), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("doc_json", Text, nullable=False),
)
