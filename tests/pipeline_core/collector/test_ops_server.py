"""The ops endpoints: addresses, /metrics, /health and /ready answers."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline_core.collector import (
    ListenAddress,
    MetricsExporter,
    OpsServer,
    ProbeResult,
    metrics_registry,
)
from pipeline_core.collector._readiness import OK
from pipeline_core.errors import ListenAddressError, SluiceError
from pipeline_core.testing import wait_until
from tests.pipeline_core.collector.test_metric_families import metrics


@dataclass
class Probes:
    live: ProbeResult = OK
    ready: ProbeResult = OK

    def liveness(self) -> ProbeResult:
        return self.live

    def readiness(self) -> ProbeResult:
        return self.ready


def get(url: str) -> tuple[int, str, str]:
    """Status, content type and body, also of an error answer."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


@pytest.fixture
def probes() -> Probes:
    return Probes()


@pytest.fixture
def server(probes: Probes) -> Iterator[OpsServer]:
    served = OpsServer(
        ListenAddress.parse("127.0.0.1:0"),
        metrics_registry(lambda: [metrics()], process=False),
        probes,
    ).start()
    yield served
    served.stop()


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("0.0.0.0:9464", "0.0.0.0", 9464),
        ("127.0.0.1:0", "127.0.0.1", 0),
        ("[::1]:9464", "::1", 9464),
        ("[::]:65535", "::", 65535),
        ("localhost:8080", "localhost", 8080),
        ("collector-0.sluice.svc:9464", "collector-0.sluice.svc", 9464),
        (":9464", "127.0.0.1", 9464),
    ],
)
def test_should_parse_host_and_port(text: str, host: str, port: int) -> None:
    address = ListenAddress.parse(text)

    assert (address.host, address.port) == (host, port)
    assert str(ListenAddress.parse(str(address))) == str(address)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("9464", "no port"),
        ("", "no port"),
        ("0.0.0.0:", "the port '' is not a number"),
        ("0.0.0.0:http", "the port 'http' is not a number"),
        ("0.0.0.0:65536", "the port '65536' is not a number from 0 to 65535"),
        ("0.0.0.0:-1", "the port '-1'"),
        ("::1:9464", "an IPv6 address goes in brackets"),
        ("[::1]9464", "an IPv6 address goes as [ADDRESS]:PORT"),
        ("[::1:9464", "an IPv6 address goes as [ADDRESS]:PORT"),
        ("[127.0.0.1]:9464", "'127.0.0.1' is not an IPv6 address"),
        ("my host:9464", "'my host' is neither an IP address nor a host name"),
    ],
)
def test_should_refuse_a_malformed_address_naming_it(text: str, problem: str) -> None:
    with pytest.raises(ListenAddressError) as raised:
        ListenAddress.parse(text)

    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"invalid address {text!r}: {problem}")
    assert "HOST:PORT" in message
    assert isinstance(raised.value, SluiceError) and isinstance(raised.value, ValueError)


def test_should_serve_metrics_in_the_prometheus_text_format(server: OpsServer) -> None:
    status, content_type, body = get(f"http://127.0.0.1:{server.port}/metrics")

    assert status == 200
    assert content_type.startswith("text/plain; version=0.0.4")
    assert 'sluice_read_bytes_total{host="node-1",pipeline="web"} 1.2345678901e+10' in body


def test_should_answer_health_and_ready_with_200_while_ok(server: OpsServer) -> None:
    for path in ("health", "ready"):
        status, content_type, body = get(f"http://127.0.0.1:{server.port}/{path}")

        assert (status, content_type) == (200, "application/json")
        assert json.loads(body) == {"ok": True, "reason": "ok"}


def test_should_answer_503_with_a_one_line_reason(server: OpsServer, probes: Probes) -> None:
    probes.ready = ProbeResult(False, "lease of web on node-1 lost: another collector took it")
    probes.live = ProbeResult(False, "stopped")

    ready = get(f"http://127.0.0.1:{server.port}/ready")
    live = get(f"http://127.0.0.1:{server.port}/health")

    assert ready[0] == live[0] == 503
    assert ready[2].count("\n") == 1 and ready[2].endswith("\n")
    assert json.loads(ready[2]) == {
        "ok": False,
        "reason": "lease of web on node-1 lost: another collector took it",
    }
    assert json.loads(live[2])["reason"] == "stopped"


def test_should_answer_503_when_a_probe_fails(server: OpsServer, probes: Probes) -> None:
    def broken() -> ProbeResult:
        raise RuntimeError("boom")

    probes.readiness = broken  # type: ignore[method-assign]

    status, _, body = get(f"http://127.0.0.1:{server.port}/ready")

    assert status == 503 and "boom" in json.loads(body)["reason"]


