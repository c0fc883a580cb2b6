"""What the ``sluice`` command's exit status says."""

from __future__ import annotations

from enum import IntEnum

from pipeline_core.errors import (
    CollectorBusyError,
    ConfigError,
    EventDeliveryException,
    MetastoreError,
    MetastoreNotReadyError,
    SluiceError,
)


class ExitCode(IntEnum):
    """The exit status of a ``sluice`` command: scripts tell the kinds of failure apart."""

    OK = 0
    FAILED = 1
    """The command ran and its work failed (a landing, a seal, a checkpoint in the wrong
    state), or something unexpected happened."""
    INVALID = 2
    """The config or the command line is wrong: fix the file or the arguments."""
    UNREACHABLE = 3
    """The metastore, the lake catalog or a sink cannot be reached: fix the environment."""
    NOT_MIGRATED = 4
    """The metastore does not exist or is not at the newest migration: ``sluice db upgrade``."""
    BUSY = 5
    """Another live collector holds the pipeline's lease on this host: try again later."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT): what was safe to keep was kept, and the message says what was not."""


def exit_code_of(error: SluiceError) -> ExitCode:
    """The exit status for a failure of kind ``error``."""
    if isinstance(error, ConfigError):
        return ExitCode.INVALID
    if isinstance(error, MetastoreNotReadyError):
        return ExitCode.NOT_MIGRATED
    if isinstance(error, (MetastoreError, EventDeliveryException)):
        return ExitCode.UNREACHABLE
    if isinstance(error, CollectorBusyError):
        return ExitCode.BUSY
    return ExitCode.FAILED
