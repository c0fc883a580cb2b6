"""The acker's in-flight trees per pipeline and host.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sluice_acker_trees",
        sa.Column("pipeline", sa.String(64), primary_key=True),
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("tree_id", sa.String(16), primary_key=True),
        sa.Column("value", sa.String(16), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("start_offset", sa.BigInteger, nullable=False),
        sa.Column("end_offset", sa.BigInteger, nullable=False),
        sa.Column("line_count", sa.BigInteger, nullable=False),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sluice_acker_trees")
