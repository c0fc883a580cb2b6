"""Small charts drawn on the server as inline SVG: no script, no file to fetch.

A chart is SVG markup for the page to put inline. Its marks carry CSS classes (``tone-*``,
``mark``, ``grid``, ``axis``) that the page styles, so charts follow its light and dark
colours; every mark has a ``<title>`` that the browser shows on hover.

* :func:`time_chart` -- values over time: a :class:`Line` joins readings of a gauge taken at
  moments (``None`` breaks it), :class:`Steps` draws a rate held over spans of time.
* :func:`bar_chart` -- one bar per category and series; a missing value is marked as such,
  apart from a zero.

Axes start at zero and end at a round value of the chart's :class:`Unit`; times are UTC.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from markupsafe import Markup, escape

WIDTH = 560
HEIGHT = 210
_LEFT, _RIGHT, _TOP, _BOTTOM = 72, 14, 12, 36
_LEGEND = 18
_MIN_MARK_PX = 2.0
_MAX_BAR_PX = 44.0
_CHAR_PX = 6.5
"""About how wide a character of the charts' text is."""
_MARKERS_UP_TO = 80
"""A line with more points than this is drawn without a marker on each point."""


@dataclass(frozen=True)
class Unit:
    """How a quantity is written: ``scales`` are ``(base, suffix)`` pairs, smallest first;
    an ``exact`` quantity (a count) is written in full, not rounded."""

    scales: tuple[tuple[float, str], ...]
    exact: bool = False

    def axis_scale(self, top: float) -> tuple[float, str]:
        """The scale an axis up to ``top`` is labelled in: the largest that ``top`` holds."""
        return next((s for s in reversed(self.scales) if top >= s[0]), self.scales[0])

    def format(self, value: float) -> str:
        """``value`` in the largest scale it holds, to three significant digits (whole numbers
        of the smallest scale in full: ``1,023 B``; an exact quantity always in full)."""
        if self.exact:
            return f"{value:,.0f}"
        base, suffix = self.scales[0]
        for scale in self.scales:
            if abs(value) >= scale[0]:
                base, suffix = scale
        scaled = value / base
        if base == self.scales[0][0] and base >= 1 and scaled == int(scaled):
            text = f"{int(scaled):,}"
        else:
            text = f"{scaled:.3g}"
        return f"{text} {suffix}".rstrip()


BYTES = Unit(((1, "B"), (1024, "KiB"), (1024**2, "MiB"), (1024**3, "GiB"), (1024**4, "TiB")))
BYTES_PER_S = Unit(tuple((base, f"{suffix}/s") for base, suffix in BYTES.scales))
SECONDS = Unit(((0.001, "ms"), (1, "s"), (60, "min"), (3600, "h")))
COUNT = Unit(((1, ""), (1000, "k"), (1000**2, "M"), (1000**3, "G")), exact=True)


@dataclass(frozen=True)
class Line:
    """A gauge read at moments, joined point to point; ``None`` breaks the line."""

    name: str
    points: Sequence[tuple[datetime, float] | None]
    tone: str = "blue"


@dataclass(frozen=True)
class Steps:
    """A rate held over spans of time: each ``(start, end, value)`` is drawn as a block."""

    name: str
    spans: Sequence[tuple[datetime, datetime, float]]
    tone: str = "blue"


@dataclass(frozen=True)
class Bars:
    """One value per category (``None``: missing, told apart from zero by ``missing``)."""

    name: str
    values: Sequence[float | None]
    tone: str = "blue"
    missing: str = "no value"


def time_chart(
    series: Sequence[Line | Steps], unit: Unit, *, label: str, empty: str = "No data yet."
) -> Markup:
    """Values over time; ``label`` names the chart for screen readers; ``empty`` is shown
    when no series has a value."""
    moments = [m for s in series for m in _moments(s)]
    values = [v for s in series for v in _values(s)]
    frame = _Frame(legend=len(series) > 1)
    if not moments:
        return frame.svg(label, [frame.message(empty)])
    start, end = _time_domain(min(moments), max(moments))
    y_ticks, y_labels = _value_ticks(max(values, default=0.0), unit)
    parts = frame.y_axis(y_ticks, y_labels)
    x = _TimeScale(start, end, frame)
    parts += x.axis()
    y = _ValueScale(y_ticks[-1], frame)
    for index, item in enumerate(series):
        tone = escape(item.tone)
        if isinstance(item, Steps):
            for left, right, value in item.spans:
                x0, x1 = x(left), x(right)
                if x1 - x0 < _MIN_MARK_PX:
                    x0 = x1 - _MIN_MARK_PX
                tip = f"{item.name}: {unit.format(value)}, {_when(left)} to {_when(right)}"
                parts.append(
                    f'<rect class="mark step tone-{tone}" x="{x0:.1f}" y="{y(value):.1f}" '
                    f'width="{x1 - x0:.1f}" height="{y(0) - y(value):.1f}">'
                    f"<title>{escape(tip)}</title></rect>"
                )
        else:
            parts += _line(item, x, y, unit)
        if frame.legend:
            parts.append(frame.legend_entry(index, item.name, item.tone))
    return frame.svg(label, parts)


