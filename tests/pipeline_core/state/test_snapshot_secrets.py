"""No secret in a pipeline's snapshot (issue 30): a metastore password given as the URL's
``?password=`` option, and the ``last_error`` of a sink stored with its URL's secrets."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline_core.config import METASTORE_URL_ENV, load_pipeline_config
from pipeline_core.metastore import Metastore, SinkStateRecord
from pipeline_core.state import take_snapshot
from tests.support.pipelines import write_config

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


def test_a_password_in_the_metastore_urls_query_is_not_in_the_snapshots_error(
    tmp_path: Path,
) -> None:
    url = "postgresql+psycopg://sluice@127.0.0.1:1/sluice?password=s3cr3tPW&connect_timeout=2"
    path = write_config(tmp_path, url)

    snapshot = take_snapshot(path)

    assert snapshot.error is not None and "cannot read the metastore" in snapshot.error
    assert "password=***" in snapshot.error
    assert "s3cr3tPW" not in snapshot.model_dump_json()


def test_a_stored_last_error_is_shown_with_its_urls_secrets_masked(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    path = write_config(
        tmp_path,
        metastore_url,
        sinks={"lake": {"type": "handoff"}, "web": {"type": "null"}},
    )
    config = load_pipeline_config(path)
    error = (
        "EventDeliveryException: http sink 'web': POST "
        "https://user:s3cr3tPW@logs.internal/in?api_key=K3YVALUE (request 1/1) failed"
    )
    metastore.save_sink_states(
        config.name,
        config.collector.host,
        [SinkStateRecord("web", "web", 1, time.time() + 60, time.time(), error)],
    )

    snapshot = take_snapshot(path)

    [web] = [s for g in snapshot.sink_groups for s in g.sinks if s.name == "web"]
    assert web.last_error == (
        "EventDeliveryException: http sink 'web': POST "
        "https://user:***@logs.internal/in?api_key=*** (request 1/1) failed"
    )
    text = snapshot.model_dump_json()
    assert "s3cr3tPW" not in text and "K3YVALUE" not in text
