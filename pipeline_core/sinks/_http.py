"""``HttpSink``: POST batches to an HTTP endpoint as JSON, over one persistent connection.

Here: each request's attempts within its deadline, the retries, the refused lines' dead-letter
file. What a request holds (records, bodies, headers, the secrets never shown) is built by
``_http_request``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import socket
import ssl
import threading
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

from pipeline_core._file_modes import make_private_dirs, open_private
from pipeline_core.config._secrets import SecretMask, mask_url_passwords
from pipeline_core.config._sinks import DEFAULT_DEADLINE_S, HttpFormat
from pipeline_core.errors import EventDeliveryException, SinkRejectedError
from pipeline_core.sinks._batch import DeliveryBatch
from pipeline_core.sinks._http_request import (
    request_body,
    request_headers,
    request_records,
    secret_values,
)
from pipeline_core.sinks._retry import RetryPolicy, call_with_retry
from pipeline_core.sinks._sink import BatchSink

log = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({408, 429})
"""Besides every 5xx: answers that say "not now" rather than "never"."""
_DETAIL_CHARS = 1000
"""Characters of an error answer's body quoted in the error (after masking)."""
MAX_RESPONSE_BYTES = 64 * 1024
"""The most of a response's body the sink reads: a 2xx answer's body is read only to keep the
connection alive, an error's to quote its start. A longer body is never read: the connection
is closed instead, so an endpoint cannot make the sink read or hold more."""


class RequestDeadlineError(TimeoutError):
    """One request (connect, send, the whole answer) took longer than the sink's
    ``deadline_s``; retried like any timeout."""


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

    Each request must be answered in full within ``deadline_s`` (connecting, sending, the
    status, the headers and the body): a server that trickles its answer a byte at a time is cut
    off then (``RequestDeadlineError``, retried like a timeout), whatever ``timeout_s`` (the
    wait for each read) says. Of a response's body at most ``MAX_RESPONSE_BYTES`` are read.

    Secrets: the URL's ``user:password@`` is sent as HTTP Basic authentication unless an
    ``Authorization`` header is configured. The URL's password, the values of its options
    named like secrets (``api_key``, ``access_token``, ``sig``...) and of credential headers
    are never shown: every error and log line names the endpoint by :attr:`shown_url` and has
    those values masked (an endpoint that echoes them in its answer included).

    Threading model: called from its group's delivery thread only; the connection is opened on
    first use, kept alive between requests and reopened after any failure. Each request's
    deadline is kept by a timer thread of its own, which only shuts the socket down.
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
        deadline_s: float = DEFAULT_DEADLINE_S,
        max_request_bytes: int = 4 * 1024 * 1024,
        dead_letter: Path | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(name)
        self.shown_url = mask_url_passwords(url)
        """The URL with its secrets masked: what messages show."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"http sink {name!r}: {self.shown_url!r} is not an http:// or https:// URL"
            )
        if max_request_bytes < 1:
            raise ValueError("max_request_bytes must be positive")
        if deadline_s <= 0:
            raise ValueError("deadline_s must be positive")
        self.url = url
        """The URL as configured, secrets included: never print it (:attr:`shown_url`)."""
        self.format = format
        self.gzip = gzip
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s
        self.max_request_bytes = max_request_bytes
        self.dead_letter = dead_letter
        self.retry = retry or RetryPolicy()
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = request_headers(parts, format, headers or {})
        self._mask = SecretMask.of(secret_values(parts, self._headers))
        self._shown_target = self._mask(mask_url_passwords(self._target))
        if gzip:
            self._headers["Content-Encoding"] = "gzip"
        self._connection: http.client.HTTPConnection | None = None
        self._resume: tuple[DeliveryBatch, int] | None = None

    def stop(self) -> None:
        self._disconnect()
        self._resume = None

    def deliver(self, batch: DeliveryBatch) -> None:
        requests = request_records(batch, self.format, self.max_request_bytes)
        first = self._resume[1] if self._resume and self._resume[0] is batch else 0
        for index in range(first, len(requests)):
            self._send(requests[index], f"request {index + 1}/{len(requests)}")
            self._resume = (batch, index + 1)
        self._resume = None

    # -- sending ------------------------------------------------------------------------------

    def _send(self, records: list[bytes], which: str) -> None:
        body = request_body(records, self.format, self.gzip)
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
                what=f"http sink {self.name!r}: POST {self._shown_target} ({which})",
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
            f"http sink {self.name!r}: POST {self.shown_url} ({which}) failed after "
            f"{attempts} {tries}: {self._mask(str(exc))}"
        )

    def _post(self, body: bytes) -> None:
        """One attempt, within ``deadline_s``. Raises ``OSError``/``HTTPException``
        (connection; ``RequestDeadlineError`` past the deadline) or ``HttpStatusError``; the
        connection is closed after a connection failure, past the deadline, and when the
        answer's body was longer than ``MAX_RESPONSE_BYTES``."""
        connection = self._connection or self._connect()
        deadline = _Deadline(self.deadline_s, connection)
        try:
            if connection.sock is None:
                connection.connect()
            if deadline.fired:
                raise self._past_deadline()
            connection.request("POST", self._target, body=body, headers=self._headers)
            response = connection.getresponse()
            content = response.read(MAX_RESPONSE_BYTES + 1)
        except (OSError, http.client.HTTPException) as exc:
            fired = deadline.finish()
            self._disconnect()
            if fired and not isinstance(exc, RequestDeadlineError):
                raise self._past_deadline() from exc
            raise
        except BaseException:
            deadline.finish()
            self._disconnect()
            raise
        if deadline.finish():  # a cut-off answer may look complete: it is not trusted
            self._disconnect()
            raise self._past_deadline()
        if response.will_close or not response.isclosed():  # the rest is never read
            self._disconnect()
        if 200 <= response.status < 300:
            return
        text = content[:MAX_RESPONSE_BYTES].decode("utf-8", errors="replace")
        detail = self._mask(text)[:_DETAIL_CHARS].strip()  # masked, then cut
        retry_after = _parse_retry_after(response.getheader("Retry-After"))
        reason = self._mask(response.reason or "")
        raise HttpStatusError(response.status, reason, detail, retry_after)

    def _past_deadline(self) -> RequestDeadlineError:
        return RequestDeadlineError(
            f"no complete answer within the deadline of {self.deadline_s:g} s (deadline_s)"
        )

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
            f"http sink {self.name!r}: {self.shown_url} refused {len(records)} lines: "
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
            make_private_dirs(self.dead_letter.parent)
            fd = open_private(self.dead_letter, os.O_WRONLY | os.O_APPEND)
            with os.fdopen(fd, "ab") as file:
                file.write(b"".join(prefix + record + b"}\n" for record in records))
                file.flush()
                os.fsync(file.fileno())
        except OSError as exc:
            raise EventDeliveryException(
                f"{message}; cannot write them to the dead-letter file {self.dead_letter}: {exc}"
            ) from exc
        log.warning("%s; written to %s", message, self.dead_letter)


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


class _Deadline:
    """Cuts one request off after ``seconds``: a timer thread shuts the connection's socket
    down, which ends whatever read or write the request is blocked in. Started at once."""

    def __init__(self, seconds: float, connection: http.client.HTTPConnection) -> None:
        self._connection = connection
        self._lock = threading.Lock()
        self._done = False
        self.fired = False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            sock = self._connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                # socket.socket's own shutdown: an SSLSocket's would drop its SSL state
                # under the thread reading it.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def finish(self) -> bool:
        """Stop the clock; whether it had run out."""
        self._timer.cancel()
        with self._lock:
            self._done = True
            return self.fired
