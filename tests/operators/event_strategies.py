"""Hypothesis strategies for provider event sequences, shared by the operator property tests.

Small alphabets on purpose: three lane indices, a handful of text fragments that are valid,
partial or invalid JSON, so that lane clashes, tool-JSON verdicts and truncation all come up
within a few dozen examples.
"""

from __future__ import annotations

from hypothesis import strategies as st

from rxturn.events import (
    Delta,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    Ping,
    StreamEvent,
)
from rxturn.messages import Usage

__all__ = ["EVENTS", "START", "STREAMS"]

START = MessageStart(id="m", model="x")

_texts = st.sampled_from(["", "a", "bc", '{"k": ', "1}", "}", "[", "]", '"s"', "null"])
_index = st.integers(0, 2)

#: One provider event of any kind (a repeated ``MessageStart`` included).
EVENTS: st.SearchStrategy[StreamEvent] = st.one_of(
    st.just(START),
    st.builds(
        PartStart,
        _index,
        st.sampled_from(["text", "thinking", "tool_call"]),
        id=st.just("c"),
        name=st.sampled_from(["", "tool"]),
    ),
    st.builds(Delta, _index, _texts, st.sampled_from(["text", "thinking", "tool_json"])),
    st.builds(PartStop, st.one_of(st.none(), _index)),
    st.builds(
        MessageDelta,
        st.sampled_from([None, "end_turn", "tool_call", "weird"]),
        st.one_of(st.none(), st.builds(Usage, input_tokens=st.integers(0, 9))),
    ),
    st.just(MessageStop()),
    st.just(Ping()),
)

#: Mostly well-started streams (``MessageStart`` first), sometimes not.
STREAMS: st.SearchStrategy[list[StreamEvent]] = st.one_of(
    st.lists(EVENTS, max_size=40).map(lambda events: [START, *events]),
    st.lists(EVENTS, max_size=12),
)
