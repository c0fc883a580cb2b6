"""Files with hostile names: any byte string names a file, and Sluice must take every one."""

from __future__ import annotations

import os
from pathlib import Path

NOT_UTF8 = b"bad\xff.log"
"""A name that is not valid UTF-8 (Python holds it as ``"bad\\udcff.log"``)."""
NOT_UTF8_SHOWN = "bad\\xff.log"
"""How :data:`NOT_UTF8` is shown (``pipeline_core._file_names.shown_path``)."""
FORGING = b"forged\n12:00:00 ERROR \x1b[2Jsluice.log"
"""Valid UTF-8 whose newline and escape sequence would forge a line on a terminal or in a log."""
FORGING_SHOWN = "forged\\x0a12:00:00 ERROR \\x1b[2Jsluice.log"


def named(folder: Path, name: bytes) -> Path:
    """The path of the file called ``name`` (any bytes but ``/`` and NUL) in ``folder``."""
    return folder / os.fsdecode(name)
