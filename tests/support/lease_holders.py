"""Lease holders in real processes: a child Python process that names itself as a
:class:`~pipeline_core.metastore.LeaseHolder` (and, given a metastore, takes a lease under that
name), then sleeps until it is killed."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING

from pipeline_core.metastore import LeaseHolder, open_view

if TYPE_CHECKING:
    from pipeline_core.operations import PipelineOperations

_CHILD = """
import sys, time, uuid
from pipeline_core.metastore import LeaseHolder, Metastore
host, url, pipeline, ttl = sys.argv[1:5]
holder = LeaseHolder.of_this_process(host, uuid.uuid4().hex[:8]).format()
if url != "-":
    store = Metastore.open(url)
    taken = store.acquire_lease(pipeline, host, holder, float(ttl))
    store.close()
    if not taken:
        print("refused", flush=True)
        sys.exit(3)
print(holder, flush=True)
time.sleep(600)
"""


class HolderProcess:
    """A child process holding a lease (or, without ``metastore_url``, only naming itself).

    ``with HolderProcess(...) as child``: started, its holder string in ``child.holder``; the
    block's end kills it if it still runs. :meth:`kill` is ``kill -9`` (the child is reaped).
    """

    def __init__(
        self,
        host: str,
        metastore_url: str | None = None,
        pipeline: str = "web_access",
        ttl: float = 60.0,
        timeout: float = 60.0,
    ) -> None:
        self._args = [host, metastore_url or "-", pipeline, str(ttl)]
        self._timeout = timeout
        self._process: subprocess.Popen[str] | None = None
        self.holder = ""

    @property
    def pid(self) -> int:
        assert self._process is not None, "not started"
        return self._process.pid

    @property
    def parsed(self) -> LeaseHolder:
        parsed = LeaseHolder.parse(self.holder)
        assert parsed is not None, self.holder
        return parsed

    def __enter__(self) -> HolderProcess:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, *self._args],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=self._timeout)
        line = self._process.stdout.readline().strip() if ready else ""
        if not line or line == "refused":
            self.kill()
            raise AssertionError(f"the holder process did not take the lease: {line!r}")
        self.holder = line
        return self

    def kill(self) -> None:
        """SIGKILL the child and reap it."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
        if self._process is not None:
            self._process.wait(timeout=self._timeout)

    def kill_leaving_a_zombie(self) -> None:
        """SIGKILL the child and wait until it has died, without reaping it."""
        assert self._process is not None
        self._process.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + self._timeout
        while _state(self.pid) not in ("Z", "X", None):
            assert time.monotonic() < deadline, "the child did not die"
            time.sleep(0.01)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.kill()
        if self._process is not None and self._process.stdout is not None:
            self._process.stdout.close()


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()[0]


def waiting_for_a_killed_host(
    operations: PipelineOperations, metastore_url: str, lease_seconds: float
) -> tuple[int, float]:
    """A checkpoint waiting for this host and for ``host-b``, whose collector (a holder of a
    ``lease_seconds`` lease, taken once and never renewed) is killed before it seals; this host
    has sealed its batch.

    Returns the checkpoint's id and the monotonic time host-b's lease lapses at: the lease, not
    the kill, is the measure (it was taken before this host collected, which takes longer on a
    busy machine).
    """
    with (
        HolderProcess("test-host", metastore_url, ttl=60) as previous,
        HolderProcess("host-b", metastore_url, ttl=lease_seconds) as host_b,
    ):
        requested = operations.request_checkpoint(run_id="run-1")  # waits for both hosts
        previous.kill()  # this machine's collector: the next one takes its lease over at once
        operations.collect_once()  # this host's batch; host-b still owes one
        host_b.kill()
    with open_view(metastore_url) as view:
        assert view is not None
        [lease] = [lease for lease in view.leases(operations.config.name) if lease.host == "host-b"]
    left = (lease.expires_at - datetime.now(timezone.utc)).total_seconds()
    return requested.checkpoint_id, time.monotonic() + left
