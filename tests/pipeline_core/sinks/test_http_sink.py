"""HttpSink against a real HTTP server on 127.0.0.1: bodies, retries, refusals, outages."""

from __future__ import annotations

import base64
import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.errors import EventDeliveryException, SinkRejectedError
from pipeline_core.sinks import DeliveryBatch, HttpFormat, HttpSink, Status, event_id
from pipeline_core.sinks._http import MAX_RESPONSE_BYTES
from tests.pipeline_core.sinks.support import (
    FP_A,
    SleepLog,
    chunk,
    fast_retry,
    line_batch,
    long_line_chunk,
    wire,
)
from tests.support.http_server import RecordingHttpServer, Reply

pytestmark = pytest.mark.timeout(20)


@pytest.fixture
def server() -> Iterator[RecordingHttpServer]:
    with RecordingHttpServer() as running:
        yield running


def http_sink(
    server: RecordingHttpServer, sleeps: SleepLog | None = None, **options: Any
) -> HttpSink:
    options.setdefault("retry", fast_retry(3, sleeps))
    return HttpSink("web", server.url, **options)


def deliver(sink: HttpSink, *batches: DeliveryBatch) -> Status:
    """Wire ``sink`` to a channel holding ``batches`` and call ``process()`` once."""
    wire([sink], *batches)
    try:
        return sink.process()
    finally:
        sink.stop()


def messages(server: RecordingHttpServer) -> list[str]:
    return [record["message"] for r in server.accepted() for record in r.ndjson()]


def test_posts_a_batch_as_gzipped_ndjson(server: RecordingHttpServer) -> None:
    batch = line_batch(b"GET /a", b"GET /b", start=100)

    assert deliver(http_sink(server), batch) is Status.READY

    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/ingest"
    assert request.headers["content-type"] == "application/x-ndjson"
    assert request.headers["content-encoding"] == "gzip"
    assert request.raw_body != request.body
    assert request.body.endswith(b"\n")
    assert request.ndjson() == [
        {
            "event_id": event_id(FP_A, 100),
            "source": "access",
            "file_fingerprint": FP_A,
            "byte_offset": 100,
            "message": "GET /a",
        },
        {
            "event_id": event_id(FP_A, 107),
            "source": "access",
            "file_fingerprint": FP_A,
            "byte_offset": 107,
            "message": "GET /b",
        },
    ]


def test_posts_a_json_array_uncompressed(server: RecordingHttpServer) -> None:
    batch = line_batch(b"one", b"two")

    deliver(http_sink(server, format=HttpFormat.JSON_ARRAY, gzip=False), batch)

    [request] = server.requests
    assert request.headers["content-type"] == "application/json"
    assert "content-encoding" not in request.headers
    assert request.raw_body == request.body
    assert [record["message"] for record in request.json()] == ["one", "two"]


def test_sends_configured_headers_and_they_override_defaults(server: RecordingHttpServer) -> None:
    headers = {"Authorization": "Bearer s3cret", "content-type": "application/vnd.logs+ndjson"}

    deliver(http_sink(server, headers=headers), line_batch(b"x"))

    [request] = server.requests
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["content-type"] == "application/vnd.logs+ndjson"


def test_returns_backoff_when_the_channel_is_empty(server: RecordingHttpServer) -> None:
    assert deliver(http_sink(server)) is Status.BACKOFF
    assert server.requests == []


@pytest.mark.parametrize("format", list(HttpFormat))
def test_splits_a_large_batch_into_requests_of_at_most_max_request_bytes(
    server: RecordingHttpServer, format: HttpFormat
) -> None:
    lines = [f"line {i:04d} ".encode() + b"x" * 60 for i in range(200)]
    sink = http_sink(server, format=format, gzip=False, max_request_bytes=2048)

    assert deliver(sink, line_batch(*lines)) is Status.READY

    requests = server.requests
    assert len(requests) > 5
    assert all(len(r.body) <= 2048 for r in requests)
    records = [
        record
        for r in requests
        for record in (r.json() if format is HttpFormat.JSON_ARRAY else r.ndjson())
    ]
    assert [record["message"].encode() for record in records] == lines


