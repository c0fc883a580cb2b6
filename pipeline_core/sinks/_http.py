"""``HttpSink``: POST batches to an HTTP endpoint as JSON, over one persistent connection."""

from __future__ import annotations

import gzip
import http.client
import json
import logging
import os
import ssl
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

from pipeline_core.config._sinks import HttpFormat
from pipeline_core.errors import EventDeliveryException, SinkRejectedError
from pipeline_core.sinks._batch import DeliveryBatch, LogEvent
from pipeline_core.sinks._retry import RetryPolicy, call_with_retry
from pipeline_core.sinks._sink import BatchSink

log = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({408, 429})
"""Besides every 5xx: answers that say "not now" rather than "never"."""
_CONTENT_TYPES = {
    HttpFormat.NDJSON: "application/x-ndjson",
    HttpFormat.JSON_ARRAY: "application/json",
}
_DETAIL_CHARS = 1000


class HttpStatusError(Exception):
    """The endpoint answered a request with a status other than 2xx."""

    def __init__(self, status: int, reason: str, detail: str, retry_after: float | None) -> None:
        self.status = status
        self.reason = reason
        self.detail = detail
        self.retry_after = retry_after
        super().__init__(f"HTTP {status} {reason}" + (f": {detail}" if detail else ""))

    @property
    def retryable(self) -> bool:
        return self.status in RETRYABLE_STATUSES or self.status >= 500

    @property
    def refused(self) -> bool:
        """The endpoint refused the lines for good (a 4xx that is not retryable)."""
        return 400 <= self.status < 500 and not self.retryable


