"""The real rotation tools (``scripts/rotation-tools.sh install``): Debian's nginx serving
loopback and writing its access log, wrk loading it, logrotate rotating the log in one of the
styles production uses.

nginx writes every request to two logs with the same line: ``access.log``, which logrotate
rotates and a collector reads, and ``all.log``, never rotated: the ground truth of what was
written, in another folder (the collector must not see it: a file beside ``access.log``
holding the same first bytes may be taken for a copy of it). Each line is a JSON object that
starts with the request's unique id (``{"id":"<32 hex digits>",...``), so a line in the lake
names the request it came from.

Every process started here runs in a process group of its own and is stopped, group and all,
when its ``with`` block ends, whatever happened.
"""

from __future__ import annotations

import grp
import gzip
import os
import pwd
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pipeline_core._compat import StrEnum
from tests.support.processes import find_programs, free_port, stop_group

INSTALL_HINT = "install them with: bash scripts/rotation-tools.sh install"
LOG_FORMAT = (
    '{"id":"$request_id","time":"$time_iso8601","msec":$msec,"status":$status,'
    '"request":"$request","bytes":$body_bytes_sent,"agent":"$http_user_agent"}'
)
"""nginx ``log_format`` (``escape=json``) of both logs: the id first, at a fixed place."""
ID_PREFIX = b'{"id":"'
ID_END = len(ID_PREFIX) + 32
"""A line's request id is ``line[len(ID_PREFIX):ID_END]``."""
START_SECONDS = 15.0
STOP_SECONDS = 15.0
_TEMP_PATHS = {
    "client_body_temp_path": "http_client_body",
    "proxy_temp_path": "http_proxy",
    "fastcgi_temp_path": "http_fastcgi",
    "uwsgi_temp_path": "http_uwsgi",
    "scgi_temp_path": "http_scgi",
}
"""nginx's temp path directives, by the module that has each."""


@dataclass(frozen=True)
class RotationTools:
    """The binaries of the tools; :meth:`find` fails the test when one is missing."""

    nginx: str
    logrotate: str
    wrk: str

    @classmethod
    def find(cls) -> RotationTools:
        return cls(**find_programs(("nginx", "logrotate", "wrk"), INSTALL_HINT))


# -- logrotate -------------------------------------------------------------------------------------


class RotationStyle(StrEnum):
    """How logrotate rotates ``access.log`` (each keeps 50 rotations: none is deleted)."""

    CREATE = "create"
    """Rename to ``access.log.1`` (older ones shift), create a new file, USR1 to nginx's
    master, which reopens its logs."""
    COPYTRUNCATE = "copytruncate"
    """Copy to ``access.log.1``, then truncate the original, which nginx goes on writing.
    What nginx writes between the copy and the truncation is in neither file."""
    COPYTRUNCATE_DELAYCOMPRESS = "copytruncate_delaycompress"
    """``copytruncate`` with ``compress`` and ``delaycompress``: ``access.log.1`` stays plain
    until the next rotation, which compresses it to ``access.log.2.gz``."""
    DATEEXT = "dateext"
    """``create`` and USR1 to ``access.log-<YYYYmmdd>-<epoch seconds>``: rotations must be a
    second apart (logrotate skips a rotation whose name is taken)."""

    @property
    def copies(self) -> bool:
        """Whether the style copies and truncates (and may so destroy lines)."""
        return self in (RotationStyle.COPYTRUNCATE, RotationStyle.COPYTRUNCATE_DELAYCOMPRESS)

    def directives(self, nginx_pid_file: Path | None) -> list[str]:
        """The style's logrotate directives; a ``create`` style signals nginx (its
        ``nginx_pid_file``) to reopen its logs, or nothing (None: a writer that reopens its log
        by itself, as Python's ``WatchedFileHandler``)."""
        reopen = (
            []
            if nginx_pid_file is None
            else ["postrotate", f'    kill -USR1 "$(cat {nginx_pid_file})"', "endscript"]
        )
        if self is RotationStyle.CREATE:
            return ["create", *reopen]
        if self is RotationStyle.COPYTRUNCATE:
            return ["copytruncate"]
        if self is RotationStyle.COPYTRUNCATE_DELAYCOMPRESS:
            return ["copytruncate", "compress", "delaycompress"]
        return ["create", "dateext", "dateformat -%Y%m%d-%s", *reopen]


