"""The descriptors this test process holds, as ``/proc/self/fd`` shows them."""

from __future__ import annotations

import os
from pathlib import Path


def open_under(folder: Path) -> int:
    """Descriptors this process holds on files under ``folder``."""
    prefix = str(folder.resolve()) + os.sep
    count = 0
    for entry in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{entry}").startswith(prefix):
                count += 1
        except OSError:
            continue
    return count
