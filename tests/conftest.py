"""Suite-wide fixtures. Helpers live in tests/support; this file only registers them."""

pytest_plugins = [
    "tests.support.metastore",
]
