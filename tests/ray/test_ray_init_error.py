"""Ray's own error when it cannot start or join a cluster becomes one line of a BatchError.

No Ray is needed: a stand-in ``ray`` module whose ``init`` fails as Ray's does, on several
lines (a version mismatch names the cluster's and this process's versions on lines of their
own).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from rxturn.batch import BatchConfig, BatchError
from rxturn.ray._backend import RayBackend

_MISMATCH = (
    "Version mismatch: The cluster was started with:\n"
    "    Ray: 2.9.0\n"
    "    Python: 3.10.12\n"
    "This process on node 10.0.0.7 was started with:\n"
    "    Ray: 2.40.0\n"
    "    Python: 3.11.9\n"
)


class _FailingRay:
    """``ray.init`` raising what a version mismatch raises."""

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs: Any) -> None:
        raise RuntimeError(_MISMATCH)


@pytest.mark.parametrize("address", ["auto", "10.0.0.7:6379"])
def test_a_ray_start_failure_is_one_line(monkeypatch: pytest.MonkeyPatch, address: str) -> None:
    monkeypatch.setitem(sys.modules, "ray", _FailingRay())
    backend = RayBackend(BatchConfig(provider="anthropic", model="m"), None, 1, address=address)
    with pytest.raises(BatchError) as caught:
        backend._init()
    text = str(caught.value)
    assert "\n" not in text and "\r" not in text
    assert text.startswith(f"cannot start on the Ray cluster at {address!r}: RuntimeError: ")
    assert "Version mismatch" in text and "Ray: 2.40.0" in text
    assert caught.value.args == (text,)
