"""``sluice``'s entry point: the parser, the options every command takes, failures as one line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from pipeline_core.cli import (
    _collect,
    _compact,
    _db,
    _formats,
    _land,
    _report,
    _sample_logs,
    _status,
    _validate,
)
from pipeline_core.cli._exit_codes import ExitCode, exit_code_of
from pipeline_core.cli._options import common_options, verbosity
from pipeline_core.cli._output import json_output
from pipeline_core.errors import SluiceError

COMMANDS = (
    _validate,
    _collect,
    _land,
    _compact,
    _status,
    _report,
    _db,
    _formats,
    _sample_logs,
)
"""Each module adds its subcommand (``add_to``) with its handler as the ``handler`` default."""

Handler = Callable[[argparse.Namespace], int]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sluice ARGS`` (``argv``, by default the process's); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = verbosity(args)
    _configure_logging(level)
    handler: Handler = args.handler
    try:
        with json_output(getattr(args, "json", False)):
            return int(handler(args))
    except SluiceError as exc:
        _fail(str(exc), exc, level)
        return exit_code_of(exc)
    except KeyboardInterrupt:
        print("sluice: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # not a failure Sluice knows: still one line, -v for the rest
        _fail(f"unexpected {type(exc).__name__}: {exc}", exc, level)
        return ExitCode.FAILED


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = argparse.ArgumentParser(
        prog="sluice",
        description="Collect log files into sealed checkpoints and land them into the lake.",
        parents=[common],
        epilog="exit status: 0 ok, 1 failed, 2 invalid config or arguments, 3 unreachable "
        "(metastore, catalog, sink), 4 metastore missing or not migrated (sluice db upgrade), "
        "5 another collector holds the lease, 130 interrupted",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add_to(commands, common)
    return parser


def _configure_logging(level: int) -> None:
    logging.basicConfig(
        level=logging.DEBUG if level >= 2 else logging.INFO if level == 1 else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if level < 2:
        for noisy in ("alembic", "py4j"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    if level == 0:
        # Airflow's own logging (read when it is imported, e.g. by `land`) relays spark-submit.
        os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")


def _fail(message: str, exc: BaseException, level: int) -> None:
    if level:
        traceback.print_exception(exc, file=sys.stderr)
    from pipeline_core.errors import ConfigError, LandingError

    lines = message.splitlines() or [""]
    if not isinstance(exc, (ConfigError, LandingError)):  # those list the keys, Spark's output
        lines = lines[:1]  # drivers add hints and links below: -v shows them
    print("sluice: error: " + "\n".join(lines), file=sys.stderr)
    if not level and not isinstance(exc, SluiceError):
        print("sluice: run again with -v to see the traceback", file=sys.stderr)
