"""Planted secrets of an HTTP sink's URL never show (issue 30): not in the logs, the error
that stops the collector, the sink's ``last_error`` in the metastore, nor the state page's
snapshot (its JSON, which the page and its API serve)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.collector import Collector
from pipeline_core.config import load_pipeline_config
from pipeline_core.mailbox import ReportedThrowableError
from pipeline_core.metastore import Metastore
from pipeline_core.state import take_snapshot
from pipeline_core.testing import append, lines
from tests.pipeline_core.collector.support import FAST_RUNNER
from tests.support.http_server import RecordingHttpServer
from tests.support.pipelines import write_config

pytestmark = pytest.mark.timeout(60)

PASSWORD, API_KEY = "s3cr3tPW", "K3YVALUE"
SECRETS = (PASSWORD, API_KEY)


@pytest.fixture
def failing_server() -> Iterator[RecordingHttpServer]:
    """Answers every request 503, echoing the secrets the way a careless endpoint would."""
    with RecordingHttpServer() as server:
        server.answer(503, f"no route for /ingest?api_key={API_KEY} (user:{PASSWORD})".encode())
        yield server


def planted_sink(server: RecordingHttpServer) -> dict[str, Any]:
    return {
        "type": "http",
        "url": f"http://user:{PASSWORD}@127.0.0.1:{server.port}/ingest?api_key={API_KEY}",
        "allow_insecure": True,
        "max_attempts": 2,
        "timeout_s": 2,
    }


def every_exception(error: BaseException | None) -> list[BaseException]:
    found: list[BaseException] = []
    while error is not None and error not in found:
        found.append(error)
        error = error.__cause__ or error.__context__
    return found


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def test_no_planted_secret_in_logs_last_error_or_the_state_snapshot(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    failing_server: RecordingHttpServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = write_config(
        tmp_path,
        metastore_url,
        sinks={
            "lake": {"type": "handoff"},
            "web": planted_sink(failing_server),
            "spare": {"type": "null"},
        },
        sink_groups=[
            {"name": "lake", "sinks": ["lake"]},
            {"name": "out", "processor": "failover", "sinks": ["web", "spare"],
             "priorities": {"web": 10, "spare": 5}, **FAST_RUNNER},
        ],
    )  # fmt: skip
    config = load_pipeline_config(path)
    append(tmp_path / "logs" / "access.log", *lines("a", 50))
    caplog.set_level(logging.DEBUG)

    Collector(config, metastore).run_once()

    assert len(failing_server.requests) >= 2  # it was tried (and retried), and failed
    [state] = [s for s in metastore.sink_states(config.name, config.collector.host)]
    assert state.sink == "web" and state.last_error
    assert "user:***@127.0.0.1" in state.last_error and "api_key=***" in state.last_error
    snapshot = take_snapshot(path)
    [web] = [s for g in snapshot.sink_groups for s in g.sinks if s.name == "web"]
    assert web.last_error == state.last_error
    assert_no_secret(
        caplog.text,
        *(repr(record.args) for record in caplog.records),
        state.last_error,
        snapshot.model_dump_json(),
    )


def test_no_planted_secret_in_the_error_that_stops_the_collector(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    failing_server: RecordingHttpServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = write_config(
        tmp_path,
        metastore_url,
        sinks={"lake": {"type": "handoff"}, "web": planted_sink(failing_server)},
        sink_groups=[
            {"name": "lake", "sinks": ["lake"]},
            {"name": "web", "sinks": ["web"], "rewind": "eventually_give_up",
             "rewind_max_attempts": 1, **FAST_RUNNER},
        ],
    )  # fmt: skip
    config = load_pipeline_config(path)
    append(tmp_path / "logs" / "access.log", *lines("a", 50))
    caplog.set_level(logging.DEBUG)

    with pytest.raises(ReportedThrowableError) as raised:
        Collector(config, metastore).run_once()

    chain = every_exception(raised.value)
    assert len(chain) > 1
    assert_no_secret(
        caplog.text,
        *(repr(record.args) for record in caplog.records),
        *(str(error) for error in chain),
        *(repr(error) for error in chain),
    )
    assert any("user:***@127.0.0.1" in str(error) for error in chain)