def test_keeps_one_connection_alive_across_batches(server: RecordingHttpServer) -> None:
    sink = http_sink(server)
    channel = wire([sink], line_batch(b"a", sequence=1), line_batch(b"b", sequence=2))

    assert sink.process() is Status.READY
    assert sink.process() is Status.READY
    connection = sink._connection
    sink.stop()

    assert connection is not None
    assert len(channel) == 0
    assert messages(server) == ["a", "b"]


def test_retries_a_503_inside_the_sink_and_delivers_once(server: RecordingHttpServer) -> None:
    server.fail_next(2, status=503)
    sleeps = SleepLog()
    sink = http_sink(server, sleeps)
    channel = wire([sink], line_batch(b"payload"))

    assert sink.process() is Status.READY

    assert [r.status for r in server.requests] == [503, 503, 200]
    assert len(sleeps) == 2
    assert len(channel) == 0
    assert messages(server) == ["payload"]


def test_honours_retry_after_on_429_capped_by_the_policy(server: RecordingHttpServer) -> None:
    server.fail_next(1, status=429, headers={"Retry-After": "2"})
    server.fail_next(1, status=429, headers={"Retry-After": "3600"})
    sleeps = SleepLog()

    assert deliver(http_sink(server, sleeps), line_batch(b"x")) is Status.READY

    assert [r.status for r in server.requests] == [429, 429, 200]
    assert sleeps == [2.0, 30.0]


def test_retries_a_dropped_connection_on_a_new_one(server: RecordingHttpServer) -> None:
    server.drop_next()

    assert deliver(http_sink(server), line_batch(b"x")) is Status.READY

    assert [r.status for r in server.requests] == [None, 200]


def test_retries_a_read_timeout(server: RecordingHttpServer) -> None:
    server.script(Reply(stall_s=0.5))

    assert deliver(http_sink(server, timeout_s=0.1), line_batch(b"slow")) is Status.READY

    # The server handled the timed-out request too: delivery is at least once.
    assert messages(server) == ["slow", "slow"]


def test_a_refused_request_goes_to_the_dead_letter_file_and_counts_delivered(
    server: RecordingHttpServer, tmp_path: Path
) -> None:
    server.answer(400, b'{"error": "bad field"}')
    dead_letter = tmp_path / "dead_letter" / "web.jsonl"
    sink = http_sink(server, dead_letter=dead_letter)
    channel = wire([sink], line_batch(b"first", b"bad \xff\x00 line", start=10))

    assert sink.process() is Status.READY

    assert len(server.requests) == 1  # a 400 is not retried
    assert len(channel) == 0
    entries = [json.loads(line) for line in dead_letter.read_text("utf-8").splitlines()]
    assert [entry["event"]["message"] for entry in entries] == ["first", "bad \ufffd\x00 line"]
    assert [entry["event"]["byte_offset"] for entry in entries] == [10, 16]
    assert {entry["status"] for entry in entries} == {400}
    assert {entry["reason"] for entry in entries} == {"Bad Request"}
    assert {entry["response"] for entry in entries} == {'{"error": "bad field"}'}
    assert {entry["sink"] for entry in entries} == {"web"}


def test_the_dead_letter_file_is_its_users_alone_whatever_the_umask(
    server: RecordingHttpServer, tmp_path: Path
) -> None:
    server.answer(400)
    dead_letter = tmp_path / "data" / "dead_letter" / "web.jsonl"
    sink = http_sink(server, dead_letter=dead_letter)
    wire([sink], line_batch(b"a line of a 0640 log"))
    previous = os.umask(0o022)
    try:
        assert sink.process() is Status.READY
    finally:
        os.umask(previous)

    assert stat.S_IMODE(dead_letter.stat().st_mode) == 0o600
    assert stat.S_IMODE(dead_letter.parent.stat().st_mode) == 0o700


def test_a_refused_request_without_dead_letter_raises_sink_rejected(
    server: RecordingHttpServer,
) -> None:
    server.answer(422)
    sink = http_sink(server)
    channel = wire([sink], line_batch(b"x"))

    with pytest.raises(SinkRejectedError, match="HTTP 422") as raised:
        sink.process()

    assert len(server.requests) == 1
    assert len(channel) == 1  # the batch stays for the processor to decide
    assert raised.value.__cause__ is not None


