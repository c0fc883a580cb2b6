"""The ``collector`` section: the tuning of the collector process that reads a pipeline."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from pipeline_core.config._base import HOST_PATTERN, HOST_RULE, _Strict, default_host


class CollectorConfig(_Strict):
    """Tuning of the collector. Defaults follow Logtail's."""

    host: str = Field(default_factory=default_host)
    """The name this collector stages its batches and holds its leases under, a folder of every
    batch it seals: a host name (``HOST_PATTERN``: letters, digits, ``.``, ``-``, ``_``,
    starting with a letter or digit). Default: this machine's name, with any other character
    made ``-``."""
    read_slice_ms: Annotated[int, Field(gt=0)] = 25
    read_chunk_bytes: Annotated[int, Field(ge=4096)] = 1024 * 1024
    max_line_bytes: Annotated[int, Field(ge=1024)] = 1024 * 1024
    """A longer line is skipped to its end without being held and staged as its first KiB
    only: it lands as one ``line_too_long`` reject (docs/architecture.md, "Over-long lines")."""
    signature_bytes: Annotated[int, Field(ge=16, le=65536)] = 1024
    ring_size: Annotated[int, Field(ge=2)] = 8
    """Slots of the ring between the send stage and the sink groups (a power of two). With
    several sink groups a slot keeps its chunk until it is reused (memory: up to
    ``ring_size`` x ``read_chunk_bytes``); with one, it is released once delivered."""
    process_queue_size: Annotated[int, Field(ge=1)] = 4
    """High watermark of the pipeline's process queue, in chunks (low: 2/3 of it). What the
    ring and both queues hold is what a checkpoint's barrier waits behind while the collector
    reads faster than its sinks write (``docs/architecture.md``, "Small in-flight budget")."""
    send_queue_size: Annotated[int, Field(ge=1)] = 4
    """High watermark of the pipeline's send queue, in chunks (low: 2/3 of it)."""
    acker_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    """A chunk not acked by every sink group within this time is replayed to the sinks other
    than the handoff (Storm's ``topology.message.timeout.secs``)."""
    max_pending_trees: Annotated[int, Field(ge=1)] = 128
    """Chunks in flight (read, not yet acked everywhere) before reading waits (Storm's max
    spout pending)."""
    max_send_bytes_per_s: Annotated[int, Field(gt=0)] | None = None
    """Most bytes per second the pipeline sends to its sinks; over it, the pipeline waits
    without holding up the others (null: no limit)."""
    acker_snapshot_s: Annotated[float, Field(gt=0)] = 5.0
    """How often the in-flight chunks are saved to the metastore besides every checkpoint."""
    progress_sample_s: Annotated[float, Field(gt=0)] = 30.0
    """How often the bytes and lines read and the bytes not read yet are sampled into the
    metastore (also when reading starts and at every seal), for the state page's charts; a
    pipeline that read nothing, with as much left to read, is sampled every 5 minutes. Samples
    are kept ``progress_retain_hours``."""
    progress_retain_hours: Annotated[float, Field(gt=0)] = 168.0
    """How long read-progress samples are kept (7 days): each new sample of a host removes
    that host's samples older than this, so the table holds at most this window of samples."""
    discovery_interval_s: Annotated[float, Field(gt=0)] = 1.0
    """How often the pipeline's paths are globbed for new, renamed and removed files (with
    ``file_events: inotify`` they are also looked for as soon as an event says so)."""
    file_events: Literal["inotify", "poll"] = "inotify"
    """How a caught-up collector learns that files changed. ``inotify``: the kernel's file
    events wake it (Linux; a line is read within milliseconds of its write); where inotify is
    missing or its limits are reached it polls, with one warning. ``poll``: it looks again
    every 0.2 s."""
    file_events_fallback_s: Annotated[float, Field(gt=0)] = 30.0
    """With ``inotify``: how long a caught-up collector waits for an event before looking at
    its files anyway, and how often a pipeline whose folders are all watched globs its paths
    (``discovery_interval_s``, if longer, still applies): what raises no event is seen within
    this (a file written after its deletion). A folder on a network or FUSE filesystem (NFS,
    SMB, sshfs, s3fs...), whose files other machines write without an event, is polled as
    with ``poll`` (one warning per filesystem). Each look reads every open file of every
    pipeline, and a glob costs a system call per file: looking at and globbing 100 pipelines of
    10 files every 10 s was a third of an idle collector's CPU (0.3 % of a core), every 1 s
    2.6 %. Filebeat's scanner looks every 10 s (``prospector.scanner.check_interval``),
    Fluent Bit's tail input globs every 60 s (``refresh_interval``)."""
    file_events_coalesce_ms: Annotated[int, Field(ge=0)] = 90
    """With ``inotify``: once an event woke the collector, later events are gathered for this
    long before they wake it again. A line written to a quiet file is read at once; a busy
    file is read every this many milliseconds, in larger chunks, instead of at every write.
    Each wake costs the same whatever it reads (a turn of the mailbox thread and one of each
    sink group's), so this sets a busy file's cost: at 1 MB/s written every 20 ms, 50 ms
    windows cost 2.2 % of a core and 75 ms 1.7 % (bench case 4; unpaced, 1,000 writes a second
    once cost more than half a core); 90 ms, 12 wake-ups a second instead of 14.5. A line's
    write -> its sinks p99 is about this long plus a millisecond or two (bench case 8), under
    the 100 ms target. Process-wide: the first pipeline's value."""
    max_open_files: Annotated[int, Field(ge=1)] = 512
    """Most descriptors the pipeline holds on its files. Beyond it the files read to their
    end and idle longest are closed first, and files found with unread bytes wait for a
    descriptor; a closed file is opened again by identity (device, inode, first bytes) and
    read on from its offset (docs/architecture.md, "Idle files"). Files rotated away and
    copytruncate copies are never closed, so may exceed it. Filebeat (``harvester_limit:
    0``) and Vector have no bound, Logstash's file input 4095; 512 is half the soft
    ``RLIMIT_NOFILE`` that systemd gives a service by default (1024), leaving room for the
    collector's other descriptors."""
    close_idle_after_s: Annotated[float, Field(gt=0)] = 300.0
    """A file neither written nor read for this long has its descriptor closed (it is opened
    again when it is written, grows or moves, and read on from its offset). Filebeat's
    ``close_inactive`` (5 minutes); Logstash's ``close_older`` is an hour, Vector keeps every
    file open."""
    forget_done_files_after_h: Annotated[float, Field(gt=0)] = 24.0
    """A file rotated away or deleted, read to its end and sealed, is forgotten this long
    after: no longer tracked, its row deleted from ``sluice_files`` at the next seal. Without
    it a host whose logs rotate to new names (``dateext``) keeps a row for every file it ever
    read. Only within this time is a file that turns up again on the same inode with the same
    first bytes taken for the one read before."""
    lease_seconds: Annotated[float, Field(gt=0)] = 60.0
    rotated_grace_s: Annotated[float, Field(ge=0)] = 5.0
    """While tailing, how long a file renamed away or deleted is still watched for appends
    after its end is reached (``--once`` runs finish it at its end)."""

    @field_validator("ring_size")
    @classmethod
    def _power_of_two(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError("must be a power of two")
        return value

    @field_validator("host")
    @classmethod
    def _host_name(cls, value: str) -> str:
        if not re.fullmatch(HOST_PATTERN, value):
            raise ValueError(f"not a host name ({HOST_RULE}), and it names a staging folder")
        return value
