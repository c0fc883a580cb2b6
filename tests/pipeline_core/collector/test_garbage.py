"""``freeze_startup_objects``: start-up's garbage is collected, what is left is frozen. Run in
a child process: freezing is process-wide."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
import gc, weakref
from pipeline_core.collector import freeze_startup_objects

class Node:
    pass

kept = Node()
kept.me = kept  # a cycle still referenced
garbage = Node()
garbage.me = garbage  # a cycle no longer referenced: start-up's garbage
dead = weakref.ref(garbage)
del garbage
gc.disable()  # only freeze_startup_objects collects
freeze_startup_objects()
assert dead() is None, "start-up's garbage was frozen, not collected"
assert gc.get_freeze_count() > 0
assert not any(obj is kept for obj in gc.get_objects()), "what start-up left is frozen"
after = Node()
after.me = after
assert any(obj is after for obj in gc.get_objects()), "objects made after it are collected"
print("ok")
"""


def test_start_ups_garbage_is_collected_and_the_rest_frozen() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[3],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
