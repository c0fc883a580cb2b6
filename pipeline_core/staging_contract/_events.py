"""Events that span lines: where a multiline event lies among a segment's lines, and whether a
bound cut it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from pipeline_core._compat import StrEnum
from pipeline_core.staging_contract._fields import ManifestError

_int_lists: ModuleType | None
try:
    from pipeline_core.staging_contract import _int_lists
except ImportError:  # not built (no C compiler at install, or shipped as sources)
    _int_lists = None


class EventCut(StrEnum):
    """Why an event's row is not a whole event as its program wrote it (the lake's ``cut``)."""

    LINES = "lines"
    """It reached the source's ``multiline.max_lines``: it was closed there, and the lines that
    followed it, up to the next event's first line, are the next row (``headless``)."""
    BYTES = "bytes"
    """It reached ``multiline.max_bytes`` (or filled a whole read): closed there, as for
    ``lines``."""
    TRUNCATED = "truncated"
    """The last event of a ``copytruncate`` copy, which was being written when the original was
    truncated: the rest of it, if any was written, is the first row of the truncated file
    (``headless``)."""
    HEADLESS = "headless"
    """Its first line continues an event before it: one closed by a bound, one ended by
    ``multiline.flush_after`` before the rest of it was written, one whose head a copytruncate
    left in the copy, or the first lines read from a file started at its end."""


@dataclass(frozen=True, slots=True)
class EventSpan:
    """An event of a run of whole lines that is not simply one line: ``lines`` lines from the
    run's line ``first_line`` (counted from 0), and ``cut`` if a bound or a missing head cut it.
    Every line of the run that no span covers is an event of one line.

    In a container's log an event may be several such runs (its stream's lines, with the other
    stream's between them): each run after its first is a span whose ``head`` is the index
    (among the run's spans) of the span its event begins with; its lines follow that span's
    (and those of the spans before it with the same head), and its ``cut`` is None."""

    first_line: int
    lines: int
    cut: EventCut | None = None
    head: int = -1
    """-1: the span begins its event; otherwise the index of the span that does."""

    def shifted(self, lines: int, spans: int = 0) -> EventSpan:
        """The span in a run that has ``lines`` more lines (and ``spans`` more spans) before
        this one's."""
        head = self.head if self.head < 0 else self.head + spans
        return EventSpan(self.first_line + lines, self.lines, self.cut, head)


_CUTS: tuple[EventCut | None, ...] = (None, *EventCut)
"""Cut codes: 0 for none, then ``EventCut`` in its order (what a reader's NumPy arrays hold)."""
CUT_CODES: dict[EventCut | None, int] = {cut: code for code, cut in enumerate(_CUTS)}
"""The code :meth:`EventRuns.from_codes` takes for each cut."""


