"""The last lines before a file's sealed offset, as CRC-32s.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sluice_files") as batch:
        batch.add_column(sa.Column("tail_digest", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sluice_files") as batch:
        batch.drop_column("tail_digest")
