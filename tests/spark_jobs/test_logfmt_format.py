"""``logfmt``: records structlog's ``LogfmtRenderer`` wrote, read into ``level``, ``message``,
the map of every pair and the declared keys' typed columns; generated records parse back to the
pairs they were built from."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs.formats import RejectReason, parse
from tests.spark_jobs.support import StagingRows

pytestmark = pytest.mark.spark

COLUMNS = {"status": "int", "duration": "double", "cached": "boolean"}


def write_logfmt(path: Path, events: list[dict[str, Any]]) -> None:
    """Log ``events`` through a real structlog logfmt logger into ``path``."""
    with path.open("w") as file:
        logger = structlog.wrap_logger(
            structlog.WriteLogger(file),
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True, key="time"),
                structlog.processors.LogfmtRenderer(
                    key_order=["time", "level", "event"], bool_as_flag=False
                ),
            ],
        )
        for event in events:
            fields = dict(event)
            getattr(logger, fields.pop("level"))(fields.pop("event"), **fields)


def test_should_read_what_structlog_wrote_into_its_pairs_and_declared_columns(
    staging_rows: StagingRows, tmp_path: Path
) -> None:
    log = tmp_path / "app.log"
    write_logfmt(
        log,
        [
            {
                "level": "info",
                "event": "served it",
                "status": 200,
                "duration": 0.25,
                "cached": True,
            },
            {"level": "warning", "event": 'said "hi"', "status": "n/a", "path": "/a b"},
            {"level": "error", "event": "Zürich", "status": 503, "cached": False, "empty": ""},
        ],
    )
    lines = log.read_bytes().splitlines()
    before = datetime.now(timezone.utc)

    parsed, rejects = parse(
        staging_rows([*lines, b'key="never closed', b"=no key"], source="app"),
        "logfmt",
        columns=COLUMNS,
    )

    assert sorted(r["reason"] for r in rejects.collect()) == [RejectReason.NO_MATCH.value] * 2
    rows = [row.asDict() for row in parsed.orderBy("byte_offset").collect()]
    assert [(r["level"], r["message"]) for r in rows] == [
        ("info", "served it"),
        ("warning", 'said "hi"'),
        ("error", "Zürich"),
    ]
    assert [(r["status"], r["duration"], r["cached"]) for r in rows] == [
        (200, 0.25, True),
        (None, None, None),
        (503, None, False),
    ]
    assert [r["rescued"] for r in rows] == [None, {"status": "n/a"}, None]
    assert rows[1]["fields"]["path"] == "/a b"
    assert rows[2]["fields"]["empty"] == ""
    for row in rows:
        assert row["event_time"].astimezone(timezone.utc) <= before
        assert row["fields"]["time"].startswith(str(before.year))


KEYS = st.from_regex(r"[a-z][a-z0-9_.]{0,10}", fullmatch=True).filter(
    lambda key: key not in ("time", "ts", "timestamp")  # the time keys: read as a time
)
VALUES = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029\u0085\uffff"
    )
    | st.sampled_from('"\\\n\t '),
    max_size=20,
)


def logfmt_value(value: str) -> str:
    """``value`` as a logfmt writer quotes it (go-logfmt's rules)."""
    if value and not any(c in value for c in ' ="\\\n\t\r'):
        return value
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.dictionaries(KEYS, VALUES, min_size=1, max_size=6), min_size=1, max_size=40))
def test_generated_records_parse_back_to_their_pairs(
    staging_rows: StagingRows, records: list[dict[str, str]]
) -> None:
    """Many records an example, parsed in one job: a Spark job per record would be slow."""
    lines = [
        " ".join(f"{key}={logfmt_value(value)}" for key, value in pairs.items()).encode()
        for pairs in records
    ]

    parsed, rejects = parse(staging_rows(lines, source="app"), "logfmt")

    assert rejects.count() == 0
    assert [row["fields"] for row in parsed.orderBy("byte_offset").collect()] == records
