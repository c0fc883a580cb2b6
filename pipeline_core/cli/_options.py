"""The options every ``sluice`` command takes, before or after the command's name."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any


def common_options() -> argparse.ArgumentParser:
    """A parent parser: ``-v``/``--verbose`` (repeatable), ``--debug``, ``--info`` and
    ``--version``. Their defaults are suppressed so that an option given before the command
    is not reset by the command's own parser; read them with :func:`verbosity`."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("output")
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="progress logging and a traceback with any failure (-vv: debug logging)",
    )
    group.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="debug logging and a traceback with any failure (as -vv)",
    )
    group.add_argument(
        "--info", action="store_true", default=argparse.SUPPRESS, help="progress logging"
    )
    group.add_argument("--version", action="version", version=f"sluice {version()}")
    return common


def verbosity(args: argparse.Namespace) -> int:
    """0: warnings only; 1: progress logging (``-v``, ``--info``); 2: debug (``-vv``,
    ``--debug``). From 1 on, failures come with their traceback."""
    if getattr(args, "debug", False):
        return 2
    return max(min(int(getattr(args, "verbose", 0)), 2), 1 if getattr(args, "info", False) else 0)


def version() -> str:
    """The installed distribution's version."""
    try:
        return metadata.version("sluice")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document on stdout instead of text (progress stays on stderr)",
    )


CONFIG_HELP = "pipeline config file (YAML)"


def config_command(
    commands: Any,
    common: argparse.ArgumentParser,
    name: str,
    text: str,
    *,
    config_help: str = CONFIG_HELP,
) -> argparse.ArgumentParser:
    """A subcommand ``name`` taking the common options and one pipeline ``config`` argument."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, parents=[common], help=text, description=text
    )
    parser.add_argument("config", type=Path, help=config_help)
    return parser


def json_config_command(
    commands: Any,
    common: argparse.ArgumentParser,
    name: str,
    text: str,
    handler: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """A :func:`config_command` with ``--json``, run by ``handler``."""
    parser = config_command(commands, common, name, text)
    add_json(parser)
    parser.set_defaults(handler=handler)
    return parser
