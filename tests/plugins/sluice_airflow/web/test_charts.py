"""The SVG charts: units, axes, lines, blocks and bars, read back as the XML they are."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from itertools import pairwise

from markupsafe import Markup
from sluice_airflow.web.charts import (
    BYTES,
    BYTES_PER_S,
    COUNT,
    SECONDS,
    Bars,
    Line,
    Steps,
    bar_chart,
    time_chart,
)

SVG = "{http://www.w3.org/2000/svg}"
T0 = datetime(2026, 11, 22, 10, tzinfo=timezone.utc)


def parsed(chart: Markup) -> ET.Element:
    assert isinstance(chart, Markup)
    return ET.fromstring(str(chart))


def marks(svg: ET.Element, tag: str, kind: str) -> list[ET.Element]:
    return [e for e in svg.iter(SVG + tag) if kind in e.get("class", "").split()]


def tips(elements: list[ET.Element]) -> list[str]:
    return [e.findtext(SVG + "title") or "" for e in elements]


def axis_labels(svg: ET.Element) -> list[str]:
    return [e.text or "" for e in svg.iter(SVG + "text") if "axis" in e.get("class", "").split()]


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_should_write_quantities_in_the_largest_scale_they_hold() -> None:
    assert [BYTES.format(v) for v in (0, 1023, 1536, 5 * 1024**3)] == [
        "0 B",
        "1,023 B",
        "1.5 KiB",
        "5 GiB",
    ]
    assert BYTES_PER_S.format(3 * 1024**2) == "3 MiB/s"
    assert [SECONDS.format(v) for v in (0.0423, 1.5, 90, 7200)] == [
        "42.3 ms",
        "1.5 s",
        "1.5 min",
        "2 h",
    ]
    assert COUNT.format(1234567) == "1,234,567"


def test_should_label_the_value_axis_from_zero_past_the_largest_value_at_a_round_step() -> None:
    seconds = parsed(bar_chart(["#1", "#2"], [Bars("latency", [0.3, 1.7])], SECONDS, label="s"))
    small = parsed(bar_chart(["#1"], [Bars("latency", [0.42])], SECONDS, label="ms"))
    lines = parsed(bar_chart(["#1"], [Bars("lines", [12])], COUNT, label="lines"))
    few = parsed(bar_chart(["#1"], [Bars("rejects", [2])], COUNT, label="rejects"))

    assert axis_labels(seconds)[:5] == ["0", "0.5 s", "1 s", "1.5 s", "2 s"]
    assert axis_labels(small)[:4] == ["0", "200 ms", "400 ms", "600 ms"]
    assert axis_labels(lines)[:4] == ["0", "5", "10", "15"]
    assert axis_labels(few)[:3] == ["0", "1", "2"]  # no fractions of a count


def test_should_put_each_bar_at_its_height_and_tell_a_missing_value_from_zero() -> None:
    svg = parsed(
        bar_chart(
            ["#1", "#2", "#3"],
            [Bars("rejects", [0, None, 4], tone="red", missing="not committed yet")],
            COUNT,
            label="rejects",
        )
    )

    zero, four = marks(svg, "rect", "bar")
    (missing,) = marks(svg, "line", "missing")
    assert float(zero.get("height", "0")) <= 1.0
    plot = float(four.get("y", "0")) + float(four.get("height", "0"))
    assert float(four.get("height", "0")) == plot - 12  # 4 of 4 rejects: the whole plot
    assert "tone-red" in (four.get("class") or "")
    assert tips([zero, missing, four]) == [
        "#1: rejects: 0",
        "#2: rejects: not committed yet",
        "#3: rejects: 4",
    ]


def test_should_label_a_sample_of_many_categories() -> None:
    categories = [f"#{i}" for i in range(1, 101)]

    svg = parsed(bar_chart(categories, [Bars("lines", list(range(100)))], COUNT, label="x"))

    shown = [label for label in axis_labels(svg) if label.startswith("#")]
    assert 8 <= len(shown) <= 16
    assert shown[-1] == "#100"
    numbers = [int(label[1:]) for label in shown]
    assert len({b - a for a, b in pairwise(numbers)}) == 1  # evenly
    assert len(marks(svg, "rect", "bar")) == 100


def test_should_break_a_line_where_a_point_is_missing() -> None:
    points = [(at(0), 0.0), (at(1), 2048.0), None, (at(5), 512.0), (at(6), 0.0)]

    svg = parsed(time_chart([Line("web-1", points, tone="amber")], BYTES, label="lag"))

    first, second = marks(svg, "polyline", "line")
    assert len(first.get("points", "").split()) == 2 == len(second.get("points", "").split())
    dots = marks(svg, "circle", "dot")
    assert tips(dots)[1] == "web-1: 2 KiB at 2026-11-22 10:01:00 UTC"
    assert len(dots) == 4 and all("tone-amber" in (d.get("class") or "") for d in dots)


def test_should_mark_an_isolated_point_of_a_long_line() -> None:
    many = [(at(i / 10), float(i)) for i in range(100)]

    svg = parsed(time_chart([Line("web-1", [*many, None, (at(30), 7.0)])], COUNT, label="x"))

    assert len(marks(svg, "polyline", "line")) == 1
    assert tips(marks(svg, "circle", "dot")) == ["web-1: 7 at 2026-11-22 10:30:00 UTC"]


def test_should_draw_a_rate_as_a_block_over_the_span_it_was_measured() -> None:
    spans = [(at(0), at(10), 2048.0), (at(20), at(20.001), 1024.0)]

    svg = parsed(time_chart([Steps("web-1", spans)], BYTES_PER_S, label="rate"))

    long, short = marks(svg, "rect", "step")
    assert float(long.get("width", "0")) > 100
    assert float(short.get("width", "0")) == 2.0  # too short to see: drawn 2 px wide
    assert float(short.get("height", "0")) * 2 == float(long.get("height", "0"))
    assert tips([long])[0] == ("web-1: 2 KiB/s, 2026-11-22 10:00:00 UTC to 2026-11-22 10:10:00 UTC")


def test_should_tick_the_time_axis_at_round_utc_times_with_the_date() -> None:
    svg = parsed(time_chart([Line("x", [(at(0), 1.0), (at(30), 2.0)])], COUNT, label="x"))

    labels = axis_labels(svg)
    assert [label for label in labels if ":" in label] == [
        "10:00",
        "10:10",
        "10:20",
        "10:30",
    ]
    assert "Nov 22" in labels and "UTC" in labels


def test_should_show_a_legend_only_for_several_series() -> None:
    one = parsed(time_chart([Line("web-1", [(at(0), 1.0)])], COUNT, label="x"))
    two = parsed(
        time_chart(
            [Line("web-1", [(at(0), 1.0)]), Line("web-2", [(at(1), 2.0)], tone="amber")],
            COUNT,
            label="x",
        )
    )

    assert list(one.iter(SVG + "g")) == []
    legend = [e.findtext(SVG + "text") for e in two.iter(SVG + "g")]
    assert legend == ["web-1", "web-2"]


def test_should_mark_categories_whose_values_are_all_missing() -> None:
    svg = parsed(
        bar_chart(["#1"], [Bars("lines", [None], missing="not sealed yet")], COUNT, label="x")
    )

    assert tips(marks(svg, "line", "missing")) == ["#1: lines: not sealed yet"]
    assert axis_labels(svg) == ["0", "1", "#1"]


def test_should_say_when_there_is_nothing_to_draw() -> None:
    for chart in (
        time_chart([Line("web-1", [None])], BYTES, label="lag", empty="No samples yet."),
        bar_chart([], [Bars("lines", [])], COUNT, label="lines", empty="No samples yet."),
    ):
        svg = parsed(chart)
        assert [e.text for e in svg.iter(SVG + "text")] == ["No samples yet."]
        assert svg.get("aria-label") in ("lag", "lines")


def test_should_escape_what_it_is_given() -> None:
    chart = time_chart([Line('<host "a">&', [(at(0), 1.0)])], COUNT, label="<lag>", empty="unused")

    svg = parsed(chart)  # still well-formed XML

    assert svg.get("aria-label") == "<lag>"
    assert tips(marks(svg, "circle", "dot")) == ['<host "a">&: 1 at 2026-11-22 10:00:00 UTC']
