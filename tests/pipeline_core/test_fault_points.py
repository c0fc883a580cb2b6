"""The named fault points: a seal reaches them in the documented order, each once a batch, and
nothing is called while no handler is installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline_core import _fault_points as fault_points
from pipeline_core._fault_points import FaultPoint
from pipeline_core.collector import Collector
from pipeline_core.metastore import Metastore
from pipeline_core.testing import append, lines
from tests.support.pipelines import load


@pytest.fixture
def reached() -> Iterator[list[FaultPoint]]:
    seen: list[FaultPoint] = []
    fault_points.install(seen.append)
    yield seen
    fault_points.install(None)


@pytest.mark.timeout(60)
def test_a_local_seal_reaches_its_points_in_order(
    tmp_path: Path, metastore_url: str, reached: list[FaultPoint]
) -> None:
    config = load(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", *lines("a", 50))
    metastore = Metastore.open(metastore_url)
    try:
        result = Collector(config, metastore).run_once()
    finally:
        metastore.close()

    assert len(result.sealed) == 1
    assert reached == [
        FaultPoint.PARTS_WRITTEN,
        FaultPoint.MANIFEST_WRITTEN,
        FaultPoint.BATCH_IN_PLACE,
        FaultPoint.SEAL_TRANSACTION_BEGINS,
        FaultPoint.SEAL_TRANSACTION_OPEN,
        FaultPoint.SEAL_TRANSACTION_COMMITTED,
    ]


def test_nothing_is_called_once_the_handler_is_removed(reached: list[FaultPoint]) -> None:
    fault_points.reached(FaultPoint.PARTS_WRITTEN)
    fault_points.install(None)
    fault_points.reached(FaultPoint.MANIFEST_WRITTEN)

    assert reached == [FaultPoint.PARTS_WRITTEN]
