"""watch_targets: the folders a pipeline's source patterns can match in."""

from __future__ import annotations

from pathlib import Path

from pipeline_core.source import WatchTarget, merge_targets, watch_targets


def test_should_watch_the_folder_a_plain_pattern_names(tmp_path: Path) -> None:
    pattern = str(tmp_path / "logs" / "access.log*")

    (target,) = watch_targets([pattern])

    assert target == WatchTarget(str(tmp_path / "logs"), ("access.log*",))
    assert target.concerns("access.log.1")
    assert not target.concerns("error.log")


def test_should_watch_every_folder_below_a_double_star(tmp_path: Path) -> None:
    for folder in ("a", "a/b", "c", ".hidden"):
        (tmp_path / folder).mkdir(parents=True)

    targets = watch_targets([f"{tmp_path}/**/*.log"])

    assert [t.folder for t in targets] == [
        str(tmp_path / name) if name else str(tmp_path) for name in ("", "a", "a/b", "c")
    ]
    assert all(t.names == ("*.log",) and t.subfolders for t in targets)


def test_should_not_walk_a_symlinked_folder_below_a_double_star(tmp_path: Path) -> None:
    (tmp_path / "logs" / "a").mkdir(parents=True)
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    (tmp_path / "logs" / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)

    targets = watch_targets([f"{tmp_path}/logs/**/*.log"])

    assert [t.folder for t in targets] == [str(tmp_path / "logs"), str(tmp_path / "logs" / "a")]


def test_should_watch_matching_folders_and_their_fixed_parent(tmp_path: Path) -> None:
    (tmp_path / "app-1").mkdir()
    (tmp_path / "app-2").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "app-file").write_text("not a folder")

    targets = watch_targets([f"{tmp_path}/app-*/app.log"])

    assert targets == [
        WatchTarget(str(tmp_path), (), subfolders=True),
        WatchTarget(str(tmp_path / "app-1"), ("app.log",)),
        WatchTarget(str(tmp_path / "app-2"), ("app.log",)),
    ]


def test_should_leave_out_folders_that_do_not_exist_yet(tmp_path: Path) -> None:
    assert watch_targets([f"{tmp_path}/missing/**/*.log"]) == []
    assert watch_targets([f"{tmp_path}/missing-*/app.log"]) == [
        WatchTarget(str(tmp_path), (), subfolders=True)
    ]


def test_should_merge_the_targets_of_one_folder(tmp_path: Path) -> None:
    folder = str(tmp_path)

    merged = merge_targets(
        [
            WatchTarget(folder, ("a.log",)),
            WatchTarget(folder, ("b.log", "a.log")),
            WatchTarget(folder, (), subfolders=True),
        ]
    )

    assert merged == [WatchTarget(folder, ("a.log", "b.log"), subfolders=True)]


def test_should_spell_a_relative_pattern_as_the_watcher_globs_it() -> None:
    (target,) = watch_targets(["access.log"])

    assert target.folder == "."
    assert target.concerns("access.log")
