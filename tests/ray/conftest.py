"""One local Ray cluster (2 CPUs) for the tests of this directory, started once.

Ray is imported here, when a test asks for the cluster, not when the test modules are collected:
every test of this directory is marked ``slow``, and an inner-loop run (``-m "not slow"``) that
only collects them should not pay Ray's second of import.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray() -> Iterator[Any]:
    """The ``ray`` module, with a local cluster started (the test is skipped without the extra)."""
    module: Any = pytest.importorskip("ray", reason="the ray extra: pip install -e '.[ray]'")
    module.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield module
    finally:
        module.shutdown()
