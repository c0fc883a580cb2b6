"""The preflight's checks of what a pipeline reads and where it writes: each source's files
(and what a ``regex`` source's pattern reads in them), the data folder, the staging folder or
store (and the spool), the lake's warehouse folder or store. Read-only, but for the probe
object written into a store (and deleted)."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline_core._file_names import shown_path
from pipeline_core.cli._check import Check, CheckStatus
from pipeline_core.config import PipelineConfig, SourceConfig

LISTED_FILES = 10
"""Files listed per source; the rest are counted."""
SAMPLED_FILES = 3
SAMPLED_BYTES = 64 * 1024
SAMPLED_LINES = 200
SHOWN_MATCHES = 2
"""A ``regex`` source: its pattern is tried on the first ``SAMPLED_LINES`` lines (within
``SAMPLED_BYTES``) of its first ``SAMPLED_FILES`` files, and the first ``SHOWN_MATCHES``
matches of each are shown with their columns."""


def check_source(source: SourceConfig) -> Check:
    """The files the source's globs match now; none is invalid unless it is ``optional``.
    Below them, the paths matched that will not be read (a symlink, or one leading out of the
    allowed folders: the source's symlink policy), each with why."""
    from pipeline_core.source import discover, explain_not_read

    name = f"source {source.name}"
    patterns = ", ".join(source.paths)
    found = discover(source)
    files = sorted(found.files.values())
    not_read = [
        f"not read: {shown_path(path)}: {explain_not_read(path, why)}"
        for path, why in sorted(found.refused.items())[:LISTED_FILES]
    ]
    if len(found.refused) > LISTED_FILES:
        not_read.append(f"... and {len(found.refused) - LISTED_FILES} more not read")
    if not files:
        if source.optional:
            message = f"no file matches {patterns} yet (optional)"
            return Check(name, CheckStatus.OK, message, tuple(not_read))
        return Check(
            name,
            CheckStatus.INVALID,
            f"no file matches {patterns} (set `optional: true` on the source if its files "
            "appear later)",
            tuple(not_read),
        )
    details = [f"{shown_path(path)}  {size} bytes" for path, size in files[:LISTED_FILES]]
    if len(files) > LISTED_FILES:
        details.append(f"... and {len(files) - LISTED_FILES} more")
    if source.pattern is not None:
        details += pattern_samples(source.pattern, [path for path, _ in files[:SAMPLED_FILES]])
    count = f"{len(files)} files match" if len(files) > 1 else "1 file matches"
    return Check(name, CheckStatus.OK, f"{count} {patterns}", (*details, *not_read))


def pattern_samples(pattern: str, paths: list[str]) -> list[str]:
    """What a ``regex`` source's pattern reads in the first lines of each of ``paths``: how
    many match, and the columns of the first ones that do."""
    import re

    compiled = re.compile(pattern)
    out = []
    for path in paths:
        try:
            with open(path, "rb") as file:
                head = file.read(SAMPLED_BYTES)
        except OSError as exc:
            out.append(f"{shown_path(path)}: not read ({exc.strerror})")
            continue
        lines = head.split(b"\n")[:-1][:SAMPLED_LINES]
        texts = [line.decode("utf-8", "replace").removesuffix("\r") for line in lines]
        matches = [(n, m) for n, text in enumerate(texts, 1) if (m := compiled.match(text))]
        out.append(
            f"{shown_path(path)}: the pattern matches {len(matches)} of its first {len(texts)} "
            "lines (the others are a multiline event's later lines, or no_match rejects)"
        )
        for number, match in matches[:SHOWN_MATCHES]:
            fields = ", ".join(f"{k}={_clipped(v)!r}" for k, v in match.groupdict().items())
            out.append(f"  line {number}: {fields}")
    return out


def _clipped(value: str | None, most: int = 60) -> str | None:
    return value if value is None or len(value) <= most else value[:most] + "..."


def check_staging(config: PipelineConfig) -> list[Check]:
    """The staging folder; or, with staging in an object store, the local spool folder and
    the store: reachable and writable, by a probe object written, read back and deleted (the
    one thing ``sluice validate`` writes, and removes again)."""
    from pipeline_core.errors import StorageError
    from pipeline_core.storage import probe_writable

    location = config.staging_location
    if location.is_local:
        return [check_folder("staging", location.local_path)]
    checks = [check_folder("spool", config.seal_dir)]
    try:
        probe_writable(location)
    except StorageError as exc:
        checks.append(Check("staging", CheckStatus.UNREACHABLE, str(exc)))
    else:
        checks.append(
            Check(
                "staging",
                CheckStatus.OK,
                f"{location} (writable: a probe object written and deleted)",
            )
        )
    return checks


def check_lake(config: PipelineConfig) -> Check:
    """The lake's warehouse folder; or, with the lake in an object store, the store: reachable
    and writable, by a probe object written, read back and deleted."""
    from pipeline_core.errors import StorageError
    from pipeline_core.storage import probe_writable

    location = config.lake_location
    if location.is_local:
        return check_folder("lake", location.local_path)
    try:
        probe_writable(location)
    except StorageError as exc:
        return Check("lake", CheckStatus.UNREACHABLE, str(exc))
    return Check(
        "lake", CheckStatus.OK, f"{location} (writable: a probe object written and deleted)"
    )


def check_folder(name: str, folder: Path) -> Check:
    """Whether this process can write ``folder``, or create it in the nearest folder that
    exists."""
    problem = unwritable(folder)
    if problem is not None:
        return Check(name, CheckStatus.INVALID, f"{folder}: {problem}")
    state = "writable" if folder.exists() else "to be created, its parent writable"
    return Check(name, CheckStatus.OK, f"{folder} ({state})")


def unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot be written (or created), or None."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable by this user (uid {os.getuid()})"
    return None