def test_should_answer_404_elsewhere_and_without_probes() -> None:
    server = OpsServer(
        ListenAddress.parse("127.0.0.1:0"), metrics_registry(lambda: [], process=False)
    ).start()
    try:
        assert get(f"http://127.0.0.1:{server.port}/ready")[0] == 404
        assert get(f"http://127.0.0.1:{server.port}/nothing")[0] == 404
        assert get(f"http://127.0.0.1:{server.port}/metrics")[0] == 200
    finally:
        server.stop()


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_should_listen_on_an_ipv6_address(probes: Probes) -> None:
    server = OpsServer(
        ListenAddress.parse("[::1]:0"), metrics_registry(lambda: [], process=False), probes
    ).start()
    try:
        assert get(f"http://[::1]:{server.port}/health")[0] == 200
    finally:
        server.stop()


def test_should_fail_at_once_on_an_address_in_use(server: OpsServer) -> None:
    with pytest.raises(OSError):
        OpsServer(
            ListenAddress("127.0.0.1", server.port), metrics_registry(lambda: [], process=False)
        )


def test_should_listen_on_loopback_unless_every_interface_is_named() -> None:
    assert ListenAddress.parse(":9464").host == "127.0.0.1"
    server = MetricsExporter(lambda: [], lambda name: Path("."), port=0)._server
    assert server is not None
    server.stop()
    assert server.address.host == "127.0.0.1"
    assert ListenAddress.parse("0.0.0.0:9464").host == "0.0.0.0"  # asked for by name only


TIMEOUT = 0.5
CAP = 4


@pytest.fixture
def bounded(probes: Probes) -> Iterator[OpsServer]:
    """A server dropping connections after TIMEOUT seconds, serving CAP at once."""
    served = OpsServer(
        ListenAddress.parse("127.0.0.1:0"),
        metrics_registry(lambda: [metrics()], process=False),
        probes,
        timeout=TIMEOUT,
        max_connections=CAP,
    ).start()
    yield served
    served.stop()


def connect(server: OpsServer, send: bytes = b"") -> socket.socket:
    client = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    if send:
        client.sendall(send)
    return client


def closed_within(client: socket.socket, seconds: float) -> bool:
    """Whether the server closed ``client`` within ``seconds`` (whatever it answered)."""
    client.settimeout(seconds)
    try:
        while client.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def ops_threads() -> int:
    """The threads serving a connection (socketserver's, named after their target)."""
    return sum(1 for t in threading.enumerate() if "process_request_thread" in t.name)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("send", [b"", b"GET /metrics HTTP/1.1\r\n"], ids=["nothing", "line"])
def test_should_drop_a_connection_that_sends_no_whole_request_after_the_timeout(
    bounded: OpsServer, send: bytes
) -> None:
    before = ops_threads()
    clients = [connect(bounded, send) for _ in range(CAP)]
    try:
        started = time.monotonic()
        assert all(closed_within(client, 5) for client in clients)
        assert time.monotonic() - started < 5
        wait_until(lambda: ops_threads() <= before, 5, "the ops threads to end")
        assert get(f"http://127.0.0.1:{bounded.port}/health")[0] == 200  # serving still
    finally:
        for client in clients:
            client.close()


@pytest.mark.timeout(60)
def test_should_drop_a_client_that_dribbles_its_request_at_the_deadline(
    bounded: OpsServer,
) -> None:
    client = connect(bounded, b"GET /metrics HTTP/1.1\r\n")
    try:
        deadline = time.monotonic() + 5
        closed = False
        while time.monotonic() < deadline and not closed:
            try:
                client.sendall(b"X-Slow: 1\r\n")  # a header line every 0.1 s: never idle
            except OSError:
                closed = True
            time.sleep(0.1)
        assert closed or closed_within(client, 1)
    finally:
        client.close()


@pytest.mark.timeout(60)
def test_should_serve_at_most_its_cap_of_connections_at_once(bounded: OpsServer) -> None:
    before = ops_threads()
    clients = [connect(bounded, b"GET /metrics HTTP/1.1\r\n") for _ in range(10 * CAP)]
    try:
        time.sleep(TIMEOUT / 2)  # every connection accepted, none timed out yet
        assert ops_threads() - before <= CAP
        refused = sum(closed_within(client, 0.1) for client in clients)
        assert refused >= 9 * CAP  # closed at once, unanswered
        assert all(closed_within(client, 5) for client in clients)
        wait_until(lambda: ops_threads() <= before, 5, "the ops threads to end")
        assert get(f"http://127.0.0.1:{bounded.port}/health")[0] == 200
    finally:
        for client in clients:
            client.close()
