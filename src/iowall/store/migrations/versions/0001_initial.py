"""Initial schema: runs, metrics, artifacts, series.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("batch", sa.String(36), nullable=False, index=True),
        sa.Column("recipe", sa.String(64), nullable=False, index=True),
        sa.Column("label", sa.String(128), nullable=False, index=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("point_key", sa.Text, nullable=False),
        sa.Column("point_json", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False, index=True),
        sa.Column("repeat_index", sa.Integer, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float, nullable=False),
        sa.Column("host", sa.String(255), nullable=False, index=True),
        sa.Column("kernel", sa.String(255), nullable=False, index=True),
        sa.Column("env_json", sa.Text, nullable=False),
        sa.Column("bed_json", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("notes_json", sa.Text, nullable=False),
    )
    op.create_table(
        "metrics",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("direction", sa.String(8), nullable=False),
    )
    op.create_index("ix_metrics_name", "metrics", ["name"])
    op.create_table(
        "artifacts",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("content_type", sa.String(64), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_table(
        "series",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("probe", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("samples_json", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("series")
    op.drop_table("artifacts")
    op.drop_index("ix_metrics_name", "metrics")
    op.drop_table("metrics")
    op.drop_table("runs")
