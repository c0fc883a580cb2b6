"""OutageLog: a metastore outage said once, reminded every so often, and its end said."""

from __future__ import annotations

import logging

import pytest

from pipeline_core.collector._outage_log import OutageLog

LOGGER = "tests.outage"


def said(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


def test_an_outage_is_said_once_then_every_reminder_then_its_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    outages = OutageLog(logging.getLogger(LOGGER), reminder_seconds=30.0)
    refused = OSError("connection refused")

    for second in range(0, 65):  # a try every second for 65 s
        outages.failed("web", refused, 100.0 + second)
    outages.reached("web", 165.5)
    outages.reached("web", 166.0)  # no outage to end

    warnings = [text for level, text in said(caplog) if level == logging.WARNING]
    assert warnings == [
        "web: the metastore cannot be reached (retrying): connection refused",
        "web: the metastore cannot be reached for 30 s (retrying): connection refused",
        "web: the metastore cannot be reached for 60 s (retrying): connection refused",
    ]
    assert [text for level, text in said(caplog) if level == logging.INFO] == [
        "web: the metastore is reachable again after 65.5 s"
    ]
    assert len([1 for level, _ in said(caplog) if level == logging.DEBUG]) == 62


def test_outages_of_two_pipelines_are_their_own(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    outages = OutageLog(logging.getLogger(LOGGER))

    outages.failed("web", OSError("down"), 10.0)
    outages.failed("api", OSError("down"), 11.0)
    outages.reached("web", 12.0)
    outages.failed("web", OSError("down again"), 13.0)  # a new outage: said again

    assert [text for _, text in said(caplog)] == [
        "web: the metastore cannot be reached (retrying): down",
        "api: the metastore cannot be reached (retrying): down",
        "web: the metastore is reachable again after 2.0 s",
        "web: the metastore cannot be reached (retrying): down again",
    ]