class HttpSink(BatchSink):
    """POSTs each batch as JSON records, one per line: ``event_id``, ``source``,
    ``file_fingerprint``, ``byte_offset`` and ``message`` (the line as text: invalid UTF-8 is
    replaced by U+FFFD, a NUL byte travels as ``\\u0000``). A line longer than
    ``max_line_bytes`` is sent as its first bytes (at most 1 KiB) with ``"truncated": true``
    and ``line_bytes``, its whole length; no other record has those keys.

    A batch larger than ``max_request_bytes`` (uncompressed body) is split into several
    requests at record boundaries; a single record larger than that goes alone. Each request
    is retried on its own, through ``retry``:

    * 2xx: accepted.
    * 408, 429, 5xx, connection errors and timeouts: retried with jittered exponential backoff;
      a ``Retry-After`` header in seconds sets the wait instead (capped at ``retry.max_wait_s``).
      When the attempts are exhausted ``deliver`` raises ``EventDeliveryException``.
    * any other 4xx: refused for good. The request's records go to the ``dead_letter`` file,
      one JSON object a line (``sink``, ``status``, ``reason``, ``response``, ``refused_at``,
      ``event``), and the request counts as delivered; without a dead-letter file ``deliver``
      raises ``SinkRejectedError``.
    * anything else (1xx, 3xx: redirects are not followed): ``EventDeliveryException``.

    Delivery is at least once. When a request fails after earlier requests of the same batch
    were accepted, the batch stays in the channel; the next ``deliver`` of that same batch
    object resumes after the accepted requests, but a batch put again after a ring rewind is
    sent whole. Receivers de-duplicate on ``event_id``.

    Threading model: called from its group's delivery thread only; the connection is opened on
    first use, kept alive between requests and reopened after any failure.
    """

    def __init__(
        self,
        name: str,
        url: str,
        *,
        format: HttpFormat = HttpFormat.NDJSON,
        gzip: bool = True,
        headers: dict[str, str] | None = None,
        timeout_s: float = 10.0,
        max_request_bytes: int = 4 * 1024 * 1024,
        dead_letter: Path | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(name)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"http sink {name!r}: {url!r} is not an http:// or https:// URL")
        if max_request_bytes < 1:
            raise ValueError("max_request_bytes must be positive")
        self.url = url
        self.format = format
        self.gzip = gzip
        self.timeout_s = timeout_s
        self.max_request_bytes = max_request_bytes
        self.dead_letter = dead_letter
        self.retry = retry or RetryPolicy()
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = _merge_headers(
            {"Content-Type": _CONTENT_TYPES[format], "User-Agent": "sluice"}, headers or {}
        )
        if gzip:
            self._headers["Content-Encoding"] = "gzip"
        self._connection: http.client.HTTPConnection | None = None
        self._resume: tuple[DeliveryBatch, int] | None = None

    def stop(self) -> None:
        self._disconnect()
        self._resume = None

    def deliver(self, batch: DeliveryBatch) -> None:
        requests = self._split(batch)
        first = self._resume[1] if self._resume and self._resume[0] is batch else 0
        for index in range(first, len(requests)):
            self._send(requests[index], f"request {index + 1}/{len(requests)}")
            self._resume = (batch, index + 1)
        self._resume = None

    # -- building requests --------------------------------------------------------------------

    def _split(self, batch: DeliveryBatch) -> list[list[bytes]]:
        """The batch's records, grouped into request bodies of at most ``max_request_bytes``."""
        overhead = 1 if self.format is HttpFormat.JSON_ARRAY else 0  # "[", "]", one comma less
        requests: list[list[bytes]] = []
        current: list[bytes] = []
        size = overhead
        for event in batch.events():
            record = _record(event)
            cost = len(record) + 1  # its newline or comma
            if current and size + cost > self.max_request_bytes:
                requests.append(current)
                current, size = [], overhead
            current.append(record)
            size += cost
        if current:
            requests.append(current)
        return requests

    def _body(self, records: list[bytes]) -> bytes:
        if self.format is HttpFormat.JSON_ARRAY:
            body = b"[" + b",".join(records) + b"]"
        else:
            body = b"\n".join(records) + b"\n"
        return gzip.compress(body, mtime=0) if self.gzip else body

    # -- sending ------------------------------------------------------------------------------

    def _send(self, records: list[bytes], which: str) -> None:
        body = self._body(records)
        attempts = 0

        def attempt() -> None:
            nonlocal attempts
            attempts += 1
            self._post(body)

        try:
            call_with_retry(
                attempt,
                is_retryable=_is_retryable,
                policy=self.retry,
                what=f"http sink {self.name!r}: POST {self._target} ({which})",
                wait_hint=_retry_after,
            )
        except HttpStatusError as exc:
            if not exc.refused:
                raise self._failed(which, attempts, exc) from exc
            self._refuse(records, exc)
        except (OSError, http.client.HTTPException) as exc:
            raise self._failed(which, attempts, exc) from exc

    def _failed(self, which: str, attempts: int, exc: Exception) -> EventDeliveryException:
        tries = "attempt" if attempts == 1 else "attempts"
        return EventDeliveryException(
            f"http sink {self.name!r}: POST {self.url} ({which}) failed after {attempts} "
            f"{tries}: {exc}"
        )

    def _post(self, body: bytes) -> None:
        """One attempt. Raises ``OSError``/``HTTPException`` (connection) or
        ``HttpStatusError``; the connection is closed after a connection failure."""
        connection = self._connection or self._connect()
        try:
            connection.request("POST", self._target, body=body, headers=self._headers)
            response = connection.getresponse()
            content = response.read()
        except (OSError, http.client.HTTPException):
            self._disconnect()
            raise
        if response.will_close:
            self._disconnect()
        if 200 <= response.status < 300:
            return
        detail = content[:_DETAIL_CHARS].decode("utf-8", errors="replace").strip()
        retry_after = _parse_retry_after(response.getheader("Retry-After"))
        raise HttpStatusError(response.status, response.reason, detail, retry_after)

    def _connect(self) -> http.client.HTTPConnection:
        if self._https:
            self._connection = http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout_s, context=ssl.create_default_context()
            )
        else:
            self._connection = http.client.HTTPConnection(
                self._host, self._port, timeout=self.timeout_s
            )
        return self._connection

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # -- refused lines ------------------------------------------------------------------------

    def _refuse(self, records: list[bytes], error: HttpStatusError) -> None:
        """Write refused records to the dead-letter file, or raise ``SinkRejectedError``."""
        message = (
            f"http sink {self.name!r}: {self.url} refused {len(records)} lines: "
            f"HTTP {error.status} {error.reason}"
        )
        if self.dead_letter is None:
            raise SinkRejectedError(message) from error
        header = json.dumps(
            {
                "sink": self.name,
                "status": error.status,
                "reason": error.reason,
                "response": error.detail,
                "refused_at": datetime.now(timezone.utc).isoformat(),
            },
            ensure_ascii=False,
        ).encode()
        prefix = header[:-1] + b', "event": '
        try:
            self.dead_letter.parent.mkdir(parents=True, exist_ok=True)
            with self.dead_letter.open("ab") as file:
                file.write(b"".join(prefix + record + b"}\n" for record in records))
                file.flush()
                os.fsync(file.fileno())
        except OSError as exc:
            raise EventDeliveryException(
                f"{message}; cannot write them to the dead-letter file {self.dead_letter}: {exc}"
            ) from exc
        log.warning("%s; written to %s", message, self.dead_letter)


def _record(event: LogEvent) -> bytes:
    """The event's JSON record; an over-long line's ``message`` is its prefix, marked with
    ``"truncated": true`` and its whole length ``line_bytes``."""
    record: dict[str, object] = {
        "event_id": event.event_id,
        "source": event.source,
        "file_fingerprint": event.fingerprint,
        "byte_offset": event.byte_offset,
        "message": event.text(),
    }
    if event.truncated:
        record.update(truncated=True, line_bytes=event.line_bytes)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, HttpStatusError):
        return exc.retryable
    return isinstance(exc, OSError | http.client.HTTPException)


def _retry_after(exc: BaseException) -> float | None:
    return exc.retry_after if isinstance(exc, HttpStatusError) else None


def _parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds; an HTTP date or garbage means "use the backoff"."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _merge_headers(defaults: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """``defaults`` overridden by ``extra``, header names compared case-insensitively."""
    overridden = {name.lower() for name in extra}
    merged = {name: value for name, value in defaults.items() if name.lower() not in overridden}
    merged.update(extra)
    return merged
