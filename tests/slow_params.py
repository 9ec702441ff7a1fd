"""What the inner loop (``pytest -m "not slow"``) keeps of a costly test; the whole suite runs
all of it.

- :func:`mostly_slow`: of a parametrised test that waits on real time, a few parametrisations
  stay in the inner loop and the rest are marked ``slow``. A deadline that fires during a flood,
  say, is worth checking once per run of the inner loop; checking it for every wire format and
  every shape of flood costs seconds of real time each and belongs to the whole suite.
- :func:`briefly`: a hypothesis property whose long run (hundreds of examples, a second or more)
  is marked ``slow`` gets a short run of the same body and strategies for the inner loop.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings

__all__ = ["briefly", "mostly_slow"]


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


def briefly(test: Any, max_examples: int) -> Any:
    """A short run of the hypothesis property ``test``: the same body, strategies, settings and
    explicit examples, with ``max_examples`` generated examples. Mark ``test`` itself ``slow`` (it
    is the long run) and bind the result to a ``test_…`` name of the module:

        @pytest.mark.slow
        @settings(max_examples=400, deadline=None)
        @given(script=scripts())
        def test_the_property(script: Script) -> None: ...

        test_the_property_briefly = briefly(test_the_property, 50)
    """
    handle = test.hypothesis
    strategies = handle._given_kwargs  # @given's strategies, as keywords (hypothesis >= 6)
    assert strategies, f"{test.__name__}: no strategies found on the @given test"
    short: Any = given(**strategies)(handle.inner_test)
    examples = getattr(test, "hypothesis_explicit_examples", None)
    if examples:
        short.hypothesis_explicit_examples = list(examples)
    return settings(test._hypothesis_internal_use_settings, max_examples=max_examples)(short)
