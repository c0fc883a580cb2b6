"""Who holds a collector lease, written so that the machine it ran on can prove it dead.

A lease names its holder in ``sluice_leases.holder``::

    web-1:48213:9f2c1a7e boot=2dc29ef6…4b06bb519 start=53127 pidns=4026531836 machine=5b0e6a3c…

the configured ``collector.host``, the process id and a random nonce (several collectors may
share a process), then the process's identity on its machine: the kernel's boot id
(``/proc/sys/kernel/random/boot_id``), the process's start time in clock ticks since boot
(field 22 of ``/proc/<pid>/stat``), its pid namespace and a keyed hash of ``/etc/machine-id``
(the id itself is confidential). A field that could not be read is ``-``.

A collector killed with ``kill -9`` cannot release its lease. A collector restarted on the same
machine reads its predecessor's identity and sees it is gone: no process has that pid, the pid
now names a process started at another time (pid reuse), or the holder ran before the machine
last booted. It may then take the lease over at once rather than wait for it to expire. From
another machine, another pid namespace (a container), or for a holder in the older
``host:pid:nonce`` form, nothing can be proved: such a holder counts as alive until its lease
expires.

Only Linux's ``/proc`` is read; elsewhere every holder is :attr:`HolderLiveness.UNKNOWN`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

MAX_HOLDER_CHARS = 255
"""The width of ``sluice_leases.holder``; :meth:`LeaseHolder.format` shortens the host to fit."""

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_MACHINE_IDS = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))
_MACHINE_KEY = b"sluice collector lease holder"
_NONE = "-"
_FIELDS = ("boot", "start", "pidns", "machine")
_MAX_PID = 2**22  # Linux's PID_MAX_LIMIT


class HolderLiveness(Enum):
    """What this process can tell about a lease holder (see :meth:`LeaseHolder.liveness`)."""

    ALIVE = "its process is running"
    EXITED = "its process has exited"
    PID_REUSED = "its process id now names a process started later"
    EARLIER_BOOT = "it ran before this machine last booted"
    UNKNOWN = "it cannot be seen from here (another machine or container, or an older holder)"

    @property
    def is_dead(self) -> bool:
        """Whether the holder is proved dead: its lease may be taken over before it expires."""
        return self in (
            HolderLiveness.EXITED,
            HolderLiveness.PID_REUSED,
            HolderLiveness.EARLIER_BOOT,
        )


@dataclass(frozen=True)
class ProcessIdentity:
    """A process, named so that its machine can tell later whether it still runs.

    ``pid`` alone is not enough: pids are reused, and they restart at every boot and in every
    pid namespace. ``None`` stands for what could not be read (no ``/proc``, no machine id).
    """

    pid: int
    start_ticks: int | None
    """Field 22 of ``/proc/<pid>/stat``: when the process started, in clock ticks since boot."""
    boot_id: str | None
    """The kernel's boot id, without dashes: it changes at every boot."""
    pid_namespace: str | None
    """The inode of ``/proc/<pid>/ns/pid``: pids are only comparable within one namespace."""
    machine: str | None
    """A keyed hash of the machine id (16 hex digits): tells an earlier boot of this machine
    from another machine."""

    @classmethod
    def current(cls) -> ProcessIdentity:
        """This process (read from ``/proc`` on every call, so a forked child is itself)."""
        pid = os.getpid()
        stat = _stat(pid)
        return cls(
            pid=pid,
            start_ticks=stat[1] if stat else None,
            boot_id=_boot_id(),
            pid_namespace=_pid_namespace(),
            machine=_machine(),
        )

    def liveness(self) -> HolderLiveness:
        """Whether this process still runs, as far as the calling process can tell.

        Dead is only ever answered with proof: the same machine and an older boot, or the same
        boot and pid namespace and no such process (or a zombie), or a process under that pid
        that started at another time.
        """
        here = ProcessIdentity.current()
        if self.boot_id is None or here.boot_id is None:
            return HolderLiveness.UNKNOWN
        if self.boot_id != here.boot_id:
            same_machine = self.machine is not None and self.machine == here.machine
            return HolderLiveness.EARLIER_BOOT if same_machine else HolderLiveness.UNKNOWN
        if self.pid_namespace is None or self.pid_namespace != here.pid_namespace:
            return HolderLiveness.UNKNOWN
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return HolderLiveness.EXITED
        except PermissionError:
            pass  # it exists, owned by someone else
        stat = _stat(self.pid)
        if stat is None:  # exited meanwhile, or hidden (hidepid): not a proof either way
            return HolderLiveness.UNKNOWN
        state, start_ticks = stat
        if self.start_ticks is None:
            return HolderLiveness.UNKNOWN
        if start_ticks != self.start_ticks:
            return HolderLiveness.PID_REUSED
        return HolderLiveness.EXITED if state in ("Z", "X") else HolderLiveness.ALIVE


