"""The real syslog programs (``scripts/syslog-tools.sh install``): Debian's rsyslog receiving on
loopback and writing what it received into files, util-linux's ``logger`` sending to it.

rsyslogd runs in the foreground, unprivileged ports only (``imudp`` and ``imtcp`` on free
loopback ports, no ``/dev/log``), with a configuration of its own that writes every message
it receives into each file of :class:`Written`: the formats the syslog formats read, as
rsyslog's own templates write them, and the message as it came over the wire. What was sent
is known from the :class:`Sent` each ``logger`` call was made from; a message is found again
in a file by the token its text starts with.

Every process started here runs in a process group of its own and is stopped, group and all,
when its ``with`` block ends, whatever happened.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from pipeline_core._compat import StrEnum
from spark_jobs.formats._syslog import SEVERITY_KEYWORDS
from tests.support.processes import find_programs, free_port, stop_group

INSTALL_HINT = "install them with: bash scripts/syslog-tools.sh install"
START_SECONDS = 15.0
WRITE_SECONDS = 30.0
ENVIRONMENT = {"TZ": "UTC", "LC_ALL": "C.UTF-8"}
"""Both programs' environment: their local time is UTC (a BSD time states no zone)."""
FACILITIES = {
    **dict(enumerate(("kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news"))),
    **dict(enumerate(("uucp", "cron", "authpriv", "ftp"), start=8)),
    **{16 + n: f"local{n}" for n in range(8)},
}
"""``logger -p``'s facility names, by number (12 to 15 have none; ``kern`` is sent as
``user``)."""


class Written(StrEnum):
    """The files rsyslogd writes every message into, by what they hold."""

    RFC5424 = "rfc5424.log"
    """``RSYSLOG_SyslogProtocol23Format``: RFC 5424."""
    TRADITIONAL = "traditional.log"
    """``RSYSLOG_TraditionalFileFormat``: ``Mmm dd HH:MM:SS host tag: msg``."""
    FILE_FORMAT = "file-format.log"
    """``RSYSLOG_FileFormat``: an RFC 3339 time, then as the traditional format."""
    WIRE_RFC5424 = "wire-rfc5424.log"
    """The RFC 5424 messages as they came (``%rawmsg%``)."""
    WIRE_RFC3164 = "wire-rfc3164.log"
    """The BSD messages as they came (``%rawmsg%``), with their ``<PRI>``."""


@dataclass(frozen=True)
class SyslogTools:
    """The binaries; :meth:`find` fails the test when one is missing."""

    rsyslogd: str
    logger: str

    @classmethod
    def find(cls) -> SyslogTools:
        return cls(**find_programs(("rsyslogd", "logger"), INSTALL_HINT))


@dataclass(frozen=True)
class Sent:
    """One message for ``logger``: what it is told to send, and so what the files should
    say of it."""

    token: str
    """The text's first word, unique among the messages sent: how a line is matched to it."""
    text: str
    """The message after the token and a space."""
    rfc5424: bool
    tcp: bool
    facility: int
    severity: int
    tag: str
    pid: str | None = None
    msg_id: str | None = None
    structured_data: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    """Elements: an SD-ID and its parameters' values as they are meant (``logger`` is given
    them escaped)."""
    nil_time_and_host: bool = False
    """RFC 5424 with ``notime,nohost,notq``: ``-`` for the time and the host, no
    ``timeQuality``."""
    bom: bool = False
    """The message starts with a UTF-8 byte order mark, as RFC 5424 marks a UTF-8 one."""

    @property
    def message(self) -> str:
        return f"{self.token} {self.text}"

    def command(self, binary: str, udp_port: int, tcp_port: int) -> list[str]:
        """The ``logger`` command that sends it to ``127.0.0.1``."""
        port = tcp_port if self.tcp else udp_port
        command = [binary, "--server", "127.0.0.1", "--port", str(port)]
        command.append("--tcp" if self.tcp else "--udp")
        if self.rfc5424:
            command.append(
                "--rfc5424=notime,nohost,notq" if self.nil_time_and_host else "--rfc5424"
            )
        else:
            command.append("--rfc3164")
        priority = f"{FACILITIES[self.facility]}.{SEVERITY_KEYWORDS[self.severity]}"
        command += ["-p", priority, "-t", self.tag]
        if self.pid is not None:
            command.append(f"--id={self.pid}")
        if self.msg_id is not None:
            command += ["--msgid", self.msg_id]
        for sd_id, params in self.structured_data:
            command += ["--sd-id", sd_id]
            for name, value in params:
                command += ["--sd-param", f'{name}="{sd_escaped(value)}"']
        return [*command, "--", ("\ufeff" if self.bom else "") + self.message]


