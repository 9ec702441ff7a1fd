"""``assert_no_secret`` proves a negative, so a walk it had to cut short (the graph deeper than
``max_depth``, or larger than ``max_objects``) proves nothing: it fails and says where it
stopped, instead of passing on what it did not see."""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Sequence
from typing import Any

import pytest

from rxturn.errors import ConfigError
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


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"secret": 123}, "the secret must be a non-empty string, got int"),
        ({"secret": b"sk-bytes-1234"}, "the secret must be a non-empty string, got bytes"),
        ({"secret": None}, "the secret must be a non-empty string, got NoneType"),
        ({"secret": ""}, "the secret must be a non-empty string, got ''"),
        ({"name": 3}, "name must be a str, got int 3"),
        ({"max_depth": "64"}, "max_depth must be a whole number >= 0, got '64'"),
        ({"max_depth": -1}, "max_depth must be a whole number >= 0, got -1"),
        ({"max_objects": 0}, "max_objects must be a whole number >= 1, got 0"),
    ],
    ids=["int", "bytes", "none", "empty", "name", "depth-str", "depth-negative", "objects-zero"],
)
@pytest.mark.parametrize("check", [assert_no_secret, find_secret], ids=lambda f: f.__name__)
def test_a_wrong_argument_is_a_config_error_naming_it(
    check: Any, kwargs: dict[str, Any], says: str
) -> None:
    """A secret of another type failed inside the walk (a TypeError from quote_from_bytes, an
    AttributeError on bytes.encode), a string bound in a comparison, and a bound below the
    least reported a walk 'cut short' at the root instead of the mistake. The message never
    shows the secret's value, whatever its type."""
    arguments: dict[str, Any] = {"secret": "sk-secret-1234", **kwargs}
    secret = arguments.pop("secret")
    with pytest.raises(ConfigError) as raised:
        check(ValueError("fine"), secret, **arguments)
    assert str(raised.value) == f"{check.__name__}: {says}"
    assert isinstance(raised.value, ValueError)  # what an empty secret raised before


def test_a_depth_of_zero_looks_at_the_object_alone() -> None:
    assert find_secret("sk-secret-1234", "sk-secret-1234", max_depth=0) == ["obj"]


class _Events(Sequence[object]):
    """A container of one's own, as the OpenTelemetry SDK's BoundedList is: a Sequence that is
    no list, holding its items in a deque."""

    def __init__(self, *items: object) -> None:
        self._items = deque(items)

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)


def test_items_of_other_containers_are_walked() -> None:
    """A deque's items are reachable through no attribute (it has no __dict__), and its repr
    and a custom Sequence's show only their items' reprs: a secret in an object held there
    was not found."""

    class Event:
        def __init__(self, attributes: dict[str, object]) -> None:
            self.attributes = attributes

    secret = "sk-secret-in-a-deque-1234"
    assert find_secret(deque([Event({"k": secret})]), secret) == ["obj[0].attributes['k']"]
    # each object once, along the first route walked: the items before the attributes
    assert find_secret(_Events(Event({"k": ("a", secret)})), secret) == [
        "obj[0].attributes['k'][1]"
    ]


def test_a_secret_in_an_exported_span_event_is_found() -> None:
    """What the SDK exports: the span's events sit in a BoundedList (a deque inside)."""
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    secret = "sk-secret-in-an-event-5678"
    exporter = export.InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("turn") as span:
        span.add_event("rxturn.failover", {"rxturn.to_model": ["backup", secret]})
    spans = list(exporter.get_finished_spans())
    provider.shutdown()
    with pytest.raises(AssertionError, match=r"spans\[0\]\._events\[0\]\._attributes"):
        assert_no_secret(spans, secret, name="spans")
