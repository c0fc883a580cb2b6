"""A program that logs through Python's ``logging`` what real programs log: lines, and failures
with their tracebacks (``logger.exception``: chained exceptions, exception groups, carets,
``stack_info``). :mod:`tests.support.log_programs` runs it in a process of its own; it is run
by its path (``python .../python_log_program.py``), so that its tracebacks show its source
lines, as a real program's do.

Every record goes to two handlers: a ``logging.FileHandler`` (or ``WatchedFileHandler``) on the
log, and the ground truth: a handler that writes what the same formatter made of the record
(``Formatter.format(record)``, which is what the log's handler writes before its ``\\n``) as
one JSON string a line, flushed at once. The log's handler comes first: a record in the truth
is in the log; after a SIGKILL the log may hold one record more than the truth.

Which records are written is drawn from ``--seed``: the same arguments write the same records,
only their times differ. SIGTERM ends the program after the record it is writing.
"""

from __future__ import annotations

import argparse
import json
import logging
import logging.handlers
import random
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

WORDS = (
    "checkpoint", "segment", "lake", "rotation", "inotify", "batch", "manifest", "café",
    "Zürich", "日本語", "offset", "fingerprint", "snapshot", "landing", "tail", "ring",
)  # fmt: skip
LOGGERS = ("sluice.collector", "sluice.collector.reader", "sluice.landing", "airflow.task")


class TruthHandler(logging.Handler):
    """Writes each record as its formatter formats it, one JSON string a line, flushed; with
    ``fields``, a JSON object instead: the formatted record under ``record``, and its
    attributes (``level``, ``logger``, ``message``, ``exception``: the text ``logging``
    appended to the message, or null; ``created``, ``filename``, ``lineno``, ``func_name``,
    ``process``, ``thread_name``)."""

    def __init__(self, stream: TextIO, fields: bool = False) -> None:
        super().__init__()
        self.stream = stream
        self.fields = fields

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            entry: object = text
            if self.fields:
                assert self.formatter is not None
                head = self.formatter.formatMessage(record)
                entry = {
                    "record": text + "\n",
                    "level": record.levelname,
                    "logger": record.name,
                    "message": record.getMessage(),
                    "exception": text[len(head) + 1 :] if len(text) > len(head) else None,
                    "created": record.created,
                    "filename": record.filename,
                    "lineno": record.lineno,
                    "func_name": record.funcName,
                    "process": record.process,
                    "thread_name": record.threadName,
                }
            self.stream.write(json.dumps(entry) + "\n")
            self.stream.flush()
        except Exception:
            self.handleError(record)


