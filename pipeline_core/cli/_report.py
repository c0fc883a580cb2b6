"""``sluice report CONFIG``: what the lake tables hold, read through the Iceberg catalog.
Read-only: the metastore (which holds the catalog) must exist and be migrated."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline_core.cli._exit_codes import ExitCode
from pipeline_core.cli._options import json_config_command
from pipeline_core.cli._output import checkpoint_json, checkpoint_line, print_json

COMMITTED_SHOWN = 3


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = "what the lake holds: rows, rows per HTTP status, rejects"
    json_config_command(commands, common, "report", text, run)


def run(args: argparse.Namespace) -> int:
    from pipeline_core.cli._output import read_only_view
    from pipeline_core.lake import summarize_lake
    from pipeline_core.state import newest_checkpoints

    # Reading it checks that the metastore, whose database holds the catalog, is there.
    with read_only_view(args.config) as (config, view):
        checkpoints = newest_checkpoints(config, view, limit=5)
    committed = [c for c in checkpoints if c.committed_at][-COMMITTED_SHOWN:]
    summary = summarize_lake(config)
    if args.json:
        print_json(
            {
                "pipeline": config.name,
                "rows": summary.rows,
                "rejects": summary.rejects,
                "statuses": {t: dict(c) for t, c in summary.statuses.items()},
                "distinct_event_ids": summary.distinct_event_ids,
                "snapshots": summary.snapshots,
                "committed": [checkpoint_json(info) for info in committed],
            }
        )
        return ExitCode.OK
    for line in summary.lines():
        print(line)
    for info in committed:
        print(checkpoint_line(info))
    return ExitCode.OK