def bar_chart(
    categories: Sequence[str],
    series: Sequence[Bars],
    unit: Unit,
    *,
    label: str,
    axis_label: str = "",
    empty: str = "No data yet.",
) -> Markup:
    """Bars per category, each series side by side; ``categories`` label the x axis (a
    sample of them when there are many). ``empty`` is shown when there is no category."""
    frame = _Frame(legend=len(series) > 1)
    if not categories:
        return frame.svg(label, [frame.message(empty)])
    values = [v for s in series for v in s.values if v is not None]
    y_ticks, y_labels = _value_ticks(max(values, default=0.0), unit)
    y = _ValueScale(y_ticks[-1], frame)
    parts = frame.y_axis(y_ticks, y_labels)
    band = frame.plot_width / len(categories)
    width = min(max(band * 0.72 / len(series), 1.0), _MAX_BAR_PX)
    every = math.ceil(len(categories) / 14)
    for i, category in enumerate(categories):
        left = frame.left + i * band + (band - width * len(series)) / 2
        if (len(categories) - 1 - i) % every == 0:  # counted from the newest, on the right
            parts.append(
                f'<text class="axis" x="{frame.left + (i + 0.5) * band:.1f}" '
                f'y="{frame.bottom + 14}" text-anchor="middle">{escape(category)}</text>'
            )
        for k, item in enumerate(series):
            bar_x = left + k * width
            value = item.values[i] if i < len(item.values) else None
            if value is None:
                tip = f"{category}: {item.name}: {item.missing}"
                parts.append(
                    f'<line class="missing" x1="{bar_x:.1f}" x2="{bar_x + width:.1f}" '
                    f'y1="{frame.bottom - 1.5}" y2="{frame.bottom - 1.5}">'
                    f"<title>{escape(tip)}</title></line>"
                )
                if len(series) == 1 and len(item.missing) * _CHAR_PX <= band:
                    parts.append(
                        f'<text class="missing-label" x="{bar_x + width / 2:.1f}" '
                        f'y="{frame.bottom - 6}" text-anchor="middle">{escape(item.missing)}</text>'
                    )
                continue
            top = min(y(value), frame.bottom - 1) if value > 0 else frame.bottom - 1
            tip = f"{category}: {item.name}: {unit.format(value)}"
            parts.append(
                f'<rect class="mark bar tone-{escape(item.tone)}" x="{bar_x:.1f}" '
                f'y="{top:.1f}" width="{width:.1f}" height="{frame.bottom - top:.1f}">'
                f"<title>{escape(tip)}</title></rect>"
            )
    if axis_label:
        parts.append(
            f'<text class="axis caption" x="{frame.right}" y="{frame.bottom + 30}" '
            f'text-anchor="end">{escape(axis_label)}</text>'
        )
    if frame.legend:
        parts += [frame.legend_entry(k, s.name, s.tone) for k, s in enumerate(series)]
    return frame.svg(label, parts)


# -- parts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Frame:
    """The plot area inside the SVG, and the pieces drawn around it."""

    legend: bool

    @property
    def left(self) -> float:
        return _LEFT

    @property
    def right(self) -> float:
        return WIDTH - _RIGHT

    @property
    def top(self) -> float:
        return _TOP + (_LEGEND if self.legend else 0)

    @property
    def bottom(self) -> float:
        return HEIGHT - _BOTTOM

    @property
    def plot_width(self) -> float:
        return self.right - self.left

    def svg(self, label: str, parts: Sequence[str]) -> Markup:
        body = "".join(parts)
        return Markup(
            f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
            f'height="{HEIGHT}" role="img" aria-label="{escape(label)}" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{escape(label)}</title>{body}</svg>'
        )

    def message(self, text: str) -> str:
        return (
            f'<rect class="frame" x="{self.left}" y="{self.top}" width="{self.plot_width}" '
            f'height="{self.bottom - self.top}"></rect>'
            f'<text class="empty" x="{(self.left + self.right) / 2}" '
            f'y="{(self.top + self.bottom) / 2}" text-anchor="middle">{escape(text)}</text>'
        )

    def y_axis(self, ticks: Sequence[float], labels: Sequence[str]) -> list[str]:
        y = _ValueScale(ticks[-1], self)
        parts = []
        for tick, text in zip(ticks, labels, strict=True):
            at = y(tick)
            kind = "baseline" if tick == 0 else "grid"
            parts.append(
                f'<line class="{kind}" x1="{self.left}" x2="{self.right}" '
                f'y1="{at:.1f}" y2="{at:.1f}"></line>'
                f'<text class="axis" x="{self.left - 6}" y="{at + 4:.1f}" '
                f'text-anchor="end">{escape(text)}</text>'
            )
        return parts

    def legend_entry(self, index: int, name: str, tone: str) -> str:
        x = self.left + index * 150
        return (
            f'<g class="legend"><rect class="mark tone-{escape(tone)}" x="{x}" y="{_TOP - 2}" '
            f'width="10" height="10"></rect><text class="axis" x="{x + 14}" '
            f'y="{_TOP + 7}">{escape(name)}</text></g>'
        )


