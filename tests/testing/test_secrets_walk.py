"""``assert_no_secret`` proves a negative, so a walk it had to cut short (the graph deeper than
``max_depth``, or larger than ``max_objects``) proves nothing: it fails and says where it
stopped, instead of passing on what it did not see."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from rxturn.testing import assert_no_secret, find_secret

SECRET = "sk-secret-0123456789"


def _nested(depth: int, leaf: Any) -> Any:
    return functools.reduce(lambda inner, _: {"a": inner}, range(depth), leaf)


def test_a_graph_deeper_than_the_walk_is_not_passed() -> None:
    deep = _nested(100, SECRET)
    assert find_secret(deep, SECRET) == []  # the secret sits beyond 64 links
    with pytest.raises(AssertionError, match=r"walk stopped 64 links deep at obj\['a'\]"):
        assert_no_secret(deep, SECRET)
    with pytest.raises(AssertionError, match="reachable from obj at"):
        assert_no_secret(deep, SECRET, max_depth=200)


def test_a_graph_larger_than_the_budget_is_not_passed() -> None:
    wide = [[str(n)] for n in range(50)]
    with pytest.raises(AssertionError, match=r"walk stopped after 10 objects"):
        assert_no_secret(wide, SECRET, max_objects=10)
    assert_no_secret(wide, SECRET)  # walked whole: nothing there


def test_atoms_beyond_the_depth_cut_nothing() -> None:
    assert_no_secret(_nested(64, 5), SECRET)  # an int at the bottom hides nothing