class EventRuns:
    """The multiline events of a run of whole lines, column by column, in NumPy arrays (no
    object per event: a read of tracebacks holds thousands, and a part joins every read's):
    each span's first line, its line count, its cut (as :data:`CUT_CODES`), and (when an
    event is several spans: :class:`EventSpan`) the span its event begins with. Iterating
    gives :class:`EventSpan` values; every line no span covers is an event of its own.

    Immutable: the arrays are read-only, and runs made from others share them."""

    __slots__ = ("_codes", "_first", "_heads", "_joined", "_lines")
    _first: NDArray[np.int64]
    _lines: NDArray[np.int64]
    _codes: NDArray[np.int8]
    _heads: NDArray[np.int64]
    _joined: int
    """:meth:`joined_lines`, once counted (-1 before)."""

    def __init__(
        self,
        first_lines: Iterable[int] = (),
        lines: Iterable[int] = (),
        cuts: Iterable[EventCut | None] = (),
        heads: Iterable[int] = (),
    ) -> None:
        codes = [CUT_CODES[cut] for cut in cuts]
        self._set(_column(first_lines), _column(lines), _column(codes, _CODE_TYPE), heads)

    def _set(
        self,
        first_lines: NDArray[np.int64],
        lines: NDArray[np.int64],
        codes: NDArray[np.int8],
        heads: Iterable[int] | NDArray[np.int64],
    ) -> None:
        joined = _column(heads)
        if joined.size and not bool((joined >= 0).any()):
            joined = _NONE
        for name, column in (
            ("_first", first_lines),
            ("_lines", lines),
            ("_codes", codes),
            ("_heads", joined),
        ):
            column.flags.writeable = False
            object.__setattr__(self, name, column)
        object.__setattr__(self, "_joined", -1)
        if not (len(first_lines) == len(lines) == len(codes)) or (
            joined.size and len(joined) != len(first_lines)
        ):
            raise ValueError("an event run's columns are not all as long as its spans")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"EventRuns is immutable: cannot set {name}")

    @classmethod
    def _of_columns(
        cls,
        first_lines: NDArray[np.int64],
        lines: NDArray[np.int64],
        codes: NDArray[np.int8],
        heads: Iterable[int] | NDArray[np.int64] = (),
    ) -> EventRuns:
        runs = cls.__new__(cls)
        runs._set(first_lines, lines, codes, heads)
        return runs

    @classmethod
    def of(cls, spans: Iterable[EventSpan]) -> EventRuns:
        listed = list(spans)
        return cls(
            [span.first_line for span in listed],
            [span.lines for span in listed],
            [span.cut for span in listed],
            [span.head for span in listed],
        )

    @classmethod
    def from_codes(
        cls,
        first_lines: Sequence[int] | NDArray[np.integer],
        lines: Sequence[int] | NDArray[np.integer],
        cut_codes: Sequence[int] | NDArray[np.integer],
        heads: Sequence[int] | NDArray[np.integer] | None = None,
    ) -> EventRuns:
        """From columns of ints (NumPy arrays are taken as they are, not copied), cuts as
        :data:`CUT_CODES`; ``heads`` -1 (or None: all) for a span that begins its event."""
        return cls._of_columns(
            _column(first_lines),
            _column(lines),
            _column(cut_codes, _CODE_TYPE),
            () if heads is None else heads,
        )

    @property
    def first_lines(self) -> NDArray[np.int64]:
        """Each span's first line (counted from the run's first, 0)."""
        return self._first

    @property
    def lines(self) -> NDArray[np.int64]:
        """Each span's lines."""
        return self._lines

    @property
    def cut_codes(self) -> NDArray[np.int8]:
        """Each span's cut as :data:`CUT_CODES` (0: whole)."""
        return self._codes

    @property
    def cuts(self) -> tuple[EventCut | None, ...]:
        """Each span's cut (None: whole)."""
        return tuple(map(_CUTS.__getitem__, self._codes.tolist()))

    @property
    def heads(self) -> NDArray[np.int64]:
        """Per span, :attr:`EventSpan.head`; empty when every span begins its event."""
        return self._heads

    @property
    def has_joins(self) -> bool:
        """Whether an event is several spans (:attr:`heads` is not empty)."""
        return bool(self._heads.size)

    def head_of(self) -> NDArray[np.int64]:
        """:attr:`heads`, -1 for every span when it is empty."""
        return self._heads if self._heads.size else np.full(len(self._first), -1, np.int64)

    def __iter__(self) -> Iterator[EventSpan]:
        return map(
            EventSpan,
            self._first.tolist(),
            self._lines.tolist(),
            self.cuts,
            self.head_of().tolist(),
        )

    def __len__(self) -> int:
        return len(self._first)

    def __bool__(self) -> bool:
        return bool(self._first.size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EventRuns):
            return NotImplemented
        return (
            np.array_equal(self._first, other._first)
            and np.array_equal(self._lines, other._lines)
            and np.array_equal(self._codes, other._codes)
            and np.array_equal(self._heads, other._heads)
        )

    def __hash__(self) -> int:
        return hash(tuple(column.tobytes() for column in self._columns()))

    def __repr__(self) -> str:
        return f"EventRuns.of({list(self)!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (EventRuns.from_codes, self._columns())

    def _columns(self) -> tuple[NDArray[np.integer], ...]:
        return self._first, self._lines, self._codes, self._heads

    def __add__(self, other: EventRuns) -> EventRuns:
        return EventRuns.joined([self, other])

    @classmethod
    def joined(cls, runs: Sequence[EventRuns]) -> EventRuns:
        """``runs[0] + runs[1] + ...`` (each already :meth:`shifted` to its place)."""
        runs = [run for run in runs if run]
        if len(runs) <= 1:
            return runs[0] if runs else NO_EVENTS
        heads: list[NDArray[np.int64]] | tuple[()] = ()
        if any(run.has_joins for run in runs):
            heads, offset = [], 0
            for run in runs:
                head = run.head_of()
                heads.append(np.where(head < 0, head, head + offset))
                offset += len(run)
        return cls._of_columns(
            np.concatenate([run._first for run in runs]),
            np.concatenate([run._lines for run in runs]),
            np.concatenate([run._codes for run in runs]),
            np.concatenate(heads) if heads else (),
        )

    def shifted(self, lines: int) -> EventRuns:
        """The events in a run that has ``lines`` more lines before these."""
        return EventRuns._of_columns(self._first + lines, self._lines, self._codes, self._heads)

    def joined_lines(self) -> int:
        """Lines that continue an event: the run's lines less its events."""
        if self._joined < 0:  # counted once: a chunk's and a segment's events are asked often
            starting = int(np.count_nonzero(self._heads < 0)) if self._heads.size else len(self)
            object.__setattr__(self, "_joined", int(self._lines.sum()) - starting)
        return self._joined

    def to_json(self, *, encoded: bool = False) -> dict[str, Any]:
        """Column by column: ``{"first_line": [...], "lines": [...], "cut": [[span, cut],
        ...]}``, ``cut`` listing only the cut spans (by their index among these), and
        ``"joins": [[span, head], ...]`` only when an event is several spans.

        ``encoded``: ``first_line`` and ``lines`` as :class:`msgspec.Raw` (their JSON, for
        ``msgspec`` to write as it is: written from the arrays, not made into a Python int
        each)."""
        column = _encoded_column if encoded else _listed_column
        cut = np.flatnonzero(self._codes)
        entry: dict[str, Any] = {
            "first_line": column(self._first),
            "lines": column(self._lines),
            "cut": [
                [index, _CUTS[code].value]  # type: ignore[union-attr]
                for index, code in zip(cut.tolist(), self._codes[cut].tolist(), strict=True)
            ],
        }
        if self._heads.size:
            joins = np.flatnonzero(self._heads >= 0)
            entry["joins"] = [
                [index, head]
                for index, head in zip(joins.tolist(), self._heads[joins].tolist(), strict=True)
            ]
        return entry

    @classmethod
    def from_json(cls, entry: object, where: str) -> EventRuns:
        """Events as :meth:`to_json` writes them; every event of one line is cut.

        Raises:
            ManifestError: they are not (the message starts with ``where``).
        """
        if (
            not isinstance(entry, dict)
            or not {"first_line", "lines", "cut"} <= set(entry)
            or (set(entry) - {"first_line", "lines", "cut", "joins"})
        ):
            raise ManifestError(
                f"{where}: events are {{first_line, lines, cut[, joins]}}, not {entry!r}"
            )
        first_lines, lines, cut_list = entry["first_line"], entry["lines"], entry["cut"]
        if not (isinstance(first_lines, list) and isinstance(lines, list)):
            raise ManifestError(f"{where}: events' first_line and lines are not lists")
        if len(first_lines) != len(lines):
            raise ManifestError(
                f"{where}: events have {len(first_lines)} first lines and {len(lines)} line counts"
            )
        if not all(type(v) is int and v >= 0 for v in first_lines):
            raise ManifestError(f"{where}: an event's first_line is not a line number")
        if not all(type(v) is int and v >= 1 for v in lines):
            raise ManifestError(f"{where}: an event's lines is not a positive count")
        cuts: list[EventCut | None] = [None] * len(lines)
        known = {c.value for c in EventCut}
        if not isinstance(cut_list, list):
            raise ManifestError(f"{where}: events' cut is not a list")
        for item in cut_list:
            if (
                not isinstance(item, list)
                or len(item) != 2
                or type(item[0]) is not int
                or not 0 <= item[0] < len(lines)
                or item[1] not in known
            ):
                raise ManifestError(
                    f"{where}: a cut is [event, one of {', '.join(EventCut)}], not {item!r}"
                )
            cuts[item[0]] = EventCut(item[1])
        heads = _heads_from_json(entry.get("joins"), len(lines), where)
        continued = {head for head in heads if head >= 0}
        for number, (count, cut) in enumerate(zip(lines, cuts, strict=True)):
            if heads and heads[number] >= 0:
                if cut is not None:
                    raise ManifestError(
                        f"{where}, span {number}: a span that continues an event has no cut"
                    )
            elif count == 1 and cut is None and number not in continued:
                raise ManifestError(
                    f"{where}, event {number}: an event of one line, not cut, is not listed"
                )
        return cls(first_lines, lines, cuts, heads)