@dataclass(frozen=True)
class _ValueScale:
    top: float
    frame: _Frame

    def __call__(self, value: float) -> float:
        span = self.frame.bottom - self.frame.top
        return self.frame.bottom - span * (value / self.top if self.top else 0.0)


_TIME_STEPS: tuple[int, ...] = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
_TIME_STEPS += (7200, 10800, 21600, 43200, 86400, 172800)
"""Seconds between the time axis's ticks: the first that makes at most six."""


@dataclass(frozen=True)
class _TimeScale:
    start: datetime
    end: datetime
    frame: _Frame

    def __call__(self, moment: datetime) -> float:
        fraction = (moment - self.start) / (self.end - self.start)
        return self.frame.left + self.frame.plot_width * min(max(fraction, 0.0), 1.0)

    def axis(self) -> list[str]:
        """Ticks at round UTC times, about six; a tick where the date changes (and the
        first) also shows the date."""
        span = (self.end - self.start).total_seconds()
        step = next((s for s in _TIME_STEPS if span / s <= 6), _TIME_STEPS[-1])
        first = math.ceil(self.start.timestamp() / step) * step
        pattern = "%H:%M:%S" if step < 60 else "%H:%M" if step < 86400 else "%b %d"
        parts = []
        shown_date = None
        moment = datetime.fromtimestamp(first, timezone.utc)
        while moment <= self.end:
            at = self(moment)
            parts.append(
                f'<line class="tick" x1="{at:.1f}" x2="{at:.1f}" y1="{self.frame.bottom}" '
                f'y2="{self.frame.bottom + 4}"></line>'
                f'<text class="axis" x="{at:.1f}" y="{self.frame.bottom + 15}" '
                f'text-anchor="middle">{moment.strftime(pattern)}</text>'
            )
            if step < 86400 and moment.date() != shown_date:
                shown_date = moment.date()
                parts.append(
                    f'<text class="axis caption" x="{at:.1f}" y="{self.frame.bottom + 28}" '
                    f'text-anchor="middle">{moment.strftime("%b %d")}</text>'
                )
            moment += timedelta(seconds=step)
        parts.append(
            f'<text class="axis caption" x="{self.frame.right}" y="{self.frame.bottom + 28}" '
            f'text-anchor="end">UTC</text>'
        )
        return parts


def _line(item: Line, x: _TimeScale, y: _ValueScale, unit: Unit) -> list[str]:
    tone = escape(item.tone)
    runs: list[list[tuple[datetime, float]]] = [[]]
    for point in item.points:
        if point is None:
            runs.append([])
        else:
            runs[-1].append(point)
    runs = [run for run in runs if run]
    markers = sum(len(run) for run in runs) <= _MARKERS_UP_TO
    parts = []
    for run in runs:
        if len(run) > 1:
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in run)
            parts.append(f'<polyline class="mark line tone-{tone}" points="{path}"></polyline>')
        if markers or len(run) == 1:
            for t, v in run:
                tip = f"{item.name}: {unit.format(v)} at {_when(t)}"
                parts.append(
                    f'<circle class="mark dot tone-{tone}" cx="{x(t):.1f}" cy="{y(v):.1f}" '
                    f'r="3"><title>{escape(tip)}</title></circle>'
                )
    return parts


def _moments(series: Line | Steps) -> list[datetime]:
    if isinstance(series, Steps):
        return [m for left, right, _ in series.spans for m in (left, right)]
    return [point[0] for point in series.points if point is not None]


def _values(series: Line | Steps) -> list[float]:
    if isinstance(series, Steps):
        return [value for _, _, value in series.spans]
    return [point[1] for point in series.points if point is not None]


def _time_domain(first: datetime, last: datetime) -> tuple[datetime, datetime]:
    """``[first, last]`` with a margin of 4% on each side, at least ten seconds wide."""
    span = max((last - first).total_seconds(), 10.0)
    middle = first + (last - first) / 2
    half = timedelta(seconds=span * 0.54)
    return middle - half, middle + half


def _value_ticks(top: float, unit: Unit) -> tuple[list[float], list[str]]:
    """Ticks from zero past ``top`` at a round step of the axis's scale, and their labels."""
    base, suffix = unit.axis_scale(top)
    scaled = top / base
    step = _round_step(scaled / 4) if scaled > 0 else 1.0
    if unit.exact:
        step = max(step, 1.0)  # no fractions of a count
    count = max(math.ceil(scaled / step - 1e-9), 1)
    ticks = [i * step for i in range(count + 1)]
    labels = ["0" if t == 0 else f"{round(t, 9):g} {suffix}".rstrip() for t in ticks]
    return [t * base for t in ticks], labels


def _round_step(rough: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``rough``."""
    magnitude = 10.0 ** math.floor(math.log10(rough))
    return next(m * magnitude for m in (1.0, 2.0, 5.0, 10.0) if m * magnitude >= rough - 1e-12)


def _when(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
