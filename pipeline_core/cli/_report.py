"""``sluice report CONFIG``: what the lake tables hold, read through the Iceberg catalog.
Read-only: the metastore (which holds the catalog) must exist and be migrated."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline_core.cli._exit_codes import ExitCode
from pipeline_core.cli._options import add_json, config_command
from pipeline_core.cli._output import checkpoint_json, checkpoint_line, print_json

COMMITTED_SHOWN = 3


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = "what the lake holds: rows, rows per HTTP status, rejects"
    parser = config_command(commands, common, "report", text)
    add_json(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipeline_core.cli._output import open_operations
    from pipeline_core.lake import summarize_lake

    operations = open_operations(args.config, migrate=False)
    # The status checks that the metastore, whose database holds the catalog, is there.
    checkpoints = operations.checkpoints.status(limit=5).checkpoints
    committed = [c for c in checkpoints if c.committed_at][-COMMITTED_SHOWN:]
    summary = summarize_lake(operations.config)
    if args.json:
        print_json(
            {
                "pipeline": operations.config.name,
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
