"""A real Apache httpd (Debian's ``apache2``, ``scripts/rotation-tools.sh install``) serving
loopback from a folder of its own, writing access logs in the ``LogFormat`` strings it is
given. It runs in the foreground in a process group of its own, stopped when its ``with``
block ends, whatever happened."""

from __future__ import annotations

import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import find_programs, free_port, stop_group
from tests.support.rotation_tools import INSTALL_HINT

COMMON = r'"%h %l %u %t \"%r\" %>s %b"'
COMBINED = r'"%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\""'
"""The stock ``LogFormat`` strings of Debian's apache2.conf, as written there."""
_MODULES = "/usr/lib/apache2/modules"
START_SECONDS = 15.0


@dataclass(frozen=True)
class Apache:
    port: int
    """httpd's port on 127.0.0.1."""


@contextmanager
def running_apache(folder: Path, logs: Mapping[Path, str]) -> Iterator[Apache]:
    """httpd with a ``CustomLog`` per entry of ``logs`` (its file, its ``LogFormat`` string),
    serving a folder whose ``index.html`` holds ``ok\\n``, until the block ends.

    httpd's children serve as ``nobody``, which may not enter ``folder`` (a test's temporary
    folders are private): the documents are in a world-readable temporary folder of their own.
    """
    binary = find_programs(("apache2",), INSTALL_HINT)["apache2"]
    folder.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="sluice-httpd-") as shared:
        documents = Path(shared)
        documents.chmod(0o755)
        (documents / "index.html").write_text("ok\n")
        (documents / "index.html").chmod(0o644)
        with _httpd(binary, folder, documents, logs) as apache:
            yield apache


@contextmanager
def _httpd(
    binary: str, folder: Path, documents: Path, logs: Mapping[Path, str]
) -> Iterator[Apache]:
    for path in logs:
        path.parent.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = folder / "httpd.conf"
    custom_logs = "\n".join(f'CustomLog "{path}" {layout}' for path, layout in logs.items())
    conf.write_text(
        f"""ServerRoot "{folder}"
LoadModule mpm_event_module {_MODULES}/mod_mpm_event.so
LoadModule authz_core_module {_MODULES}/mod_authz_core.so
Listen 127.0.0.1:{port}
ServerName 127.0.0.1
PidFile "{folder}/httpd.pid"
ErrorLog "{folder}/error.log"
DocumentRoot "{documents}"
User nobody
Group nogroup
{custom_logs}
"""
    )
    command = [binary, "-f", str(conf), "-DFOREGROUND"]
    with open(folder / "httpd.stderr", "wb") as stderr:
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
        )
    try:
        _wait_listening(process, port, folder)
        yield Apache(port)
    finally:
        stop_group(process, signal.SIGTERM, START_SECONDS)


def _wait_listening(process: subprocess.Popen[bytes], port: int, folder: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            errors = [folder / "httpd.stderr", folder / "error.log"]
            text = "\n".join(p.read_text(errors="replace") for p in errors if p.exists())
            raise AssertionError(f"apache2 exited with {process.returncode}:\n{text}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                message = f"apache2 did not listen within {START_SECONDS:.0f} s"
                raise AssertionError(message) from None
            time.sleep(0.05)
