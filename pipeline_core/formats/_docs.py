"""The formats as documentation: the table of ``docs/formats.md`` and of ``sluice formats``,
made from the registry, so the documentation cannot drift from what lands."""

from __future__ import annotations

from pipeline_core.formats._registry import FORMATS

COMMON_COLUMNS = (
    ("event_id", "string", "``<file_fingerprint>:<byte_offset>``: the event's id in every sink."),
    ("file_fingerprint", "string", "The source file's identity."),
    ("byte_offset", "long", "The event's first byte in its file."),
    ("host", "string", "The collector's host."),
    ("event_time", "timestamp", "The event's time (per format, below), UTC."),
)
"""The columns every source table starts with (``checkpoint_id``, long, ends it)."""


def formats_markdown() -> str:
    """Every format: what it reads, its columns with their types, its event time and its
    reject reasons, as Markdown."""
    out = [
        "# Source formats",
        "",
        "Made by `sluice formats --markdown` from `pipeline_core.formats.FORMATS` (each format",
        "defined once, in its family's module under `pipeline_core/formats/`); do not edit by",
        "hand.",
        "",
        "Every source table has these columns first, and `checkpoint_id` (long) last:",
        "",
        "| column | type | |",
        "|---|---|---|",
        *(f"| `{name}` | {kind} | {_md(doc)} |" for name, kind, doc in COMMON_COLUMNS),
        "",
    ]
    for spec in FORMATS.values():
        out += [
            f"## `{spec.name.value}`",
            "",
            _md(spec.summary),
            "",
            "| column | type | |",
            "|---|---|---|",
            *(
                f"| `{column.name}` | {_md_type(column.type.value)} | {_md(column.doc)} |"
                for column in spec.columns
            ),
            *([f"| declared by the source | | {_md(spec.declared)} |"] if spec.declared else []),
            "",
            f"**Event time:** {_md(spec.event_time)}",
            "",
            "**Rejects:** " + ", ".join(f"`{reason.value}`" for reason in spec.rejects),
            "",
        ]
    return "\n".join(out)


def _md_type(kind: str) -> str:
    """A type as Markdown text (``map<string,string>`` is no HTML tag)."""
    return kind.replace("<", "\\<")


def _md(text: str) -> str:
    """reStructuredText's double backquotes as Markdown's."""
    return text.replace("``", "`").replace("\\n", "\\\\n").replace("|", "\\|")
