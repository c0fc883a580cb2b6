"""Fixtures of the ``sluice`` command's tests."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pipeline_core.config import METASTORE_URL_ENV
from pipeline_core.lake import LakeLocation
from pipeline_core.metastore import Metastore
from tests.support.lake import append_rows

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


@pytest.fixture
def spark_submits(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """spark-submit replaced by a landing job that lands each checkpoint's lines as rows of
    the ``access`` table (pyiceberg, no Spark); the arguments of each submit."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    submitted: list[list[str]] = []

    def submit(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        arguments = list(self._application_args or [])
        submitted.append(arguments)
        options = dict(zip(arguments[::2], arguments[1::2], strict=True))
        lake = LakeLocation(
            (self._env_vars or {})["SLUICE_METASTORE_URL"],
            Path(options["--lake"]),
            options["--namespace"],
        )
        metastore = Metastore.open(lake.catalog_url)
        try:
            for flag, value in zip(arguments[::2], arguments[1::2], strict=True):
                if flag != "--checkpoint":
                    continue
                checkpoint_id = int(Path(value.partition("=")[0]).name)
                lines = sum(b.line_count for b in metastore.batches(checkpoint_id))
                append_rows(
                    lake,
                    "access",
                    [{"event_id": f"{checkpoint_id}:{i}", "checkpoint_id": checkpoint_id}
                     for i in range(lines)],
                    "nginx_combined",
                )  # fmt: skip
        finally:
            metastore.close()

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    return submitted