def test_server_down_raises_event_delivery_after_the_bounded_attempts(
    server: RecordingHttpServer,
) -> None:
    server.stop()
    sleeps = SleepLog()
    sink = http_sink(server, sleeps, retry=fast_retry(4, sleeps))
    channel = wire([sink], line_batch(b"x"))

    with pytest.raises(EventDeliveryException, match="after 4 attempts") as raised:
        sink.process()

    assert isinstance(raised.value.__cause__, ConnectionRefusedError)
    assert len(sleeps) == 3
    assert len(channel) == 1


def test_exhausted_5xx_retries_raise_event_delivery_chained_to_the_status(
    server: RecordingHttpServer,
) -> None:
    server.answer(502, b"upstream gone")
    sink = http_sink(server)
    wire([sink], line_batch(b"x"))

    with pytest.raises(EventDeliveryException, match="HTTP 502") as raised:
        sink.process()

    assert len(server.requests) == 3
    assert "upstream gone" in str(raised.value.__cause__)


def test_a_redirect_is_not_followed_and_fails_at_once(server: RecordingHttpServer) -> None:
    server.answer(301, headers={"Location": "http://elsewhere/"})
    sink = http_sink(server)
    wire([sink], line_batch(b"x"))

    with pytest.raises(EventDeliveryException, match="HTTP 301"):
        sink.process()

    assert len(server.requests) == 1


def test_reconnects_after_the_server_restarts_on_the_same_port(
    server: RecordingHttpServer,
) -> None:
    sink = http_sink(server)
    channel = wire([sink], line_batch(b"before", sequence=1))
    assert sink.process() is Status.READY
    server.stop()
    channel.put(line_batch(b"during", sequence=2))

    with pytest.raises(EventDeliveryException):
        sink.process()
    server.start()
    assert sink.process() is Status.READY
    sink.stop()

    assert messages(server) == ["before", "during"]


def test_a_failed_batch_resumes_after_the_requests_already_accepted(
    server: RecordingHttpServer,
) -> None:
    lines = [f"{i:03d}".encode() + b"y" * 100 for i in range(30)]
    sink = http_sink(server, gzip=False, max_request_bytes=1024)
    channel = wire([sink], line_batch(*lines))
    server.script(Reply(200), Reply(503), Reply(503), Reply(503))

    with pytest.raises(EventDeliveryException, match="request 2/"):
        sink.process()
    assert sink.process() is Status.READY
    sink.stop()

    assert len(channel) == 0
    assert [m.encode() for m in messages(server)] == lines  # nothing sent twice


def test_invalid_utf8_and_nul_bytes_survive(server: RecordingHttpServer) -> None:
    data = b"caf\xc3\xa9 ok\nbroken \xc3\x28 and \xff\nnul \x00 inside\ntruncated \xe2\x82"
    batch = DeliveryBatch((chunk(data, start=0),), 0)

    assert deliver(http_sink(server), batch) is Status.READY

    assert messages(server) == [
        "café ok",
        "broken \ufffd( and \ufffd",
        "nul \x00 inside",
        "truncated \ufffd",
    ]


def test_an_over_long_line_is_sent_as_its_prefix_marked_truncated(
    server: RecordingHttpServer,
) -> None:
    long_line = long_line_chunk(start=3, line_bytes=2_000_000, prefix=b"\xc3\xa9" * 512)
    batch = DeliveryBatch((chunk(b"ok\n"), long_line, chunk(b"next\n", start=long_line.end)), 0)

    assert deliver(http_sink(server), batch) is Status.READY

    records = [record for r in server.accepted() for record in r.ndjson()]
    assert [r["byte_offset"] for r in records] == [0, 3, 2_000_004]
    assert records[1] == {
        "event_id": event_id(FP_A, 3),
        "source": "access",
        "file_fingerprint": FP_A,
        "byte_offset": 3,
        "message": "é" * 512,
        "truncated": True,
        "line_bytes": 2_000_000,
    }
    assert "truncated" not in records[0] and "line_bytes" not in records[2]


def test_rejects_a_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="not an http"):
        HttpSink("web", "ftp://example.com/upload")


# -- issue 30: secrets, response size, deadline ---------------------------------------------------

PASSWORD, API_KEY = "s3cr3tPW", "K3YVALUE"


