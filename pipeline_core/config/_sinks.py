"""Typed configs of the sinks a sink group can deliver to, besides the handoff sink.

Each model is frozen, rejects unknown keys and carries a ``type`` literal, the discriminator of
the pipeline config's union of sink configs. Relative paths are resolved by the loader against
the config file's folder before a sink is built from them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

import sqlalchemy as sa
from pydantic import Field, field_validator, model_validator

from pipeline_core._compat import StrEnum
from pipeline_core.config._base import _Strict
from pipeline_core.config._secrets import is_credential_header, looks_secret_option

MIB = 1024 * 1024
DEFAULT_DEADLINE_S = 60.0
"""The HTTP sink's default ``deadline_s``: one request, connection to the end of the answer."""
SQL_DIALECTS = ("postgresql", "sqlite")
"""The SQL sink needs ``INSERT ... ON CONFLICT DO NOTHING``: these dialects have it."""
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_TABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,62}$"


class HttpFormat(StrEnum):
    """How the HTTP sink lays out a request body. Both carry one JSON object per line with the
    keys ``event_id``, ``source``, ``file_fingerprint``, ``byte_offset`` and ``message``."""

    NDJSON = "ndjson"
    """One object per line, each ending with ``\\n`` (``application/x-ndjson``)."""
    JSON_ARRAY = "json_array"
    """One JSON array of objects (``application/json``)."""


class HttpSinkConfig(_Strict):
    """POST batches to an HTTP endpoint as JSON (see ``pipeline_core.sinks.HttpSink``)."""

    type: Literal["http"] = "http"
    url: str
    """``http://`` or ``https://`` address the batches are POSTed to."""
    format: HttpFormat = HttpFormat.NDJSON
    gzip: bool = True
    """Compress request bodies (``Content-Encoding: gzip``)."""
    headers: dict[str, str] = {}
    """Extra request headers (for example ``Authorization``)."""
    timeout_s: Annotated[float, Field(gt=0)] = 10.0
    """Seconds to connect, and to wait for each read of a response."""
    deadline_s: Annotated[float, Field(gt=0)] = DEFAULT_DEADLINE_S
    """Seconds one request may take in all: connecting, sending the body and reading the whole
    answer. A server that trickles its answer is cut off then and the request retried, however
    often it sends a byte within ``timeout_s``."""
    max_request_bytes: Annotated[int, Field(ge=1024)] = 4 * MIB
    """A batch whose body would be larger is sent as several requests (uncompressed size)."""
    max_attempts: Annotated[int, Field(ge=1)] = 5
    """Attempts per request before the batch fails, the first included."""
    dead_letter: Path | None = None
    """JSON-lines file for lines the endpoint refuses (HTTP 4xx). Omitted: the file
    ``<data_dir>/dead_letter/<sink name>.jsonl``. Written ``null``: no dead-letter file, a
    refused batch fails with ``SinkRejectedError``."""
    allow_insecure: bool = False
    """Allow credentials (the URL's ``user:password@``, an ``Authorization`` header or another
    credential header such as ``X-Api-Key``) over plain ``http://``, unencrypted. Without it
    such a sink is refused when the config is read."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        try:
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError as exc:
            raise ValueError(f"has an invalid port: {exc}") from exc
        return url

    @field_validator("headers")
    @classmethod
    def _valid_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid header name")
            if "\r" in value or "\n" in value:
                raise ValueError(f"the value of {name!r} holds a line break")
        return headers

    @model_validator(mode="after")
    def _no_credentials_in_the_clear(self) -> HttpSinkConfig:
        parts = urlsplit(self.url)
        if parts.scheme != "http" or self.allow_insecure:
            return self
        found = ["the URL's user:password@"] if parts.username or parts.password else []
        found += [f"header {name}" for name in self.headers if is_credential_header(name)]
        options = [o.partition("=")[0] for o in f"{parts.query}&{parts.fragment}".split("&")]
        found += [f"URL option {name}" for name in options if name and looks_secret_option(name)]
        if found:
            raise ValueError(
                f"credentials ({', '.join(found)}) would be sent unencrypted over plain "
                "http://: use an https:// url, or set allow_insecure: true on the sink"
            )
        return self


class SqlSinkConfig(_Strict):
    """Insert lines into a SQL table, idempotently (see ``pipeline_core.sinks.SqlSink``)."""

    type: Literal["sql"] = "sql"
    url: str
    """SQLAlchemy URL of a PostgreSQL or SQLite database."""
    table: Annotated[str, Field(pattern=_TABLE_NAME)] = "sluice_events"
    """Created if missing."""
    max_attempts: Annotated[int, Field(ge=1)] = 5
    """Attempts per batch before it fails, the first included."""

    @field_validator("url")
    @classmethod
    def _supported_dialect(cls, url: str) -> str:
        try:
            backend = sa.make_url(url).get_backend_name()
        except sa.exc.ArgumentError as exc:
            raise ValueError(f"is not a SQLAlchemy URL: {exc}") from exc
        if backend not in SQL_DIALECTS:
            raise ValueError(f"dialect {backend!r} is not supported ({', '.join(SQL_DIALECTS)})")
        return url


class FileSinkConfig(_Strict):
    """Append raw lines to a local file rotated by size (see
    ``pipeline_core.sinks.RollingFileSink``)."""

    type: Literal["file"] = "file"
    path: Path
    max_bytes: Annotated[int, Field(gt=0)] = 128 * MIB
    """The file is rotated before it would grow past this size (a longer line gets a file of
    its own)."""
    backups: Annotated[int, Field(ge=0)] = 5
    """Rotated files kept, ``<path>.1`` (newest) to ``<path>.<backups>``; 0 keeps none."""


class NullSinkConfig(_Strict):
    """Take every batch and drop it (for trials and benchmarks)."""

    type: Literal["null"] = "null"


class StdoutSinkConfig(_Strict):
    """Print every line to standard output (for trials)."""

    type: Literal["stdout"] = "stdout"