def sd_escaped(value: str) -> str:
    """A PARAM-VALUE as RFC 5424 writes it: ``"``, ``\\`` and ``]`` escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


@dataclass
class Rsyslog:
    """A running rsyslogd writing every message it receives into ``folder``'s files."""

    process: subprocess.Popen[bytes]
    folder: Path
    udp_port: int
    tcp_port: int
    logger: str
    sent: list[Sent] = field(default_factory=list)
    sent_from: datetime | None = None
    sent_until: datetime | None = None

    def path(self, written: Written) -> Path:
        return self.folder / written.value

    def send(self, message: Sent) -> None:
        """Send ``message`` with ``logger`` (AssertionError with its output if it failed)."""
        now = datetime.now(timezone.utc)
        self.sent_from = self.sent_from or now
        done = subprocess.run(
            message.command(self.logger, self.udp_port, self.tcp_port),
            capture_output=True,
            env={**os.environ, **ENVIRONMENT},
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"logger failed ({done.returncode}): {done.stderr!r}")
        self.sent.append(message)
        self.sent_until = datetime.now(timezone.utc)

    def wait_written(self) -> None:
        """Until every file holds a line for every message sent (one a line: BSD or RFC 5424
        ones in their wire file only)."""
        wire = {
            Written.WIRE_RFC5424: sum(m.rfc5424 for m in self.sent),
            Written.WIRE_RFC3164: sum(not m.rfc5424 for m in self.sent),
        }
        deadline = time.monotonic() + WRITE_SECONDS
        while True:
            counts = {w: _lines(self.path(w)) for w in Written}
            if all(counts[w] >= wire.get(w, len(self.sent)) for w in Written):
                return
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"rsyslogd wrote {counts} lines for {len(self.sent)} messages "
                    f"(exit {self.process.returncode}):\n{_tail(self.folder / 'rsyslogd.out')}"
                )
            time.sleep(0.05)


def rsyslog_conf(folder: Path, udp_port: int, tcp_port: int) -> str:
    """A configuration with every path in ``folder``: loopback inputs, one file per
    :class:`Written`."""
    files = "".join(
        f'action(type="omfile" file="{folder / w.value}" template="{template}")\n'
        for w, template in (
            (Written.RFC5424, "RSYSLOG_SyslogProtocol23Format"),
            (Written.TRADITIONAL, "RSYSLOG_TraditionalFileFormat"),
            (Written.FILE_FORMAT, "RSYSLOG_FileFormat"),
        )
    )
    return (
        f'global(workDirectory="{folder}")\n'
        'module(load="imudp")\n'
        'module(load="imtcp")\n'
        f'input(type="imudp" address="127.0.0.1" port="{udp_port}")\n'
        f'input(type="imtcp" address="127.0.0.1" port="{tcp_port}")\n'
        'template(name="wire" type="string" string="%rawmsg%\\n")\n'
        f"{files}"
        'if $protocol-version == "1" then {\n'
        f'    action(type="omfile" file="{folder / Written.WIRE_RFC5424.value}" template="wire")\n'
        "} else {\n"
        f'    action(type="omfile" file="{folder / Written.WIRE_RFC3164.value}" template="wire")\n'
        "}\n"
    )


@contextmanager
def running_rsyslog(tools: SyslogTools, folder: Path) -> Iterator[Rsyslog]:
    """rsyslogd in the foreground (``-n``), configured by :func:`rsyslog_conf`, until the
    block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    udp_port, tcp_port = free_port(), free_port()
    conf = folder / "rsyslog.conf"
    conf.write_text(rsyslog_conf(folder, udp_port, tcp_port))
    command = [tools.rsyslogd, "-n", "-f", str(conf), "-i", str(folder / "rsyslogd.pid")]
    with open(folder / "rsyslogd.out", "wb") as output:
        process = subprocess.Popen(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, **ENVIRONMENT},
            start_new_session=True,
        )
    rsyslog = Rsyslog(process, folder, udp_port, tcp_port, tools.logger)
    try:
        _wait_listening(rsyslog)
        yield rsyslog
    finally:
        stop_group(process, signal.SIGTERM, START_SECONDS)


def _wait_listening(rsyslog: Rsyslog) -> None:
    """Until rsyslogd accepts TCP connections and has bound its UDP port (a datagram sent
    before would be lost)."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        if rsyslog.process.poll() is not None:
            raise AssertionError(
                f"rsyslogd exited with {rsyslog.process.returncode}:\n"
                f"{_tail(rsyslog.folder / 'rsyslogd.out')}"
            )
        try:
            socket.create_connection(("127.0.0.1", rsyslog.tcp_port), timeout=1).close()
            if _udp_bound(rsyslog.udp_port):
                return
            raise OSError("the UDP port is not bound yet")
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"rsyslogd did not listen within {START_SECONDS:.0f} s:\n"
                    f"{_tail(rsyslog.folder / 'rsyslogd.out')}"
                ) from None
            time.sleep(0.05)


def _udp_bound(port: int) -> bool:
    """Whether something has bound UDP ``port`` on 127.0.0.1 (binding it fails)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path.name})"
