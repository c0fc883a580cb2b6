"""What each collector read over time: samples of bytes read and bytes not read yet.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sluice_read_progress",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("pipeline", sa.String(64), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("sampled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("elapsed_s", sa.Float, nullable=False),
        sa.Column("bytes_read", sa.BigInteger, nullable=False),
        sa.Column("lines_read", sa.BigInteger, nullable=False),
        sa.Column("unread_bytes", sa.BigInteger, nullable=False),
    )
    op.create_index(
        "ix_sluice_read_progress_sampled", "sluice_read_progress", ["pipeline", "sampled_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_sluice_read_progress_sampled", table_name="sluice_read_progress")
    op.drop_table("sluice_read_progress")
