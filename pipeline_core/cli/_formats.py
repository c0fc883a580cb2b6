"""``sluice formats``: the source formats, with the columns each lands."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline_core.cli._exit_codes import ExitCode


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = "list the source formats, with the columns, event time and rejects of each"
    parser = commands.add_parser("formats", parents=[common], help=text, description=text)
    parser.add_argument(
        "--markdown", action="store_true", help="the whole table, as docs/formats.md holds it"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipeline_core.formats import FORMATS, formats_markdown

    if args.markdown:
        print(formats_markdown(), end="")
        return ExitCode.OK
    for spec in FORMATS.values():
        columns = ", ".join(f"{column.name} ({column.type.value})" for column in spec.columns)
        print(f"{spec.name.value}: {columns}")
    return ExitCode.OK
