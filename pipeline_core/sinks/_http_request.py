"""What the HTTP sink sends: each event's JSON record, a batch's records grouped into request
bodies, the request's headers, and the secrets in its URL and headers that it never shows."""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Mapping
from urllib.parse import SplitResult, unquote, unquote_plus

from pipeline_core.config._secrets import is_credential_header, looks_secret_option
from pipeline_core.config._sinks import HttpFormat
from pipeline_core.sinks._batch import DeliveryBatch, LogEvent

CONTENT_TYPES = {
    HttpFormat.NDJSON: "application/x-ndjson",
    HttpFormat.JSON_ARRAY: "application/json",
}
"""The ``Content-Type`` of each body layout."""
_MIN_SECRET_CHARS = 4
"""Shorter secret values are hidden in URLs only (masking every ``"ab"`` of a message would
garble it)."""


def request_records(
    batch: DeliveryBatch, format: HttpFormat, max_request_bytes: int
) -> list[list[bytes]]:
    """The batch's records (:func:`event_record`), grouped into request bodies of at most
    ``max_request_bytes`` (uncompressed, once laid out as ``format``); a single record larger
    than that goes alone."""
    overhead = 1 if format is HttpFormat.JSON_ARRAY else 0  # "[", "]", one comma less
    requests: list[list[bytes]] = []
    current: list[bytes] = []
    size = overhead
    for event in batch.events():
        record = event_record(event)
        cost = len(record) + 1  # its newline or comma
        if current and size + cost > max_request_bytes:
            requests.append(current)
            current, size = [], overhead
        current.append(record)
        size += cost
    if current:
        requests.append(current)
    return requests


def request_body(records: list[bytes], format: HttpFormat, compress: bool) -> bytes:
    """One request's body: ``records`` laid out as ``format``, gzipped when ``compress``."""
    if format is HttpFormat.JSON_ARRAY:
        body = b"[" + b",".join(records) + b"]"
    else:
        body = b"\n".join(records) + b"\n"
    return gzip.compress(body, mtime=0) if compress else body


def event_record(event: LogEvent) -> bytes:
    """The event's JSON record; an over-long line's ``message`` is its prefix, marked with
    ``"truncated": true`` and its whole length ``line_bytes``; a multiline event's ``message``
    holds its lines, with ``event_lines`` and, if a bound or a missing head cut it, ``cut``."""
    record: dict[str, object] = {
        "event_id": event.event_id,
        "source": event.source,
        "file_fingerprint": event.fingerprint,
        "byte_offset": event.byte_offset,
        "message": event.text(),
    }
    if event.truncated:
        record.update(truncated=True, line_bytes=event.line_bytes)
    if event.lines > 1 or event.cut is not None:
        record.update(event_lines=event.lines)
    if event.cut is not None:
        record.update(cut=event.cut.value)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def request_headers(
    parts: SplitResult, format: HttpFormat, configured: Mapping[str, str]
) -> dict[str, str]:
    """The headers of every request: ``Content-Type`` (``format``'s), ``User-Agent`` and, for
    the URL's ``user:password@``, HTTP Basic ``Authorization``, each overridden by a
    ``configured`` header of the same name (compared case-insensitively)."""
    defaults = {"Content-Type": CONTENT_TYPES[format], "User-Agent": "sluice"}
    basic = _basic_credentials(parts)
    if basic is not None:
        defaults["Authorization"] = basic  # a configured Authorization header wins
    return _merge_headers(defaults, configured)


def secret_values(parts: SplitResult, headers: Mapping[str, str]) -> list[str]:
    """What the sink must never show: the URL's password, the values of its options named
    like secrets (as written and decoded) and of its credential headers (and their last
    word: the token of ``Bearer <token>``)."""
    values = []
    if parts.password:
        values += [parts.password, unquote(parts.password)]
    for option in re.split("[&;]", f"{parts.query}&{parts.fragment}"):
        name, _, value = option.partition("=")
        if value and looks_secret_option(unquote_plus(name)):
            values += [value, unquote_plus(value)]
    for name, value in headers.items():
        if is_credential_header(name):
            values += [value, value.split()[-1] if value.split() else value]
    return [value for value in values if len(value) >= _MIN_SECRET_CHARS]


def _basic_credentials(parts: SplitResult) -> str | None:
    """The ``Authorization`` value for the URL's ``user:password@`` (HTTP Basic), if any."""
    if parts.username is None and parts.password is None:
        return None
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


def _merge_headers(defaults: dict[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """``defaults`` overridden by ``extra``, header names compared case-insensitively."""
    overridden = {name.lower() for name in extra}
    merged = {name: value for name, value in defaults.items() if name.lower() not in overridden}
    merged.update(extra)
    return merged
