"""``sluice compact CONFIG``: lake maintenance (compaction, snapshot expiry, orphan files, the
staging of old committed checkpoints)."""

from __future__ import annotations

import argparse
from datetime import date
from typing import Any

from pipeline_core.cli._exit_codes import ExitCode
from pipeline_core.cli._options import config_command


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = (
        "compact the lake tables' small files, expire old snapshots, remove orphan files and "
        "the staging of committed checkpoints past handoff.retain_hours"
    )
    parser = config_command(commands, common, "compact", text)
    parser.add_argument(
        "--day",
        type=_day,
        help="compact this day partition (YYYY-MM-DD; default: every day before today with "
        "more than one file)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipeline_core.cli._output import open_operations

    with open_operations(args.config, migrate=True) as operations:
        report = operations.retention.maintain(args.day)
    for compaction in report.compactions:
        if compaction.committed:
            print(
                f"compacted {compaction.table} {compaction.day}: {compaction.files_before} "
                f"files -> {compaction.files_after} ({compaction.rows} rows)"
            )
        else:
            print(
                f"left {compaction.table} {compaction.day} as it is "
                f"({compaction.files_before} files)"
            )
    print(
        f"expired {report.expired_snapshots} snapshots, removed {report.orphan_files} orphan "
        f"files, forgot {report.forgotten_checkpoints} checkpoints"
    )
    return ExitCode.OK


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a day (YYYY-MM-DD): {value!r}") from None
