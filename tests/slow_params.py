"""Parametrisations of a test that waits on real time: the inner loop keeps a few, the rest are
marked ``slow`` (``pytest -m "not slow"`` deselects them; the whole suite runs them all).

A deadline that fires during a flood, say, is worth checking once per run of the inner loop;
checking it for every wire format and every shape of flood costs seconds of real time each and
belongs to the whole suite.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

import pytest

__all__ = ["mostly_slow"]


def mostly_slow(
    argnames: str, argvalues: Iterable[Any], *, ids: Sequence[str], keep: Collection[str]
) -> list[Any]:
    """``argvalues`` as ``pytest.param``\\ s with ``ids``: those whose id is in ``keep`` stay in
    the inner loop, every other one is marked ``slow``. For several ``argnames`` (comma
    separated) each value is the tuple of their values."""
    values = list(argvalues)
    missing = set(keep) - set(ids)
    assert not missing, f"kept ids that are no parametrisation: {sorted(missing)}"
    several = "," in argnames
    return [
        pytest.param(
            *(value if several else (value,)),
            id=name,
            marks=() if name in keep else pytest.mark.slow,
        )
        for value, name in zip(values, ids, strict=True)
    ]
