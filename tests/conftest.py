"""Suite-wide fixtures. Helpers live in tests/support; this file only registers them.

Every test that uses the metastore (directly or through a fixture) is marked ``metastore``; the
PostgreSQL pass of ``make test`` runs exactly those again with ``SLUICE_TEST_POSTGRES_URL`` set.
"""

from __future__ import annotations

import pytest

pytest_plugins = [
    "tests.support.metastore",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "metastore_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.metastore)
