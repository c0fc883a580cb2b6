"""The ops endpoints: addresses, /metrics, /health and /ready answers."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from pipeline_core.collector import ListenAddress, OpsServer, ProbeResult, metrics_registry
from pipeline_core.collector._readiness import OK
from pipeline_core.errors import ListenAddressError, SluiceError
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
        (":9464", "0.0.0.0", 9464),
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