def _heads_from_json(joins: object, spans: int, where: str) -> tuple[int, ...]:
    """The ``heads`` column of an entry's ``joins`` (absent: none)."""
    if joins is None:
        return ()
    if not isinstance(joins, list) or not joins:
        raise ManifestError(f"{where}: events' joins is not a list of [span, head]")
    heads = [-1] * spans
    for item in joins:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not all(type(value) is int for value in item)
            or not 0 <= item[1] < item[0] < spans
        ):
            raise ManifestError(
                f"{where}: a join is [span, the earlier span its event begins with], not {item!r}"
            )
        heads[item[0]] = item[1]
    for span, head in enumerate(heads):
        if head >= 0 and heads[head] >= 0:
            raise ManifestError(f"{where}, span {span}: its head {head} continues an event too")
    return tuple(heads)


def _listed_column(column: NDArray[np.int64]) -> list[int]:
    listed: list[int] = column.tolist()
    return listed


def _encoded_column(column: NDArray[np.int64]) -> msgspec.Raw:
    """``column`` as a JSON list, written by the compiled ``_int_lists`` where it is built."""
    if _int_lists is None:
        return msgspec.Raw(msgspec.json.encode(column.tolist()))
    return msgspec.Raw(_int_lists.json_int_list(np.ascontiguousarray(column, np.int64)))


