"""A ``logging`` format string turned into the pattern that reads its records back, checked
against what ``logging.Formatter`` itself writes; and the config keys that carry it."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import load_pipeline_config
from pipeline_core.errors import ConfigError
from pipeline_core.formats import LogFormatError, python_log_layout

FORMATS = [
    "%(asctime)s %(levelname)s %(name)s: %(message)s",
    "[%(asctime)s] {%(filename)s:%(lineno)d} %(levelname)s - %(message)s",
    "%(levelname)s:%(name)s:%(message)s",
    "%(asctime)s %(levelname)-8s [%(threadName)s] %(process)d %(funcName)s: %(message)s",
    "%(created)f %(levelname)8s %(module)s 100%% %(pathname)s %(message)s",
    "%%(not a placeholder)s %(levelname)s %(message)s",
]


@pytest.mark.parametrize("log_format", FORMATS)
def test_should_read_back_each_attribute_logging_wrote(log_format: str) -> None:
    layout = python_log_layout(log_format)
    formatter = logging.Formatter(log_format)
    for level, name, message in (
        (logging.INFO, "app", "plain"),
        (logging.WARNING, "sluice.collector.reader", "two lines\n  and a : colon"),
        (45, "x", "a level without a name"),
        (logging.ERROR, "a.b", ""),
    ):
        record = logging.LogRecord(name, level, "/srv/app/job.py", 42, message, None, None, "run")
        text = formatter.format(record)
        found = re.match(layout.pattern, text)

        assert found is not None, (log_format, text)
        values = {attribute: found[group] for attribute, group in layout.groups.items()}
        assert values["message"] == message
        expected = {
            "levelname": record.levelname,
            "name": name,
            "filename": "job.py",
            "pathname": "/srv/app/job.py",
            "lineno": "42",
            "funcName": "run",
            "module": "job",
            "threadName": record.threadName,
            "process": str(record.process),
            "asctime": formatter.formatTime(record),
            "created": f"{record.created:f}",
        }
        for attribute, value in values.items():
            if attribute in expected:
                assert value == expected[attribute], attribute


@pytest.mark.parametrize(
    ("log_format", "message"),
    [
        ("%(asctime)s %(levelname)s", "names no %(message)s"),
        ("%(message)s [%(name)s]", "%(message)s must end the format"),
        ("%(asctime)s %(user)s %(message)s", "%(user) is not an attribute of a logging record"),
        ("%(name)s %(name)s %(message)s", "%(name) is named twice"),
        ("%(name)s 50% %(message)s", "holds a % that is not a %(name)s placeholder"),
    ],
)
def test_should_refuse_a_format_it_cannot_read_back(log_format: str, message: str) -> None:
    with pytest.raises(LogFormatError, match=re.escape(message)):
        python_log_layout(log_format)


def _config(tmp_path: Path, **source: Any) -> Path:
    document = {
        "name": "app",
        "sources": [{"name": "app", "paths": ["logs/*.log"], "format": "python_logging", **source}],
    }
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_should_take_a_sources_log_format_and_timezone(tmp_path: Path) -> None:
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    config = load_pipeline_config(_config(tmp_path, log_format=fmt, timezone="Europe/Zurich"))

    assert (config.sources[0].log_format, config.sources[0].timezone) == (fmt, "Europe/Zurich")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"log_format": "%(levelname)s"}, "names no %(message)s"),
        ({"timezone": "Mars/Olympus"}, "timezone 'Mars/Olympus' is not an IANA time zone"),
        ({"format": "raw", "log_format": "%(message)s"}, "log_format belongs to formats python_lo"),
        (
            {"format": "syslog_rfc5424", "timezone": "UTC"},
            "timezone belongs to formats python_logging, spark_log4j, syslog_rfc3164, regex only",
        ),
    ],
)
def test_should_refuse_a_bad_log_format_or_timezone_naming_the_file(
    tmp_path: Path, source: dict[str, str], message: str
) -> None:
    path = _config(tmp_path, **source)

    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(path)

    assert message in str(caught.value)
    assert str(path) in str(caught.value)
    assert "sources" in str(caught.value)
