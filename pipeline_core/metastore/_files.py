"""FileRepository: the files each collector host tracks, at the offsets sealed batches cover.

A file's path is stored as ``pipeline_core._file_names.stored_path`` gives it (any bytes: a
name that is not UTF-8 in an escaped form) and read back as ``restored_path`` gives it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection

from pipeline_core._file_names import restored_path, stored_path
from pipeline_core.metastore import _schema as t
from pipeline_core.metastore._values import as_utc, record_of_row, row_of_record
from pipeline_core.source import FileRecord, FileState


class FileRepository:
    """The rows of ``sluice_files`` on one connection (the caller's transaction). A host's
    files are saved in the seal transaction of each of its batches."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def of_host(self, pipeline: str, host: str) -> list[FileRecord]:
        """The files ``host`` tracks for ``pipeline``, in the order it first saw them."""
        return self.by_host(pipeline, host).get(host, [])

    def by_host(self, pipeline: str, host: str | None = None) -> dict[str, list[FileRecord]]:
        """The files of ``pipeline`` per host (only ``host``'s when given), hosts in order."""
        c = t.files.c
        query = sa.select(t.files).where(c.pipeline == pipeline)
        if host is not None:
            query = query.where(c.host == host)
        found: dict[str, list[FileRecord]] = {}
        for row in self._connection.execute(query.order_by(c.host, c.id)):
            found.setdefault(row.host, []).append(
                record_of_row(
                    FileRecord,
                    row,
                    path=restored_path(row.path),
                    state=FileState(row.state),
                    updated_at=as_utc(row.updated_at),
                )
            )
        return found

    def save(self, pipeline: str, host: str, files: Iterable[FileRecord], now: datetime) -> None:
        """Insert the files ``host`` sees for the first time, update the others."""
        c = t.files.c
        known = {
            row.fingerprint: row.id
            for row in self._connection.execute(
                sa.select(c.id, c.fingerprint).where(c.pipeline == pipeline, c.host == host)
            )
        }
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        for record in files:
            values = row_of_record(
                record,
                without=["fingerprint"],
                path=stored_path(record.path),
                state=record.state.value,
                updated_at=now,
            )
            if record.fingerprint in known:
                updates.append({"row_id": known[record.fingerprint], **values})
            else:
                identity = {"pipeline": pipeline, "host": host, "fingerprint": record.fingerprint}
                inserts.append({**identity, "first_seen_at": now, **values})
        if inserts:
            self._connection.execute(t.files.insert(), inserts)
        if updates:
            self._connection.execute(
                t.files.update().where(c.id == sa.bindparam("row_id")), updates
            )

    def forget(self, pipeline: str, host: str, fingerprints: Collection[str]) -> None:
        """Delete the rows of files ``host`` no longer tracks (gone from its disk, every byte
        sealed: ``FileWatcher.forget_done``)."""
        if not fingerprints:
            return
        c = t.files.c
        self._connection.execute(
            t.files.delete().where(
                c.pipeline == pipeline, c.host == host, c.fingerprint.in_(list(fingerprints))
            )
        )
