"""LandingCounts: the totals of a landing job's summary."""

from __future__ import annotations

from pipeline_core.metastore import LandingCounts


def test_should_add_up_rows_per_table_and_rejects_per_reason() -> None:
    summary = {"rows": {"access": 7, "errors": 2}, "rejects": {"no_match": 2, "invalid_utf8": 1}}

    assert LandingCounts.of(summary) == LandingCounts(rows=9, rejects=3)


def test_should_take_plain_numbers_as_totals() -> None:
    assert LandingCounts.of({"rows": 5, "rejects": "1"}) == LandingCounts(rows=5, rejects=1)


def test_should_report_unknown_counts_as_none() -> None:
    assert LandingCounts.of({}) == LandingCounts(rows=None, rejects=None)
    assert LandingCounts.of({"rows": None, "rejects": [1]}) == LandingCounts(None, None)
