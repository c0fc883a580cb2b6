"""Files, checkpoints, batches with their byte ranges, and collector leases.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UTC_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "sluice_files",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("pipeline", sa.String(64), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("dev", sa.BigInteger, nullable=False),
        sa.Column("ino", sa.BigInteger, nullable=False),
        sa.Column("sig_size", sa.Integer, nullable=False),
        sa.Column("sig_crc", sa.BigInteger, nullable=False),
        sa.Column("sealed_offset", sa.BigInteger, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("first_seen_at", UTC_TIME, nullable=False),
        sa.Column("updated_at", UTC_TIME, nullable=False),
        sa.UniqueConstraint("pipeline", "host", "fingerprint", name="uq_sluice_files_identity"),
    )
    op.create_table(
        "sluice_checkpoints",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("pipeline", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("run_id", sa.String(250), nullable=True),
        sa.Column("data_interval_start", UTC_TIME, nullable=True),
        sa.Column("data_interval_end", UTC_TIME, nullable=True),
        sa.Column("requested_at", UTC_TIME, nullable=False),
        sa.Column("sealed_at", UTC_TIME, nullable=True),
        sa.Column("committed_at", UTC_TIME, nullable=True),
        sa.Column("landing", sa.Text, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.UniqueConstraint("pipeline", "run_id", name="uq_sluice_checkpoints_run"),
    )
    op.create_index(
        "ix_sluice_checkpoints_pipeline_state", "sluice_checkpoints", ["pipeline", "state"]
    )
    op.create_table(
        "sluice_batches",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "checkpoint_id", sa.Integer, sa.ForeignKey("sluice_checkpoints.id"), nullable=False
        ),
        sa.Column("pipeline", sa.String(64), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("staging_path", sa.Text, nullable=False),
        sa.Column("line_count", sa.BigInteger, nullable=False),
        sa.Column("byte_count", sa.BigInteger, nullable=False),
        sa.Column("part_count", sa.Integer, nullable=False),
        sa.Column("checksum", sa.String(16), nullable=False),
        sa.Column("manifest", sa.Text, nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.UniqueConstraint("checkpoint_id", "host", name="uq_sluice_batches_checkpoint_host"),
    )
    op.create_table(
        "sluice_batch_ranges",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("batch_id", sa.Integer, sa.ForeignKey("sluice_batches.id"), nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("start_offset", sa.BigInteger, nullable=False),
        sa.Column("end_offset", sa.BigInteger, nullable=False),
        sa.Column("line_count", sa.BigInteger, nullable=False),
    )
    op.create_index(
        "ix_sluice_batch_ranges_fingerprint",
        "sluice_batch_ranges",
        ["fingerprint", "start_offset"],
    )
    op.create_table(
        "sluice_leases",
        sa.Column("pipeline", sa.String(64), primary_key=True),
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("acquired_at", UTC_TIME, nullable=False),
        sa.Column("expires_at", UTC_TIME, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sluice_leases")
    op.drop_index("ix_sluice_batch_ranges_fingerprint", table_name="sluice_batch_ranges")
    op.drop_table("sluice_batch_ranges")
    op.drop_table("sluice_batches")
    op.drop_index("ix_sluice_checkpoints_pipeline_state", table_name="sluice_checkpoints")
    op.drop_table("sluice_checkpoints")
    op.drop_table("sluice_files")
