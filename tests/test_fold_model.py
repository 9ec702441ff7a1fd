"""The fold against a naive model of its lane rules (docs/behaviour.md §1), differentially.

The fold is optimised (shared append-only buffers, a "hot lane" shortcut for consecutive
fragments); this model is the rules written the obvious way — a list of lanes in open order,
deltas routed to the first open lane of matching index and kind — so any optimisation that
changes routing shows up as a difference.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slow_params import briefly

from rxturn.events import Delta, MessageStart, MessageStop, PartStart, PartStop, StreamEvent
from rxturn.fold import fold_events
from rxturn.messages import ContentPart, TextPart, ToolCallPart

INDICES = st.integers(min_value=0, max_value=2)

part_start = st.builds(
    PartStart,
    index=INDICES,
    kind=st.sampled_from(["text", "thinking", "tool_call"]),
    id=st.sampled_from(["t1", "t2"]),
    name=st.sampled_from(["lookup", "fetch"]),
)
delta = st.builds(
    Delta,
    index=INDICES,
    text=st.sampled_from(["", "a", "bc", "def"]),
    kind=st.sampled_from(["text", "thinking"]),
)
part_stop = st.builds(PartStop, index=st.one_of(st.none(), INDICES))
body = st.lists(st.one_of(part_start, delta, delta, delta, part_stop), max_size=40)


def model(events: list[StreamEvent]) -> list[ContentPart]:
    lanes: list[dict[str, Any]] = []  # open order; each: index, kind, id, name, text, open
    for event in events:
        if isinstance(event, PartStart):
            lanes.append(
                {
                    "index": event.index,
                    "kind": event.kind,
                    "id": event.id,
                    "name": event.name,
                    "text": "",
                    "open": True,
                }
            )
        elif isinstance(event, Delta) and event.kind == "text":
            for lane in lanes:
                if lane["open"] and lane["index"] == event.index and lane["kind"] == "text":
                    lane["text"] += event.text
                    break
        elif isinstance(event, PartStop):
            for lane in lanes:
                if lane["open"] and (event.index is None or lane["index"] == event.index):
                    lane["open"] = False
                    break
    parts: list[ContentPart] = []
    for lane in lanes:
        if lane["kind"] == "text" and lane["text"]:
            parts.append(TextPart(lane["text"]))
        elif lane["kind"] == "tool_call":
            parts.append(ToolCallPart(lane["id"], lane["name"], {}))
    return parts


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=400, deadline=None)
@given(body)
def test_fold_routes_exactly_like_the_rules(events: list[StreamEvent]) -> None:
    stream = [MessageStart(id="m", model="x"), *events, MessageStop()]
    assert list(fold_events(stream).message().content) == model(events)


test_fold_routes_exactly_like_the_rules_briefly = briefly(
    test_fold_routes_exactly_like_the_rules, 60
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=200, deadline=None)
@given(body, body)
def test_forked_states_do_not_see_each_other(
    first: list[StreamEvent], second: list[StreamEvent]
) -> None:
    start = [MessageStart(id="m", model="x"), *first]
    base = fold_events(start)
    a = fold_events([*second, MessageStop()], base)
    b = fold_events([MessageStop()], base)  # the shorter continuation, folded after the longer
    assert list(a.message().content) == model([*first, *second])
    assert list(b.message().content) == model(first)


test_forked_states_do_not_see_each_other_briefly = briefly(
    test_forked_states_do_not_see_each_other, 40
)
