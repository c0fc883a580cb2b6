"""Penalty and backoff state of the sinks of each sink group.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sluice_sink_states",
        sa.Column("pipeline", sa.String(64), primary_key=True),
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("sink_group", sa.String(64), primary_key=True),
        sa.Column("sink", sa.String(64), primary_key=True),
        sa.Column("consecutive_failures", sa.Integer, nullable=False),
        sa.Column("excluded_until", sa.Float, nullable=False),
        sa.Column("last_failure_at", sa.Float, nullable=False),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sluice_sink_states")