class Logrotate:
    """``logrotate -f -s STATE CONF`` for one log in one style (CONF and STATE in ``folder``)."""

    def __init__(
        self,
        binary: str,
        folder: Path,
        log: Path,
        style: RotationStyle,
        nginx_pid_file: Path | None = None,
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._binary = binary
        self.conf = folder / f"{style.value}.conf"
        self.state = folder / "logrotate.state"
        body = ["rotate 50", "missingok", *style.directives(nginx_pid_file)]
        self.conf.write_text(f"{log} {{\n" + "".join(f"    {d}\n" for d in body) + "}\n")
        self.conf.chmod(0o644)  # logrotate ignores a config others may write
        self.rotations = 0

    def rotate(self) -> None:
        """Rotate now (``-f``); AssertionError with logrotate's output if it failed."""
        command = [self._binary, "-f", "-s", str(self.state), str(self.conf)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0 or "error" in done.stderr:
            raise AssertionError(
                f"logrotate failed ({done.returncode}):\n{done.stdout}{done.stderr}"
            )
        self.rotations += 1


# -- nginx and wrk ---------------------------------------------------------------------------------


@dataclass
class Nginx:
    """A running nginx master (and its worker), serving ``ok`` on ``127.0.0.1:port``."""

    process: subprocess.Popen[bytes]
    port: int
    pid_file: Path
    error_log: Path
    access_log: Path
    all_log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def get(self) -> None:
        """One request (logged like any other)."""
        with urllib.request.urlopen(self.url, timeout=10) as response:
            assert response.status == 200, response.status

    def logged(self) -> int:
        """About how many requests ``all.log`` holds (its lines have the same length but for
        a digit or two)."""
        try:
            with open(self.all_log, "rb") as handle:
                first = handle.readline()
                size = os.fstat(handle.fileno()).st_size
        except OSError:
            return 0
        return size // len(first) if first.endswith(b"\n") else 0

    def stop(self) -> None:
        """Graceful stop (SIGQUIT: requests in progress finish, logs are closed)."""
        returncode = stop_group(self.process, signal.SIGQUIT, STOP_SECONDS)
        if returncode != 0:
            raise AssertionError(f"nginx exited with {returncode}:\n{_tail(self.error_log)}")


def nginx_conf(
    folder: Path,
    access_log: Path,
    all_log: Path,
    port: int,
    binary: str,
    log_format: str = f"log_format sluice escape=json '{LOG_FORMAT}';",
) -> str:
    """A configuration with every path in ``folder`` but the two logs (written with the
    ``log_format`` directive named ``sluice``): one master, one worker, loopback only, every
    path answered ``ok``. As root, the worker runs as root too (it writes the logs)."""
    missing = set(re.findall(r"--without-(http_\w+)_module", _version(binary)))
    temp_paths = "".join(
        f"    {directive} {folder / 'temp' / module};\n"
        for directive, module in _TEMP_PATHS.items()
        if module not in missing
    )
    user = ""
    if os.geteuid() == 0:
        user = f"user {pwd.getpwuid(0).pw_name} {grp.getgrgid(os.getegid()).gr_name};\n"
    return (
        f"{user}worker_processes 1;\n"
        "daemon off;\n"
        f"pid {folder / 'nginx.pid'};\n"
        f"error_log {folder / 'error.log'} warn;\n"
        "events { worker_connections 1024; }\n"
        "http {\n"
        f"{temp_paths}"
        f"    {log_format}\n"
        f"    access_log {access_log} sluice;\n"
        f"    access_log {all_log} sluice;\n"
        "    keepalive_requests 100000000;\n"
        "    server {\n"
        f"        listen 127.0.0.1:{port};\n"
        '        location / { default_type text/plain; return 200 "ok\\n"; }\n'
        "    }\n"
        "}\n"
    )


def _version(binary: str) -> str:
    return subprocess.run(
        [binary, "-V"], capture_output=True, text=True, timeout=30, check=True
    ).stderr


@contextmanager
def running_nginx(
    binary: str, folder: Path, access_log: Path, all_log: Path, log_format: str | None = None
) -> Iterator[Nginx]:
    """nginx in the foreground (``daemon off``), configured by :func:`nginx_conf` (with the
    ``log_format`` directive, named ``sluice``, when given), until the block ends."""
    for needed in (folder / "temp", access_log.parent, all_log.parent):
        needed.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = folder / "nginx.conf"
    extra = {} if log_format is None else {"log_format": log_format}
    conf.write_text(nginx_conf(folder, access_log, all_log, port, binary, **extra))
    error_log = folder / "error.log"
    command = [binary, "-p", str(folder), "-c", str(conf), "-e", str(error_log)]
    with open(folder / "nginx.stderr", "wb") as stderr:
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
        )
    nginx = Nginx(process, port, folder / "nginx.pid", error_log, access_log, all_log)
    try:
        _wait_listening(nginx)
        yield nginx
    finally:
        stop_group(process, signal.SIGQUIT, STOP_SECONDS)


def _wait_listening(nginx: Nginx) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        if nginx.process.poll() is not None:
            raise AssertionError(
                f"nginx exited with {nginx.process.returncode}:\n{_tail(nginx.error_log)}"
            )
        try:
            socket.create_connection(("127.0.0.1", nginx.port), timeout=1).close()
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"nginx did not listen within {START_SECONDS:.0f} s:\n{_tail(nginx.error_log)}"
                ) from None
            time.sleep(0.05)
            continue
        if nginx.pid_file.exists():
            return


