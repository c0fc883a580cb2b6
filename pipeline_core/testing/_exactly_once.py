"""Whether a lake holds every line written exactly once: the check at the end of a test that
wrote known, distinct lines (:class:`~pipeline_core.testing.UniqueAccessLines`), collected and
landed them, whatever failed on the way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline_core.testing._lake import table_rows

if TYPE_CHECKING:
    import pyarrow as pa

    from pipeline_core.lake import LakeLocation


@dataclass(frozen=True)
class ExactlyOnce:
    """How the lake's rows compare with the lines written."""

    written: int
    rows: int
    distinct_event_ids: int
    distinct_lines: int
    missing: list[bytes]
    """The first of the lines written that the lake lacks (at most 20)."""
    unexpected: list[bytes]
    mismatched_ids: int
    """Rows whose event id names a staged line other than the row's line (or none)."""
    rejects: int
    lost: int
    """Lines written that the lake lacks, all of them."""
    expected_rejects: int = 0
    """Lines written that cannot parse: each must be one reject."""
    distinct_reject_ids: int = 0
    rejects_match: bool = True
    """The rejects' raw lines are exactly the lines expected to be rejected."""

    @property
    def duplicates(self) -> int:
        """Rows beyond the first of their event id."""
        return self.rows - self.distinct_event_ids

    @property
    def duplicated_lines(self) -> int:
        """Rows beyond the first of their line."""
        return self.rows - self.distinct_lines

    @property
    def holds(self) -> bool:
        """Every line written is one row (or one reject, if expected to be), nothing else."""
        return (
            self.rows == self.written
            and self.duplicates == 0
            and self.distinct_lines == self.rows
            and not self.missing
            and not self.unexpected
            and self.mismatched_ids == 0
            and self.rejects == self.expected_rejects
            and self.distinct_reject_ids == self.rejects
            and self.rejects_match
        )

    def describe(self) -> str:
        """Every figure, for an assertion message."""
        return (
            f"lines written {self.written}, rows in lake {self.rows}, duplicate event ids "
            f"{self.duplicates}, distinct lines {self.distinct_lines}, missing "
            f"{self.lost} {self.missing[:3]!r}, unexpected {len(self.unexpected)} "
            f"{self.unexpected[:3]!r}, ids naming another line {self.mismatched_ids}, "
            f"rejects {self.rejects} (expected {self.expected_rejects}, distinct ids "
            f"{self.distinct_reject_ids}, raw lines as expected: {self.rejects_match})"
        )


def check_exactly_once(
    lake: LakeLocation,
    expected: Sequence[bytes],
    staged: pa.Table | None = None,
    rejected: Sequence[bytes] = (),
) -> ExactlyOnce:
    """Compare the lake's ``access`` table with ``expected`` lines, by line content, and its
    ``_rejects`` with the ``rejected`` lines (each once); with ``staged`` (``event_id`` and
    ``line`` of every staged line), also check that each row's event id is the id its line was
    staged under."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = lake_table(lake, "access")
    rejects = lake_table(lake, "_rejects")
    if table is None:
        table = pa.table({"event_id": pa.array([], pa.string()), "line": pa.array([], pa.binary())})
        lines = table["line"]
    else:
        lines = nginx_lines(table).cast(pa.binary())
    found = set(lines.to_pylist())
    wanted = set(expected)
    mismatched = 0
    if staged is not None:
        by_id = pa.table({"event_id": table["event_id"], "row_line": lines})
        joined = by_id.join(staged, "event_id", join_type="left outer")
        same = pc.fill_null(pc.equal(joined["row_line"], joined["line"]), False)
        mismatched = len(same) - pc.sum(same.cast(pa.int64())).as_py() if len(same) else 0
    rejected_raw = [] if rejects is None else rejects["raw_line"].to_pylist()
    return ExactlyOnce(
        written=len(expected),
        rows=table.num_rows,
        distinct_event_ids=pc.count_distinct(table["event_id"]).as_py(),
        distinct_lines=len(found),
        missing=sorted(wanted - found)[:20],
        unexpected=sorted(found - wanted)[:20],
        mismatched_ids=mismatched,
        rejects=len(rejected_raw),
        lost=len(wanted - found),
        expected_rejects=len(rejected),
        distinct_reject_ids=0
        if rejects is None
        else pc.count_distinct(rejects["event_id"]).as_py(),
        rejects_match=sorted(rejected_raw) == sorted(line.decode() for line in rejected),
    )


def lake_table(lake: LakeLocation, table: str) -> pa.Table | None:
    """One lake table (``access``, ``_rejects``) as its current snapshot holds it, read through
    the catalog; None if it is missing or empty."""
    rows = table_rows(lake, table)
    return rows if rows.num_rows else None


def nginx_lines(table: pa.Table) -> pa.ChunkedArray | pa.Array:
    """The nginx "combined" line each parsed lake row was read from (for lines written in
    UTC with a user and a byte count, as :class:`~pipeline_core.testing.UniqueAccessLines`
    writes them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    seconds = table["event_time"].cast(pa.timestamp("s", tz="UTC"), safe=False)
    stamp = pc.strftime(seconds, format="%d/%b/%Y:%H:%M:%S +0000", locale="C")
    dash = pa.scalar("-")
    return pc.binary_join_element_wise(
        table["remote_addr"], " - ",
        pc.coalesce(table["remote_user"], dash), " [", stamp, '] "',
        table["request"], '" ', table["status"].cast(pa.string()), " ",
        pc.coalesce(table["body_bytes_sent"].cast(pa.string()), dash), ' "',
        table["http_referer"], '" "', table["http_user_agent"], '"',
        "",
    )  # fmt: skip
