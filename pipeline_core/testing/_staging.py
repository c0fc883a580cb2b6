"""Reading back what a pipeline has staged, to check delivery in tests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pipeline_core.config import PipelineConfig
from pipeline_core.sinks import MANIFEST_NAME


@dataclass(frozen=True, order=True)
class StagedLine:
    fingerprint: str
    offset: int
    line: bytes
    checkpoint_id: int
    line_bytes: int | None = field(default=None, compare=False)
    """An over-long line's whole length (``line`` is then its prefix); None for the others."""


def staged_lines(config: PipelineConfig) -> list[StagedLine]:
    """Every line in every sealed batch folder of the pipeline, sorted by file and offset (an
    over-long line as its staged prefix, with ``line_bytes``)."""
    root = config.staging_dir / config.name
    lines: list[StagedLine] = []
    for manifest_path in sorted(root.glob(f"[0-9]*/*/{MANIFEST_NAME}")):
        manifest = json.loads(manifest_path.read_text())
        for part in manifest["parts"]:
            data = (manifest_path.parent / part["name"]).read_bytes()
            for segment in part["segments"]:
                fingerprint, offset = str(segment["file_fingerprint"]), int(segment["start_offset"])
                begin = int(segment["part_offset"])
                line_bytes = segment.get("line_bytes")
                for line in _split(data[begin : begin + int(segment["length"])]):
                    lines.append(
                        StagedLine(
                            fingerprint,
                            offset,
                            line.removesuffix(b"\n"),
                            int(manifest["checkpoint_id"]),
                            None if line_bytes is None else int(line_bytes),
                        )
                    )
                    offset += len(line)
    return sorted(lines)


def _split(data: bytes) -> list[bytes]:
    """The lines of a segment, each with its newline (the last may lack one)."""
    lines = [line + b"\n" for line in data.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    return [line for line in lines if line]


def staged_payloads(config: PipelineConfig) -> list[bytes]:
    """Just the lines' bytes, in file and offset order."""
    return [line.line for line in staged_lines(config)]


def staging_folder(config: PipelineConfig) -> Path:
    return config.staging_dir / config.name