_CODE_TYPE = np.int8
_NONE: NDArray[np.int64] = np.empty(0, np.int64)


def _column(
    values: Iterable[int] | NDArray[np.integer], dtype: type[np.integer] = np.int64
) -> NDArray[Any]:
    """``values`` as a one-dimensional array of ``dtype`` (an array of it as it is)."""
    if isinstance(values, np.ndarray) and values.dtype == dtype:
        return values
    listed = values if isinstance(values, (list, tuple, np.ndarray)) else list(values)
    return np.asarray(listed, dtype=dtype).reshape(-1)


NO_EVENTS = EventRuns()


def events_in(spans: EventRuns, lines: int) -> int:
    """How many events ``lines`` lines hold when ``spans`` are their multiline events."""
    return lines - spans.joined_lines()


def check_spans(spans: EventRuns, lines: int, where: str) -> None:
    """Raises ``ManifestError`` unless ``spans`` are in order, apart, and within ``lines``."""
    end = 0
    for number, (first, count) in enumerate(
        zip(spans.first_lines.tolist(), spans.lines.tolist(), strict=True)
    ):
        if first < end:
            raise ManifestError(f"{where}, event {number}: it overlaps the event before")
        end = first + count
        if end > lines:
            raise ManifestError(
                f"{where}, event {number}: lines {first}..{end - 1} are not all "
                f"among the segment's {lines}"
            )
