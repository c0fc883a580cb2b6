"""A batch's event count in a column of its own, instead of a copy of its manifest.

The metastore kept each batch's whole manifest as JSON (every part's segments and multiline
event spans: 3.4 MB for a batch of 272 MB of tracebacks), written in the seal transaction and
parsed by every read of the batches, for one number: the events it holds. The staging folder's
``_manifest.json`` stays the one list of a batch's parts.

Upgrading counts each recorded manifest's events; a manifest that cannot be read counts its
batch's lines (what the commit step took it for). Downgrading leaves the manifests empty (``{}``),
which the commit step of before this migration reads as its lines.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from pipeline_core.staging_contract import Manifest, ManifestError

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ROWS_PER_READ = 100

batches = sa.table(
    "sluice_batches",
    sa.column("id", sa.Integer),
    sa.column("line_count", sa.BigInteger),
    sa.column("manifest", sa.Text),
    sa.column("event_count", sa.BigInteger),
)


def upgrade() -> None:
    with op.batch_alter_table("sluice_batches") as batch:
        batch.add_column(sa.Column("event_count", sa.BigInteger, nullable=True))
    connection = op.get_bind()
    last = 0
    while True:
        rows = connection.execute(
            sa.select(batches.c.id, batches.c.line_count, batches.c.manifest)
            .where(batches.c.id > last)
            .order_by(batches.c.id)
            .limit(ROWS_PER_READ)
        ).all()
        if not rows:
            break
        for row in rows:
            connection.execute(
                batches.update()
                .where(batches.c.id == row.id)
                .values(event_count=_events(row.manifest, row.line_count))
            )
        last = rows[-1].id
    with op.batch_alter_table("sluice_batches") as batch:
        batch.alter_column("event_count", existing_type=sa.BigInteger, nullable=False)
        batch.drop_column("manifest")


def downgrade() -> None:
    with op.batch_alter_table("sluice_batches") as batch:
        batch.add_column(sa.Column("manifest", sa.Text, nullable=False, server_default="{}"))
    with op.batch_alter_table("sluice_batches") as batch:
        batch.alter_column("manifest", existing_type=sa.Text, server_default=None)
        batch.drop_column("event_count")


def _events(manifest: str, lines: int) -> int:
    try:
        return Manifest.from_json(json.loads(manifest)).event_count
    except (ValueError, ManifestError):  # json.JSONDecodeError is a ValueError
        return lines
