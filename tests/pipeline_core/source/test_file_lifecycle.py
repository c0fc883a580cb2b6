"""FileState: the legal moves of a tracked file, what is stored and read, and the errors for
the rest; a copy read to its end is KEPT, stored as COPIED, and KEPT again after a restart."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pipeline_core.source import (
    FILE_TRANSITIONS,
    FileState,
    FileWatcher,
    IllegalFileTransitionError,
)
from pipeline_core.testing import Received, read_everything, reader_of, source_of, tail_folder

LIVE, ROTATED, DETACHED, COPIED, KEPT, DONE = (
    FileState.LIVE,
    FileState.ROTATED,
    FileState.DETACHED,
    FileState.COPIED,
    FileState.KEPT,
    FileState.DONE,
)
LEGAL = {
    (LIVE, LIVE),
    (LIVE, ROTATED),
    (LIVE, DETACHED),
    (LIVE, DONE),
    (ROTATED, ROTATED),
    (ROTATED, LIVE),
    (ROTATED, DETACHED),
    (ROTATED, DONE),
    (DETACHED, COPIED),
    (DETACHED, ROTATED),
    (DETACHED, DONE),
    (COPIED, COPIED),
    (COPIED, KEPT),
    (COPIED, ROTATED),
    (COPIED, DONE),
    (KEPT, ROTATED),
    (KEPT, DONE),
}


def test_should_name_every_state_in_the_transition_table() -> None:
    assert set(FILE_TRANSITIONS) == set(FileState)


@pytest.mark.parametrize("state", list(FileState))
@pytest.mark.parametrize("target", list(FileState))
def test_should_allow_exactly_the_legal_moves(state: FileState, target: FileState) -> None:
    assert state.can_become(target) is ((state, target) in LEGAL)


def test_should_keep_a_done_file_done_for_good() -> None:
    assert not any(DONE.can_become(target) for target in FileState)


def test_should_store_a_kept_copy_as_a_copy_and_every_other_state_as_itself() -> None:
    assert {state: state.persisted for state in FileState} == {
        state: COPIED if state is KEPT else state for state in FileState
    }


def test_should_read_live_rotated_and_copied_files_and_claim_every_inode_but_a_done_one() -> None:
    assert [state for state in FileState if state.read] == [LIVE, ROTATED, COPIED]
    assert [state for state in FileState if not state.claims_inode] == [DETACHED, DONE]


def test_should_name_the_file_its_state_and_the_one_asked_for() -> None:
    with pytest.raises(IllegalFileTransitionError) as raised:
        DONE.check_transition("4f1c", LIVE)

    assert str(raised.value) == "file 4f1c is done; only live or rotated files can become live"
    assert (raised.value.fingerprint, raised.value.state, raised.value.target) == (
        "4f1c",
        DONE,
        LIVE,
    )


def test_should_refuse_an_illegal_move_of_a_tracked_file_and_leave_its_state(
    tmp_path: Path,
) -> None:
    (tmp_path / "access.log").write_bytes(b"one\n")
    watcher, _reader, _received = tail_folder(tmp_path)
    (tracked,) = watcher.files

    with pytest.raises(
        IllegalFileTransitionError, match="is live; only copied files can become kept"
    ):
        tracked.move_to(KEPT)

    assert tracked.state is LIVE
    watcher.close()


@pytest.mark.timeout(60)
def test_a_copy_read_to_its_end_is_kept_stored_as_copied_and_kept_again_after_a_restart(
    tmp_path: Path,
) -> None:
    live, copy = tmp_path / "access.log", tmp_path / "access.log.1"
    live.write_bytes(b"".join(b"line %d\n" % i for i in range(50)))
    watcher, reader, received = tail_folder(tmp_path)
    shutil.copyfile(live, copy)
    os.truncate(live, 0)
    read_everything(watcher, reader, received)
    kept = next(f for f in watcher.files if f.path == str(copy))
    assert (kept.state, kept.fd is not None) == (KEPT, True)
    record = kept.record(kept.read_offset)
    assert record.state is COPIED
    watcher.close()

    restarted = FileWatcher([source_of(tmp_path)], "test-host", 1024, [record])
    again = Received()
    read_everything(restarted, reader_of(restarted), again)

    assert again.lines() == []  # all of it was sealed: nothing read twice
    assert next(f for f in restarted.files if f.path == str(copy)).state is KEPT
    restarted.close()