@dataclass(frozen=True)
class LeaseHolder:
    """The holder of a collector lease: a collector in a process (see the module doc).

    ``format()`` gives the string stored in ``sluice_leases.holder``; ``parse()`` reads it back.
    """

    host: str
    """The collector's ``collector.host`` (informative: the lease's key holds it too)."""
    process: ProcessIdentity
    nonce: str
    """Tells apart collectors of one process; letters and digits."""

    @classmethod
    def of_this_process(cls, host: str, nonce: str) -> LeaseHolder:
        return cls(host, ProcessIdentity.current(), nonce)

    def format(self) -> str:
        """The stored form, at most ``MAX_HOLDER_CHARS`` long (a long host is shortened)."""
        p = self.process
        values = (p.boot_id, p.start_ticks, p.pid_namespace, p.machine)
        tail = f":{p.pid}:{self.nonce} " + " ".join(
            f"{key}={_NONE if value is None else value}"
            for key, value in zip(_FIELDS, values, strict=True)
        )
        return self.host[: MAX_HOLDER_CHARS - len(tail)] + tail

    @classmethod
    def parse(cls, text: str) -> LeaseHolder | None:
        """The holder ``text`` names, or None for a string in another form (the older
        ``host:pid:nonce``, a name given by hand)."""
        head, *fields = text.rsplit(" ", len(_FIELDS))
        host, _, rest = head.rpartition(":")
        host, _, pid = host.rpartition(":")
        if not host or not pid.isdigit() or not 0 < int(pid) <= _MAX_PID or not rest.isalnum():
            return None
        values: list[str | None] = []
        for key, field in zip(_FIELDS, fields, strict=False):
            name, _, value = field.partition("=")
            if name != key or not value:
                return None
            values.append(None if value == _NONE else value)
        if len(values) != len(_FIELDS):
            return None
        boot_id, start, pid_namespace, machine = values
        if start is not None and not start.isdigit():
            return None
        process = ProcessIdentity(
            int(pid), None if start is None else int(start), boot_id, pid_namespace, machine
        )
        return cls(host, process, rest)

    def liveness(self) -> HolderLiveness:
        """See :meth:`ProcessIdentity.liveness`."""
        return self.process.liveness()

    def is_dead_on_this_host(self) -> bool:
        """Whether this process can prove the holder dead (see :class:`HolderLiveness`)."""
        return self.liveness().is_dead


def holder_liveness(holder: str) -> HolderLiveness:
    """The liveness of a stored holder string; UNKNOWN when it is in no form
    :meth:`LeaseHolder.parse` reads."""
    parsed = LeaseHolder.parse(holder)
    return HolderLiveness.UNKNOWN if parsed is None else parsed.liveness()


def _stat(pid: int) -> tuple[str, int] | None:
    """State (field 3) and start time (field 22) of ``/proc/<pid>/stat``, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 is the command in parentheses, which may hold spaces and parentheses itself.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def _boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text().strip().replace("-", "") or None
    except OSError:
        return None


def _pid_namespace() -> str | None:
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return None
    return link.partition("[")[2].rstrip("]") or None


def _machine() -> str | None:
    for path in _MACHINE_IDS:
        try:
            machine_id = path.read_text().strip()
        except OSError:
            continue
        if machine_id:
            digest = hmac.new(machine_id.encode(), _MACHINE_KEY, hashlib.sha256)
            return digest.hexdigest()[:16]
    return None
