"""A service's log written by Python's ``logging`` in this process: a ``FileHandler`` writes
the file, a second handler records each event exactly as it was formatted (the ground truth
of what was written, event by event)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class Written(logging.Handler):
    """The events a logger wrote, as its file handler formatted them (newline-free ends)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(FORMAT))
        self.events: list[bytes] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append(self.format(record).encode())


class ServiceLog:
    """A logger writing ``folder/app.log`` through a real ``logging.FileHandler``."""

    def __init__(
        self,
        folder: Path,
        name: str = "app.log",
        handler: type[logging.FileHandler] = logging.FileHandler,
    ) -> None:
        self.path = folder / name
        self.logger = logging.getLogger(f"service.{id(self)}")
        self.logger.propagate = False
        self.logger.setLevel(logging.INFO)
        self.file = handler(self.path)
        self.file.setFormatter(logging.Formatter(FORMAT))
        self.written = Written()
        self.logger.addHandler(self.file)
        self.logger.addHandler(self.written)

    def info(self, message: str) -> None:
        self.logger.info(message)

    def failure(self, message: str) -> None:
        """``logger.exception`` of a chained exception: a multiline event."""
        settings: dict[str, str] = {}
        try:
            try:
                settings["missing"]
            except KeyError as exc:
                raise ValueError(f"while {message}") from exc
        except ValueError:
            self.logger.exception(message)

    def quiet_for(self, seconds: float) -> None:
        """As if nothing was written for ``seconds``: the file's modification time set back."""
        stamp = time.time() - seconds
        os.utime(self.path, (stamp, stamp))

    def close(self) -> None:
        self.logger.removeHandler(self.file)
        self.logger.removeHandler(self.written)
        self.file.close()
