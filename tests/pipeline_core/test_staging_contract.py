"""The staging contract: paths, and manifests written and read back, errors naming the field."""

from __future__ import annotations

import dataclasses
import json
import re
import zlib
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline_core.errors import LandingError
from pipeline_core.staging_contract import (
    MANIFEST_NAME,
    EventCut,
    EventRuns,
    EventSpan,
    Manifest,
    ManifestError,
    ManifestPart,
    ManifestRange,
    Segment,
    SegmentKind,
    SourceSpec,
    batch_dir,
    checkpoint_dir,
    checkpoint_id_of,
    inflight_dir,
    part_name,
    read_manifest,
    write_manifest,
)
from pipeline_core.staging_contract import _events as events_module

SEALED_AT = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=timezone.utc)
FP = "9f1c00000000abcd"
PART = ManifestPart(
    "part-access-00000.lines",
    "access",
    61,
    13024,
    "1a2b3c4d",
    (
        Segment(FP, 0, 0, 12000, 60),
        Segment(FP, 12000, 12000, 1024, 1, SegmentKind.LONG_LINE, 5_000_000),
    ),
)
MANIFEST = Manifest.of(
    pipeline="web_access",
    checkpoint_id=3,
    host="web-1",
    sealed_at=SEALED_AT,
    sources={"access": SourceSpec("nginx_combined"), "app": SourceSpec("json_lines", "ts")},
    parts=[PART],
    ranges=[ManifestRange(FP, "/var/log/nginx/access.log", "access", 0, 5_012_001, 61)],
)


def document() -> dict[str, Any]:
    """``MANIFEST`` as JSON gives it back."""
    loaded: dict[str, Any] = json.loads(json.dumps(MANIFEST.to_json()))
    return loaded


def test_paths_follow_the_staging_layout(tmp_path: Path) -> None:
    assert checkpoint_dir(tmp_path, "web", 3) == tmp_path / "web" / "00000003"
    assert batch_dir(tmp_path, "web", 3, "web-1") == tmp_path / "web" / "00000003" / "web-1"
    assert inflight_dir(tmp_path, "web", "web-1") == tmp_path / "web" / "_inflight" / "web-1"
    assert part_name("access", 7) == "part-access-00007.lines"


def test_a_checkpoint_folder_names_its_checkpoint(tmp_path: Path) -> None:
    assert checkpoint_id_of(checkpoint_dir(tmp_path, "web", 42)) == 42
    with pytest.raises(ManifestError, match=r"not named <checkpoint:08d>: .*_inflight$"):
        checkpoint_id_of(tmp_path / "web" / "_inflight")


def test_a_manifest_adds_up_its_ranges_and_checksums_its_parts() -> None:
    assert (MANIFEST.line_count, MANIFEST.byte_count) == (61, 5_012_001)
    assert MANIFEST.checksum == f"{zlib.crc32(b'1a2b3c4d'):08x}"
    assert PART.lines_by_file() == {FP: 61}


def test_a_manifest_is_written_as_format_4() -> None:
    written = document()

    assert written["format_version"] == 4
    assert written["sealed_at"] == "2026-11-22T10:00:00.123456+00:00"
    assert written["sources"]["access"] == {"format": "nginx_combined", "time_field": None}
    assert written["parts"][0]["segments"] == [
        {
            "file_fingerprint": FP,
            "start_offset": 0,
            "part_offset": 0,
            "length": 12000,
            "lines": 60,
            "kind": "lines",
        },
        {
            "file_fingerprint": FP,
            "start_offset": 12000,
            "part_offset": 12000,
            "length": 1024,
            "lines": 1,
            "kind": "long_line",
            "line_bytes": 5_000_000,
        },
    ]
    assert written["ranges"] == [
        {
            "fingerprint": FP,
            "path": "/var/log/nginx/access.log",
            "source": "access",
            "start": 0,
            "end": 5_012_001,
            "lines": 61,
        }
    ]


def test_a_manifest_reads_back_as_it_was_written() -> None:
    assert Manifest.from_json(document()) == MANIFEST
    assert Manifest.from_json(document()).to_json() == MANIFEST.to_json()


def test_a_format_3_manifest_reads_as_lines_segments() -> None:
    old = document()
    old["format_version"] = 3
    old["parts"][0]["segments"] = [
        {key: value for key, value in segment.items() if key not in ("kind", "line_bytes")}
        for segment in old["parts"][0]["segments"]
    ]

    (part,) = Manifest.from_json(old).parts

    assert [segment.kind for segment in part.segments] == [SegmentKind.LINES] * 2
    assert part.segments[1] == Segment(FP, 12000, 12000, 1024, 1)


def test_a_manifest_keeps_the_offset_of_its_seal_time() -> None:
    local = document()
    local["sealed_at"] = "2026-11-22T11:00:00.123456+01:00"

    sealed_at = Manifest.from_json(local).sealed_at

    assert sealed_at == SEALED_AT
    assert sealed_at.utcoffset() == timedelta(hours=1)
    assert sealed_at.tzinfo == timezone(timedelta(hours=1))


