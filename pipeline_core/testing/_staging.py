"""Reading back what a pipeline has staged, to check delivery in tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipeline_core.config import PipelineConfig
from pipeline_core.staging_contract import MANIFEST_NAME, read_manifest


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
    lines: list[StagedLine] = []
    for manifest_path in sorted(staging_folder(config).glob(f"[0-9]*/*/{MANIFEST_NAME}")):
        batch = manifest_path.parent
        manifest = read_manifest(batch)
        for part in manifest.parts:
            data = (batch / part.name).read_bytes()
            for segment in part.segments:
                offset, begin = segment.start_offset, segment.part_offset
                for line in _split(data[begin : begin + segment.length]):
                    lines.append(
                        StagedLine(
                            segment.file_fingerprint,
                            offset,
                            line.removesuffix(b"\n"),
                            manifest.checkpoint_id,
                            segment.line_bytes,
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
