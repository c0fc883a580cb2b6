"""Whether a storage location can be written: a probe object written, read back and deleted."""

from __future__ import annotations

import contextlib
import os
import uuid

from pipeline_core.errors import StorageError
from pipeline_core.storage._location import StorageLocation

PROBE_PREFIX = ".sluice-write-test-"


def probe_writable(location: StorageLocation) -> None:
    """Write a small probe object (or file) at ``location``, read it back and delete it;
    a local folder is created first when missing. Changes nothing else.

    Raises:
        StorageError: the location cannot be reached, written, read or cleaned up (the
            message names the location and the step that failed; the cause is chained).
    """
    filesystem, root = location.filesystem()
    probe = f"{root}/{PROBE_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    payload = b"sluice write probe\n"
    step = "create"
    try:
        if location.is_local:
            filesystem.create_dir(root, recursive=True)
        step = "write"
        with filesystem.open_output_stream(probe) as stream:
            stream.write(payload)
        step = "read back"
        with filesystem.open_input_stream(probe) as stream:
            echoed = bytes(stream.read())
        step = "delete"
        filesystem.delete_file(probe)
    except (OSError, ValueError) as exc:
        if step == "read back":
            with contextlib.suppress(OSError, ValueError):
                filesystem.delete_file(probe)
        raise StorageError(f"cannot {step} a probe object in {location}: {_one_line(exc)}") from exc
    if echoed != payload:
        raise StorageError(
            f"a probe object read back from {location} differs from what was written"
        )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