MALFORMED: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "empty": (lambda m: m.clear(), r"^no 'format_version'$"),
    "version": (lambda m: m.update(format_version=7), r"^unsupported format_version 7$"),
    "events before format 5": (
        lambda m: m["parts"][0]["segments"][0].update(events=[[0, 2, None]]),
        r"^part part-access-00000\.lines, segment 0: events are not part of format_version 4$",
    ),
    "missing host": (lambda m: m.pop("host"), r"^no 'host'$"),
    "checkpoint": (lambda m: m.update(checkpoint_id="3"), r"^checkpoint_id '3' is not a non-"),
    "naive time": (
        lambda m: m.update(sealed_at="2026-11-22T10:00:00"),
        r"^sealed_at has no UTC offset: '2026-11-22T10:00:00'$",
    ),
    "not a time": (lambda m: m.update(sealed_at="soon"), r"^sealed_at 'soon' is not an ISO"),
    "source name": (
        lambda m: m["sources"].update({"../x": {"format": "raw"}}),
        r"^source name '\.\./x' cannot name a lake table$",
    ),
    "source format": (
        lambda m: m["sources"]["app"].pop("format"),
        r"^source app: no 'format'$",
    ),
    "time field": (
        lambda m: m["sources"]["app"].update(time_field=1),
        r"^source app: time_field 1 is not a string$",
    ),
    "undeclared source": (
        lambda m: m["sources"].pop("access"),
        r"^part part-access-00000\.lines belongs to undeclared source 'access'$",
    ),
    "part name": (
        lambda m: m["parts"][0].update(name="../part"),
        r"^part name '\.\./part' is not a file name$",
    ),
    "line count": (
        lambda m: m.update(line_count=60),
        r"^line_count 60 != the sum of the parts' rows$",
    ),
    "checksum": (lambda m: m.update(checksum=7), r"^checksum 7 is not 8 hex digits$"),
    "parts": (lambda m: m.update(parts={}), r"^parts is not a list$"),
    "range": (lambda m: m["ranges"][0].pop("end"), r"^range 0: no 'end'$"),
    "range object": (lambda m: m["ranges"].append([]), r"^range 1: not an object$"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_manifest_fails_naming_the_field(case: str) -> None:
    edit, message = MALFORMED[case]
    malformed = document()
    edit(malformed)

    with pytest.raises(ManifestError, match=message):
        Manifest.from_json(malformed)


def test_a_manifest_that_is_not_an_object_fails() -> None:
    with pytest.raises(ManifestError, match=r"^the manifest: not an object$"):
        Manifest.from_json([])


def test_a_broken_manifest_cannot_be_landed() -> None:
    assert issubclass(ManifestError, LandingError)


def test_a_manifest_file_reads_back_as_it_was_written(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, MANIFEST)

    assert path == tmp_path / MANIFEST_NAME
    assert read_manifest(tmp_path) == MANIFEST


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_a_manifests_event_columns_are_written_as_json_dumps_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """The events' columns are written from their arrays (compiled where it is built): the
    file holds the same bytes as ``json.dumps`` of ``to_json``, and reads back as it was."""
    if compiled:
        assert events_module._int_lists is not None, "the install builds _int_lists"
    else:
        monkeypatch.setattr(events_module, "_int_lists", None)
    extremes = [0, 9, 10, 99, 100, 2**31, 2**53 + 1, 2**63 - 1]
    first = sorted({*extremes, *range(1, 20_000, 7)})
    spans = [
        EventSpan(line, 1 + line % 5, EventCut.BYTES if line % 11 == 0 else None) for line in first
    ]
    segment = Segment(FP, 0, 0, 12000, 2**63 - 1, events=EventRuns.of(spans))
    manifest = dataclasses.replace(
        MANIFEST, parts=(dataclasses.replace(MANIFEST.parts[0], segments=(segment,)),)
    )

    written = write_manifest(tmp_path, manifest).read_bytes()

    expected = json.dumps(
        manifest.to_json(), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    assert written == expected.encode()
    assert json.loads(written)["parts"][0]["segments"][0]["events"]["first_line"] == first


def test_an_int64_column_is_written_as_its_json_list_whatever_its_values() -> None:
    compiled = events_module._int_lists
    assert compiled is not None, "the install builds _int_lists"
    rng = np.random.default_rng(5)
    for values in (
        np.array([], np.int64),
        np.array([-(2**63), -1, 0, 1, 2**63 - 1], np.int64),
        rng.integers(-(2**62), 2**62, 1000, dtype=np.int64),
    ):
        assert (
            compiled.json_int_list(values)
            == json.dumps(values.tolist(), separators=(",", ":")).encode()
        )
    with pytest.raises(ValueError, match="multiple of 8 bytes"):
        compiled.json_int_list(b"1234")


def test_a_folder_without_a_manifest_is_not_sealed(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"batch is not sealed \(no _manifest\.json\): "):
        read_manifest(tmp_path)


def test_a_manifest_file_that_breaks_the_contract_fails_naming_the_file(tmp_path: Path) -> None:
    path = re.escape(str(tmp_path / MANIFEST_NAME))
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(ManifestError, match=rf"^{path}: Expecting "):
        read_manifest(tmp_path)

    (tmp_path / MANIFEST_NAME).write_text(json.dumps({**document(), "host": ""}))
    with pytest.raises(ManifestError, match=rf"^{path}: host '' is not a string$"):
        read_manifest(tmp_path)


def _with_events(*events: EventSpan) -> Manifest:
    segment = Segment(FP, 0, 0, 12000, 60, events=EventRuns.of(events))
    part = ManifestPart("part-access-00000.lines", "access", 60, 12000, "1a2b3c4d", (segment,))
    return Manifest.of(
        pipeline="app",
        checkpoint_id=1,
        host="web-1",
        sealed_at=SEALED_AT,
        sources={"access": SourceSpec("raw")},
        parts=[part],
        ranges=[ManifestRange(FP, "/var/log/app.log", "access", 0, 12000, 60)],
    )


def test_a_manifest_with_multiline_events_is_written_as_format_5_and_reads_back() -> None:
    manifest = _with_events(EventSpan(0, 12), EventSpan(20, 3, EventCut.LINES))
    written = json.loads(json.dumps(manifest.to_json()))

    assert written["format_version"] == 5
    assert written["parts"][0]["segments"][0]["events"] == {
        "first_line": [0, 20],
        "lines": [12, 3],
        "cut": [[1, "lines"]],
    }
    assert Manifest.from_json(written) == manifest
    assert manifest.parts[0].segments[0].event_count == 60 - 11 - 2


def test_an_event_of_several_runs_is_written_as_format_6_joined_to_its_first_run() -> None:
    # stderr's event at lines 2-3 and 6, stdout's line written in two entries at 4 and 7.
    manifest = _with_events(
        EventSpan(2, 2, EventCut.HEADLESS),
        EventSpan(4, 1),
        EventSpan(6, 1, head=0),
        EventSpan(7, 1, head=1),
    )
    written = json.loads(json.dumps(manifest.to_json()))

    assert written["format_version"] == 6
    assert written["parts"][0]["segments"][0]["events"] == {
        "first_line": [2, 4, 6, 7],
        "lines": [2, 1, 1, 1],
        "cut": [[0, "headless"]],
        "joins": [[2, 0], [3, 1]],
    }
    assert Manifest.from_json(written) == manifest
    assert manifest.parts[0].segments[0].event_count == 60 - 3


@pytest.mark.parametrize(
    ("joins", "message"),
    [
        ([[1, 1]], r"a join is \[span, the earlier span its event begins with\], not \[1, 1\]$"),
        ([[1, 0], [2, 1]], r"segment 0, span 2: its head 1 continues an event too$"),
        ([], r"segment 0: events' joins is not a list of \[span, head\]$"),
    ],
)
def test_joins_that_break_the_contract_fail_naming_the_span(joins: object, message: str) -> None:
    written = json.loads(
        json.dumps(
            _with_events(EventSpan(0, 2), EventSpan(3, 1), EventSpan(5, 1, head=1)).to_json()
        )
    )
    written["parts"][0]["segments"][0]["events"]["joins"] = joins

    with pytest.raises(ManifestError, match=message):
        Manifest.from_json(written)


def test_joins_are_refused_in_a_format_5_manifest() -> None:
    written = json.loads(
        json.dumps(
            _with_events(EventSpan(0, 2), EventSpan(3, 1), EventSpan(5, 1, head=1)).to_json()
        )
    )
    written["format_version"] = 5

    with pytest.raises(ManifestError, match=r"segment 0: joins are not part of format_version 5$"):
        Manifest.from_json(written)


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            {"first_line": [0, 2], "lines": [3, 2], "cut": []},
            r"segment 0, event 1: it overlaps the event before$",
        ),
        (
            {"first_line": [59], "lines": [2], "cut": []},
            r"segment 0, event 0: lines 59\.\.60 are not all among the segment's 60$",
        ),
        (
            {"first_line": [4], "lines": [1], "cut": []},
            r"segment 0, event 0: an event of one line, not cut, is not listed$",
        ),
        (
            {"first_line": [4], "lines": [2], "cut": [[0, "later"]]},
            r"segment 0: a cut is \[event, one of lines, bytes, truncated, headless\], "
            r"not \[0, 'later'\]$",
        ),
        (
            {"first_line": [4], "lines": [0], "cut": []},
            r"segment 0: an event's lines is not a positive count$",
        ),
        (
            {"first_line": [4, 9], "lines": [2], "cut": []},
            r"segment 0: events have 2 first lines and 1 line counts$",
        ),
        (
            [[4, 2, None]],
            r"segment 0: events are \{first_line, lines, cut\[, joins\]\}, not \[\[4, 2, None\]\]$",
        ),
    ],
)
def test_a_segments_events_that_break_the_contract_fail_naming_the_event(
    events: list[object], message: str
) -> None:
    written = json.loads(json.dumps(_with_events(EventSpan(0, 2)).to_json()))
    written["parts"][0]["segments"][0]["events"] = events

    with pytest.raises(ManifestError, match=message):
        Manifest.from_json(written)