@dataclass
class Wrk:
    """A running wrk; :meth:`stop` ends it and reads its summary."""

    process: subprocess.Popen[bytes]
    output: Path

    def stop(self) -> int:
        """SIGINT (wrk prints its summary and exits); the requests wrk counted."""
        stop_group(self.process, signal.SIGINT, STOP_SECONDS)
        text = self.output.read_text(errors="replace")
        match = re.search(r"(\d+) requests in", text)
        if match is None:
            raise AssertionError(f"wrk printed no summary ({self.process.returncode}):\n{text}")
        return int(match.group(1))


@contextmanager
def running_wrk(
    binary: str, url: str, output: Path, threads: int = 2, connections: int = 16
) -> Iterator[Wrk]:
    """wrk loading ``url`` (keep-alive) until :meth:`Wrk.stop` or the end of the block."""
    command = [
        binary, f"-t{threads}", f"-c{connections}", "-d3600s", "--timeout", "10s", url,
    ]  # fmt: skip
    with open(output, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield Wrk(process, output)
    finally:
        stop_group(process, signal.SIGINT, STOP_SECONDS)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path.name})"


# -- the logs --------------------------------------------------------------------------------------


def request_id(line: bytes) -> bytes | None:
    """The request id a log line starts with (None for a line cut before its id's end)."""
    if len(line) < ID_END or not line.startswith(ID_PREFIX):
        return None
    return line[len(ID_PREFIX) : ID_END]


def read_log(path: Path) -> bytes:
    """A log file's bytes (a ``.gz`` one decompressed)."""
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as handle:
            return handle.read()
    return path.read_bytes()


def lines_by_id(data: bytes) -> dict[bytes, bytes]:
    """Every line of ``data`` by its request id (a last line without its newline included).

    Raises:
        AssertionError: a line has no id or an id is there twice.
    """
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    found: dict[bytes, bytes] = {}
    for line in lines:
        key = request_id(line)
        assert key is not None, f"a line without a request id: {line[:200]!r}"
        assert key not in found, f"request id {key.decode()} twice: {line[:200]!r}"
        found[key] = line
    return found
