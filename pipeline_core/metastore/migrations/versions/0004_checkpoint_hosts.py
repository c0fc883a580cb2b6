"""The hosts each checkpoint waits for.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sluice_checkpoint_hosts",
        sa.Column(
            "checkpoint_id",
            sa.Integer,
            sa.ForeignKey("sluice_checkpoints.id"),
            primary_key=True,
        ),
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("sealed", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sluice_checkpoint_hosts")
