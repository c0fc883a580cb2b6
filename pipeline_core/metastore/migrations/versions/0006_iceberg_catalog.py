"""The lake's Iceberg catalog tables (the layout of Iceberg's JDBC catalog, schema v1).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "iceberg_tables",
        sa.Column("catalog_name", sa.String(255), primary_key=True),
        sa.Column("table_namespace", sa.String(255), primary_key=True),
        sa.Column("table_name", sa.String(255), primary_key=True),
        sa.Column("metadata_location", sa.String(1000), nullable=True),
        sa.Column("previous_metadata_location", sa.String(1000), nullable=True),
        sa.Column("iceberg_type", sa.String(5), nullable=True),
    )
    op.create_table(
        "iceberg_namespace_properties",
        sa.Column("catalog_name", sa.String(255), primary_key=True),
        sa.Column("namespace", sa.String(255), primary_key=True),
        sa.Column("property_key", sa.String(255), primary_key=True),
        sa.Column("property_value", sa.String(1000), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("iceberg_namespace_properties")
    op.drop_table("iceberg_tables")
