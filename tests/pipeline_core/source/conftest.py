"""Fixtures shared by the source tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipeline_core.source import FileWatcher


@pytest.fixture
def watchers() -> Iterator[list[FileWatcher]]:
    """Watchers a test makes (it appends them), closed after it."""
    made: list[FileWatcher] = []
    yield made
    for watcher in made:
        watcher.close()
