"""Checkpoints requested every few seconds, as scheduled DAG runs request them, while a
collector runs."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline_core.metastore import Metastore


class CheckpointRequests:
    """Requests a checkpoint of ``pipeline`` every ``every`` seconds on a thread (run ids
    ``<prefix>-<n>``); ``with`` stops it and re-raises what the thread raised."""

    def __init__(
        self, metastore: Metastore, pipeline: str, every: float, prefix: str = "run"
    ) -> None:
        self._metastore = metastore
        self._pipeline = pipeline
        self._every = every
        self._prefix = prefix
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checkpoint-requests", daemon=True)
        self.requested: list[int] = []
        """The ids of the checkpoints requested, in order."""
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            while not self._finished.wait(self._every):
                record = self._metastore.request_checkpoint(
                    self._pipeline, f"{self._prefix}-{len(self.requested)}"
                )
                self.requested.append(record.checkpoint_id)
        except BaseException as exc:
            self.error = exc

    def __enter__(self) -> CheckpointRequests:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.finish()

    def finish(self) -> None:
        """Stop requesting; raise what the thread raised."""
        self._finished.set()
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), "the checkpoint requests did not stop"
        if self.error is not None:
            error, self.error = self.error, None
            raise error
