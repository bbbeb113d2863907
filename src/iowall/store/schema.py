"""The store's tables (SQLAlchemy Core). Runs are immutable records: inserted once, never edited."""

from __future__ import annotations

from sqlalchemy import Column, Float, ForeignKey, Index, Integer, MetaData, String, Table, Text

metadata = MetaData()

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False, unique=True),
    Column("batch", String(36), nullable=False, index=True),
    Column("recipe", String(64), nullable=False, index=True),
    Column("label", String(128), nullable=False, index=True),
    Column("status", String(16), nullable=False),
    Column("point_key", Text, nullable=False),
    Column("point_json", Text, nullable=False),
    Column("fingerprint", String(32), nullable=False, index=True),
    Column("repeat_index", Integer, nullable=False, default=0),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float, nullable=False),
    Column("host", String(255), nullable=False, index=True),
    Column("kernel", String(255), nullable=False, index=True),
    Column("env_json", Text, nullable=False),
    Column("bed_json", Text, nullable=False),
    Column("error", Text, nullable=False, default=""),
    Column("notes_json", Text, nullable=False, default="[]"),
)

metrics = Table(
    "metrics", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("name", String(128), primary_key=True),
    Column("value", Float, nullable=False),
    Column("unit", String(32), nullable=False),
    Column("direction", String(8), nullable=False),
)
Index("ix_metrics_name", metrics.c.name)

artifacts = Table(
    "artifacts", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("name", String(128), primary_key=True),
    Column("content_type", String(64), nullable=False),
    Column("body", Text, nullable=False),
)

series = Table(
    "series", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("probe", String(64), primary_key=True),
    Column("name", String(128), primary_key=True),
    Column("unit", String(32), nullable=False),
    Column("samples_json", Text, nullable=False),
)

#: The report of one invocation (limits, a recipe or a plan), stored with its batch so that
#: ``iowall report BATCH`` prints it again: its sentences and notes as they were written.
reports = Table(
    "reports", metadata,
    Column("batch", String(36), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("name", String(128), nullable=False),
    Column("label", String(128), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("doc_json", Text, nullable=False),
)
