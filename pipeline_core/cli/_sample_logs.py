"""``sluice sample-logs FOLDER``: append sample nginx access logs (demos and tests)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline_core.cli._exit_codes import ExitCode


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = "append sample nginx access logs to a folder"
    parser = commands.add_parser("sample-logs", parents=[common], help=text, description=text)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--malformed", type=int, default=25, help="malformed lines to plant")
    parser.add_argument("--seed", type=int, default=None)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipeline_core.testing import append_sample_access_logs

    written = append_sample_access_logs(
        args.folder, lines=args.lines, malformed=args.malformed, seed=args.seed
    )
    print(
        f"wrote {written.lines} lines ({written.malformed} malformed) to {args.folder}"
        + (f", rotated {written.rotated}" if written.rotated else "")
    )
    return ExitCode.OK
