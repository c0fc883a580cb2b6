"""The tracked files' index by first bytes, kept from scan to scan."""

from __future__ import annotations

from pipeline_core.source import FileState, Signature, TrackedFile
from pipeline_core.source._file_registry import KEY_BYTES, FileRegistry

LOG_LINE = b"2026-11-30 10:00:00,000 INFO started\n"
OTHER_LINE = b"10.0.0.1 - - [30/Nov/2026:10:00:00 +0000] GET /\n"


def tracked(number: int, head: bytes = b"") -> TrackedFile:
    return TrackedFile(
        source="access",
        fingerprint=f"{number:016x}",
        path=f"/logs/app-{number}.log",
        dev=1,
        ino=number,
        signature=Signature(0, 0),
        sealed_offset=0,
        state=FileState.LIVE,
        head=head,
    )


def test_a_file_added_after_the_index_was_made_is_found_by_its_first_bytes() -> None:
    registry = FileRegistry([tracked(1, LOG_LINE)])
    assert registry.near(OTHER_LINE) == []  # the index is made here
    added = tracked(2, OTHER_LINE)
    registry.add(added)
    assert registry.near(OTHER_LINE) == [added]
    assert [f.ino for f in registry.near(LOG_LINE)] == [1]


def test_a_file_indexed_before_its_first_bytes_were_known_is_found_by_them_once_known() -> None:
    """Files tracked again after a restart know no first bytes until the watcher looks at
    them: indexed then, they are offered for every look-up until their first bytes are known,
    and from then on only for look-ups that share them."""
    restored = tracked(1)
    registry = FileRegistry([restored, tracked(2, OTHER_LINE)])
    assert registry.near(LOG_LINE) == [restored]
    restored.head = LOG_LINE  # the watcher looked at it
    assert registry.near(LOG_LINE) == [restored]
    assert registry.near(OTHER_LINE) == [registry.files[1]]
    assert len(LOG_LINE) >= KEY_BYTES


def test_files_forgotten_are_not_offered_again() -> None:
    gone, kept = tracked(1, LOG_LINE), tracked(2, LOG_LINE)
    registry = FileRegistry([gone, kept])
    assert registry.near(LOG_LINE) == [gone, kept]
    registry.forget([gone])
    assert registry.near(LOG_LINE) == [kept]
