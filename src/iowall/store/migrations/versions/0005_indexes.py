"""Indexes for reads that must not grow with the store: (label, id), so that the list of
labels is a loose index scan (the next label after each and its first run: a seek each,
``Store.labels``) and not a GROUP BY over every run; on PostgreSQL, ``kernel COLLATE "C"``,
so that a kernel prefix (``--kernel 6.6``: ``'6.6.' <= kernel < '6.6/'`` and the other
separators, compared by code point) is a range of an index (SQLite's own kernel index
compares by code point already). Only indexes: a store migrated in place answers as before.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_label_id", "runs", ["label", "id"])
    op.drop_index("ix_runs_label", table_name="runs")
    if op.get_bind().dialect.name == "postgresql":
        op.execute('CREATE INDEX ix_runs_kernel_c ON runs (kernel COLLATE "C")')
        op.drop_index("ix_runs_kernel", table_name="runs")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_index("ix_runs_kernel", "runs", ["kernel"])
        op.drop_index("ix_runs_kernel_c", table_name="runs")
    op.create_index("ix_runs_label", "runs", ["label"])
    op.drop_index("ix_runs_label_id", table_name="runs")
