"""A landing's counts, reconciled: the rows landed against the events staged, per checkpoint.

The landing (``spark_jobs.landing``) counts in the jobs that write (nothing is read back): the
rows each write holds per ``(checkpoint_id, source)``, or per source file (``LandedKey``), and
the rejects per checkpoint and reason. Here they are compared with the staged events, the
manifests' counts (``spark_jobs.checkpoint.staged_events``): ``files_with_rejects`` finds the
source files whose rejects are to be read and parsed again, and fails a landing that wrote more
rows than were staged; ``summarize`` checks that a checkpoint's rows + rejects are its input
events and makes its part of the landing's summary, with the values its rows keep in
``rescued`` (counted as they are written: ``rescued_values``). Arithmetic on the driver: the
check of the written files' checksums, which runs a Spark job, is the landing's own
(``spark_jobs.landing.check_files``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipeline_core.errors import LandingError
from pipeline_core.formats import RESCUED_COLUMN
from spark_jobs.checkpoint import Checkpoint, FileKey
from spark_jobs.lake import WrittenFiles

LandedKey = tuple[int, str] | FileKey
"""What rows landed are counted per: ``(checkpoint_id, source)`` (Spark's writer), or a
``FileKey`` (the Arrow writer)."""


class LandingCountError(LandingError):
    """The written rows and rejects of a checkpoint differ from the lines that were staged."""


def landed_lines(written: WrittenFiles, source: str) -> Counter[LandedKey]:
    """The rows of ``source`` that ``written`` holds as its writing job counted them: per
    ``(checkpoint_id, source)``, or per ``FileKey`` when the job counted per source file (a
    checkpoint it was not asked to count by is ``0``, which stages nothing)."""
    landed: Counter[LandedKey] = Counter()
    for (checkpoint_id, *file), count in written.rows.items():
        checkpoint = int(checkpoint_id or 0)
        if file:
            host, fingerprint = (str(value) for value in file)
            landed[(checkpoint, source, host, fingerprint)] += count
        else:
            landed[(checkpoint, source)] += count
    return landed


def files_with_rejects(
    staged: Counter[FileKey], landed: Counter[LandedKey], rejected: Collection[FileKey] = ()
) -> set[FileKey]:
    """The source files with rejects: ``rejected`` (as the parse observed them, each holding
    one reject at least), and those that landed fewer rows than were staged, where ``landed``
    counts per source file.

    Raises:
        LandingCountError: more rows landed than were staged (less one per source file in
            ``rejected``), for a key of ``landed``: a source file, or a checkpoint's source.
    """
    most: Counter[LandedKey] = Counter()  # staged, less one reject per file with rejects
    for key, rows in staged.items():
        room = rows - (key in rejected)
        most[key] += room
        most[key[:2]] += room
    surplus = sorted(key for key, rows in landed.items() if rows > most[key])
    if surplus:
        raise LandingCountError(
            f"more rows landed than staged for (checkpoint, source[, host, file]): {surplus}"
        )
    per_file = [key for key in landed if len(key) == 4]
    if per_file or not landed:
        short = {key for key, rows in staged.items() if landed[key] < rows}
        return short | set(rejected)
    return set(rejected)


def rescued_values(checkpoint_ids: Sequence[int]) -> list[Column]:
    """Per checkpoint (named by its id), the values its parsed rows keep in ``rescued`` (a
    declared key's value not of its column's type): aggregates for ``DataFrame.observe``."""
    entries = F.col(RESCUED_COLUMN)
    counted = F.when(entries.isNotNull(), F.size(entries)).otherwise(F.lit(0))
    return [
        F.sum(F.when(F.col("checkpoint_id") == checkpoint_id, counted)).alias(str(checkpoint_id))
        for checkpoint_id in checkpoint_ids
    ]


def summarize(
    checkpoint: Checkpoint,
    landed: Counter[LandedKey],
    rejects: Mapping[str, int],
    rescued: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """One checkpoint's part of the landing summary; its rows + rejects must add up to its
    input events (its input lines, but for the lines that continue a multiline event).
    ``rescued``: per source with declared columns, the values its rows keep in ``rescued``.

    Raises:
        LandingCountError: they do not.
    """
    rows = dict.fromkeys(checkpoint.sources, 0)
    for (checkpoint_id, source, *_), count in landed.items():
        if checkpoint_id == checkpoint.checkpoint_id:
            rows[source] += count
    total = sum(rows.values()) + sum(rejects.values())
    if total != checkpoint.input_events:
        raise LandingCountError(
            f"checkpoint {checkpoint.checkpoint_id}: {sum(rows.values())} rows + "
            f"{sum(rejects.values())} rejects written != {checkpoint.input_events} input events "
            f"(of {checkpoint.input_lines} lines)"
        )
    return {
        "checkpoint_id": checkpoint.checkpoint_id,
        "rows": rows,
        "rejects": dict(sorted(rejects.items())),
        "rescued": dict(sorted((rescued or {}).items())),
        "input_lines": checkpoint.input_lines,
        "input_events": checkpoint.input_events,
        "batches": checkpoint.batches,
    }
