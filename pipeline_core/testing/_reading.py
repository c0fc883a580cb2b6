"""Tailing files without a collector: a watcher and a reader of a folder's logs, and what the
reader published (lines, events, event ids, by file), to test reading in isolation."""

from __future__ import annotations

from pathlib import Path

from pipeline_core.config import (
    MultilineConfig,
    MultilinePreset,
    SourceConfig,
    SourceFormat,
    StartPosition,
)
from pipeline_core.sinks import DeliveryBatch
from pipeline_core.source import Chunk, FileWatcher, TimeSlicedReader

MiB = 1 << 20
"""A mebibyte: the reader's default chunk and longest line."""


class Received(list[Chunk]):
    """The chunks a reader published; ``publish`` is the reader's downstream."""

    def publish(self, chunk: Chunk) -> bool:
        self.append(chunk)
        return True

    def lines(self) -> list[bytes]:
        """Every line received, in order, without its newline."""
        return [line for chunk in self for line in bytes(chunk.data).splitlines()]

    def event_ids(self) -> list[str]:
        """``fingerprint:offset`` of every line received (the lake's event id)."""
        ids = []
        for chunk in self:
            offset = chunk.start
            for line in bytes(chunk.data).splitlines(keepends=True):
                ids.append(f"{chunk.fingerprint}:{offset}")
                offset += len(line)
        return ids

    def events(self) -> list[bytes]:
        """Every event received (a line, or a multiline source's event), in order, without
        its last newline: as the sinks deliver them."""
        return [event.line for event in DeliveryBatch(tuple(self), 0).events()]

    def by_file(self) -> list[list[bytes]]:
        """The lines received per fingerprint, sorted."""
        by_file: dict[str, list[bytes]] = {}
        for chunk in self:
            by_file.setdefault(chunk.fingerprint, []).extend(bytes(chunk.data).splitlines())
        return sorted(by_file.values())


def source_of(
    folder: Path,
    pattern: str = "access.log*",
    *,
    exclude: tuple[str, ...] = (),
    start_at: StartPosition = StartPosition.BEGINNING,
    multiline: MultilineConfig | None = None,
    fmt: SourceFormat = SourceFormat.RAW,
) -> SourceConfig:
    """A source of ``folder/pattern``, but ``folder/exclude`` (``raw`` unless ``fmt``)."""
    return SourceConfig(
        name="access",
        paths=[str(folder / pattern)],
        exclude=[str(folder / excluded) for excluded in exclude],
        format=fmt,
        start_at=start_at,
        multiline=multiline,
    )


def watch(
    folder: Path,
    pattern: str = "access.log*",
    signature_bytes: int = 1024,
    exclude: tuple[str, ...] = (),
) -> FileWatcher:
    """A watcher of ``folder/pattern`` (but ``exclude``) on host ``test-host``."""
    return FileWatcher([source_of(folder, pattern, exclude=exclude)], "test-host", signature_bytes)


def reader_of(watcher: FileWatcher, chunk_bytes: int = MiB) -> TimeSlicedReader:
    """A reader of ``watcher``'s files in chunks of ``chunk_bytes``, in slices of 10 s."""
    return TimeSlicedReader(watcher, chunk_bytes=chunk_bytes, max_line_bytes=MiB, slice_seconds=10)


def read_everything(watcher: FileWatcher, reader: TimeSlicedReader, into: Received) -> None:
    """Scan and read until a scan finds nothing more to read and asks for no other soon
    (:attr:`FileWatcher.settling`), as the collector does."""
    while True:
        watcher.scan()
        before = len(into)
        while not reader.read_slice(into.publish).caught_up:
            pass
        if len(into) == before and not watcher.settling:
            return


def tail_folder(
    folder: Path, exclude: tuple[str, ...] = ()
) -> tuple[FileWatcher, TimeSlicedReader, Received]:
    """A watcher of ``folder/access.log*`` (but ``exclude``) and its reader, having read
    everything there."""
    watcher = watch(folder, exclude=exclude)
    reader = reader_of(watcher)
    received = Received()
    read_everything(watcher, reader, received)
    return watcher, reader, received


def read_framed(
    log: Path, preset: MultilinePreset, fmt: SourceFormat = SourceFormat.RAW
) -> Received:
    """The chunks a reader publishes reading the whole of ``log`` (a file nothing writes any
    more) as a source of ``fmt`` with the multiline ``preset``: its events, framed."""
    source = source_of(log.parent, log.name, multiline=MultilineConfig(preset=preset), fmt=fmt)
    watcher = FileWatcher([source], "test-host", 1024)
    try:
        watcher.scan()
        reader, received = reader_of(watcher), Received()
        while not reader.read_slice(received.publish, flush=True).caught_up:
            pass
    finally:
        watcher.close()
    return received