def secret_url(server: RecordingHttpServer) -> str:
    return f"http://user:{PASSWORD}@127.0.0.1:{server.port}/ingest?api_key={API_KEY}&v=1"


def test_no_secret_of_the_url_shows_in_the_error_or_the_logs(
    server: RecordingHttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo = f"no route for POST /ingest?api_key={API_KEY}&v=1 as user:{PASSWORD}".encode()
    server.answer(503, echo)
    sink = HttpSink("web", secret_url(server), retry=fast_retry(3))
    wire([sink], line_batch(b"x"))
    caplog.set_level(logging.DEBUG)

    with pytest.raises(EventDeliveryException) as raised:
        sink.process()
    sink.stop()

    shown = [str(raised.value), str(raised.value.__cause__), repr(raised.value), caplog.text]
    shown += [repr(record.args) for record in caplog.records]
    assert len(server.requests) == 3
    assert "attempt 1 of 3 failed" in caplog.text
    for text in shown:
        assert PASSWORD not in text and API_KEY not in text
    assert "http://user:***@127.0.0.1" in str(raised.value)
    assert "api_key=***" in str(raised.value)
    assert sink.shown_url == f"http://user:***@127.0.0.1:{server.port}/ingest?api_key=***&v=1"


def test_the_urls_user_and_password_are_sent_as_basic_auth(server: RecordingHttpServer) -> None:
    deliver(HttpSink("web", secret_url(server), retry=fast_retry(1)), line_batch(b"x"))

    [request] = server.requests
    assert request.path == f"/ingest?api_key={API_KEY}&v=1"
    scheme, _, credentials = request.headers["authorization"].partition(" ")
    assert (scheme, base64.b64decode(credentials)) == ("Basic", f"user:{PASSWORD}".encode())


def test_a_configured_authorization_header_wins_over_the_urls_user(
    server: RecordingHttpServer,
) -> None:
    sink = HttpSink(
        "web", secret_url(server), headers={"authorization": "Bearer t"}, retry=fast_retry(1)
    )

    deliver(sink, line_batch(b"x"))

    assert server.requests[0].headers["authorization"] == "Bearer t"


def test_reads_at_most_max_response_bytes_of_an_endless_answer(
    server: RecordingHttpServer,
) -> None:
    server.script(
        Reply(200, body=b"x" * (4 * MAX_RESPONSE_BYTES), declared_length=1 << 40, hold_s=30)
    )
    sink = http_sink(server, timeout_s=5, retry=fast_retry(1))
    channel = wire([sink], line_batch(b"first", sequence=1), line_batch(b"second", sequence=2))
    started = time.monotonic()

    assert sink.process() is Status.READY
    assert time.monotonic() - started < 3
    assert sink.process() is Status.READY  # on a new connection: the endless one was closed
    sink.stop()

    assert len(channel) == 0
    assert messages(server) == ["first", "second"]


def test_an_error_answers_body_is_capped_too(server: RecordingHttpServer) -> None:
    server.answer(503, b"y" * (4 * MAX_RESPONSE_BYTES), headers={})
    sink = http_sink(server, retry=fast_retry(1))
    wire([sink], line_batch(b"x"))

    with pytest.raises(EventDeliveryException) as raised:
        sink.process()
    sink.stop()

    assert len(str(raised.value)) < 2000


def test_a_server_that_trickles_its_answer_is_cut_off_at_the_deadline(
    server: RecordingHttpServer,
) -> None:
    server.script(Reply(200, body=b"z" * 1000, trickle_s=0.02))  # 20 s in all, a byte at a time
    sink = http_sink(server, timeout_s=1, deadline_s=1.0, retry=fast_retry(1))
    wire([sink], line_batch(b"x"))
    started = time.monotonic()

    with pytest.raises(EventDeliveryException, match="deadline") as raised:
        sink.process()
    sink.stop()

    assert time.monotonic() - started < 4
    assert isinstance(raised.value.__cause__, TimeoutError)


def test_the_deadline_is_retried_like_a_timeout(server: RecordingHttpServer) -> None:
    server.script(Reply(200, trickle_s=0.5))

    assert deliver(http_sink(server, deadline_s=0.5), line_batch(b"slow")) is Status.READY

    assert messages(server) == ["slow", "slow"]