class SplittingFileHandler(logging.handlers.WatchedFileHandler):
    """Writes a share of the multiline records in two writes, a pause between them, as a
    buffered appender does with a record larger than its buffer (log4j2's file appender
    flushes every 8 KiB): a reader may find the record's head without its tail. It reopens the
    file once it was renamed or removed, if ``reopen``. A record is split after the line that
    ends at or after its middle, or before its first line that starts with ``before`` if one
    does."""

    def __init__(
        self,
        path: Path,
        *,
        reopen: bool,
        share: float,
        pause: float,
        rng: random.Random,
        before: str | None = None,
    ) -> None:
        super().__init__(path, encoding="utf-8")
        self._reopen, self._share, self._pause, self._rng = reopen, share, pause, rng
        self._before = None if before is None else "\n" + before

    def emit(self, record: logging.LogRecord) -> None:
        if self._reopen:
            self.reopenIfNeeded()
        try:
            text = self.format(record) + self.terminator
            if self.stream is None:
                self.stream = self._open()
            stream = self.stream
            if "\n" in text[:-1] and self._rng.random() < self._share:
                middle = text.index("\n", len(text) // 2 - 1) + 1  # after a whole line
                if self._before is not None and self._before in text:
                    middle = text.index(self._before) + 1
                stream.write(text[:middle])
                stream.flush()
                time.sleep(self._pause)
                text = text[middle:]
            stream.write(text)
            stream.flush()
        except Exception:
            self.handleError(record)


def configure(
    log: Path,
    truth: Path,
    fmt: str,
    reopen: bool = False,
    split_share: float = 0.0,
    split_pause: float = 0.0,
    truth_fields: bool = False,
) -> logging.Logger:
    """The root logger, logging at DEBUG to ``log`` (appending; a ``WatchedFileHandler`` if
    ``reopen``: it opens the file anew once it was renamed or removed) and to ``truth``
    (appending), both formatted with ``fmt``. With ``split_share``, that share of the multiline
    records is written in two writes ``split_pause`` seconds apart (``SplittingFileHandler``)."""
    formatter = logging.Formatter(fmt)
    handler: logging.Handler
    if split_share:
        handler = SplittingFileHandler(
            log, reopen=reopen, share=split_share, pause=split_pause, rng=random.Random(5917)
        )
    elif reopen:
        handler = logging.handlers.WatchedFileHandler(log, encoding="utf-8")
    else:
        handler = logging.FileHandler(log, encoding="utf-8")
    truth_handler = TruthHandler(truth.open("a", encoding="utf-8"), truth_fields)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    for each in (handler, truth_handler):  # the log first: a record in the truth is in the log
        each.setFormatter(formatter)
        root.addHandler(each)
    return root


# -- failures: each raises, from code with frames, source lines and carets ----------------------


class PipelineError(Exception):
    """An exception of the program's own."""


def _lookup(table: dict[str, dict[str, int]], key: str) -> int:
    return table["sources"][key] + 1


def _key_error(rng: random.Random) -> None:
    _lookup({"sources": {}}, rng.choice(WORDS))


def _raised_from(rng: random.Random) -> None:
    try:
        _key_error(rng)
    except KeyError as exc:
        raise PipelineError(f"cannot read the {rng.choice(WORDS)} config") from exc


def _while_handling(rng: random.Random) -> None:
    try:
        int(rng.choice(WORDS))
    except ValueError:
        print({"offsets": [1]}["offsets"][rng.randint(2, 5)])


def _cause_never_raised(rng: random.Random) -> None:
    # A cause made, not raised: its section of the traceback has no frames and no header.
    raise RuntimeError(f"{rng.choice(WORDS)} failed") from ConnectionError("peer reset")


def _no_message(rng: random.Random) -> None:
    raise TimeoutError


def _os_error(rng: random.Random) -> None:
    with open(f"/nonexistent/{rng.choice(WORDS)}.log", "rb") as missing:
        missing.read()


def _syntax_error(rng: random.Random) -> None:
    compile(f"x = ({rng.randint(1, 9)},\n  {rng.choice(WORDS)!r}", "<pipeline.yaml>", "exec")


def _recursion(rng: random.Random, depth: int = 0) -> int:
    return _recursion(rng, depth + 1) + 1


def _exception_group(rng: random.Random) -> None:
    if sys.version_info < (3, 11):
        _raised_from(rng)
        return
    errors: list[Exception] = []
    for word in rng.sample(WORDS, 2):
        try:
            _lookup({"sources": {}}, word)
        except KeyError as exc:
            errors.append(exc)
    inner = ExceptionGroup("landing", [ValueError(rng.choice(WORDS)), TypeError("not a str")])  # noqa: F821
    raise ExceptionGroup("checkpoint failed", [*errors, inner])  # noqa: F821


def _caret_expression(rng: random.Random) -> None:
    rows: dict[str, dict[str, int] | None] = {"a": None}
    print(rng.randint(1, 9) + rows["a"]["b"])  # type: ignore[index]


FAILURES: tuple[Callable[[random.Random], object], ...] = (
    _key_error,
    _raised_from,
    _while_handling,
    _cause_never_raised,
    _no_message,
    _os_error,
    _syntax_error,
    _recursion,
    _exception_group,
    _caret_expression,
)


def _multiline_failure(rng: random.Random) -> None:
    error = ValueError(f"bad rows:\nrow 1: {rng.choice(WORDS)}\nrow 2: {rng.choice(WORDS)}")
    if sys.version_info >= (3, 11):
        error.add_note(f"while reading {rng.choice(WORDS)}")
    raise error


# -- the records ---------------------------------------------------------------------------------


def log_one(
    rng: random.Random, tracebacks: float, stacks: float, multiline: float, long: float = 0.0
) -> None:
    """Log one record, drawn from ``rng``: a failure with its traceback (a share ``tracebacks``),
    a line with ``stack_info`` (``stacks``), a message of several lines or a failure whose
    message has several lines and a note (``multiline``), a line of 17 to 60 KiB of ASCII
    (``long``: longer than a container runtime's 16 KiB entries), or a plain line."""
    logger = logging.getLogger(rng.choice(LOGGERS))
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
    draw = rng.random()
    if draw < long:  # ASCII: a runtime's 16 KiB entries cut a line between any two bytes
        size = rng.randint(17 * 1024, 60 * 1024)
        ascii_words = " ".join(word for word in words.split() if word.isascii()) or "ring"
        logger.info("payload %s", (ascii_words + " ") * (size // (len(ascii_words) + 1)))
        return
    draw -= long
    if draw < tracebacks:
        failure = rng.choice(FAILURES)
        try:
            failure(rng)
        except BaseException:
            name = failure.__name__.strip("_")
            logger.exception("%s failed: %s", name, words, stack_info=rng.random() < 0.1)
        return
    draw -= tracebacks
    if draw < stacks:
        logger.warning("slow %s", words, stack_info=True)
        return
    draw -= stacks
    if draw < multiline:
        if rng.random() < 0.5:
            logger.info("read %d rows:\n%s", 2, "\n".join(rng.sample(WORDS, 2)))
        else:
            try:
                _multiline_failure(rng)
            except ValueError:
                logger.exception("rows failed")
        return
    level = rng.choice((logging.DEBUG, logging.INFO, logging.INFO, logging.WARNING, logging.ERROR))
    logger.log(level, "%s %d: %s", rng.choice(WORDS), rng.randint(0, 10**6), words)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--truth", type=Path, required=True)
    parser.add_argument("--format", required=True)
    parser.add_argument("--events", type=int, default=None, help="stop after so many records")
    parser.add_argument("--rate", type=float, default=None, help="records a second (no pause)")
    parser.add_argument("--tracebacks", type=float, default=0.1)
    parser.add_argument("--stacks", type=float, default=0.02)
    parser.add_argument("--multiline", type=float, default=0.0)
    parser.add_argument("--long", type=float, default=0.0)
    parser.add_argument("--truth-fields", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reopen", action="store_true")
    parser.add_argument("--split-share", type=float, default=0.0)
    parser.add_argument("--split-pause", type=float, default=0.0)
    args = parser.parse_args(argv)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    configure(
        args.log,
        args.truth,
        args.format,
        args.reopen,
        args.split_share,
        args.split_pause,
        args.truth_fields,
    )
    rng = random.Random(args.seed)
    started = time.monotonic()
    written = 0
    while not stopping and (args.events is None or written < args.events):
        if args.rate:
            pause = started + written / args.rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        log_one(rng, args.tracebacks, args.stacks, args.multiline, args.long)
        written += 1
    logging.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
