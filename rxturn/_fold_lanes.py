"""The fold's lanes and its shared logs: what :class:`~rxturn.fold.TurnState` is made of, and
how a lane becomes a message part. Private to :mod:`rxturn.fold` (see its docstring)."""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from .errors import InvalidToolInputError
from .events import (
    PartKind,
)
from .messages import (
    ContentPart,
    Message,
    RedactedThinkingPart,
    RefusalPart,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)
from .wire._partial_json import parse_partial

if TYPE_CHECKING:
    from .fold import TurnState

__all__ = [
    "Head",
    "Lane",
    "append_log",
    "closed_lane_part",
    "fresh_log",
    "open_lane_part",
    "visible_log",
]

# The fold reads these fields directly, as rxturn.fold does (a call per event would cost the
# hot path).
# pyright: reportPrivateUsage=false

_T = TypeVar("_T")
_json_decode = msgspec.json.decode


class Lane(msgspec.Struct, frozen=True, gc=False):
    """An open lane. ``start`` is the fragment-log length when it opened: its fragments follow."""

    serial: int
    index: int
    kind: PartKind
    id: str
    name: str
    start: int
    accepts: str = ""  # the Delta.kind this lane takes: "text", "tool_json", "thinking" ("" = none)
    signature: str | None = None  # a kept thinking lane's latest signature delta
    redacted: str | None = None  # a kept thinking lane's redacted data


class Head(msgspec.Struct, frozen=True, gc=False):
    """Everything but the fragment log: it changes only on the (few) non-delta events."""

    id: str = ""
    model: str = ""
    stop_reason: StopReason = StopReason.END_TURN
    usage: Usage | None = None
    started: bool = False
    completed: bool = False
    open: tuple[Lane, ...] = ()
    lanes: int = 0  # lanes opened so far == the next lane's serial number
    parts: list[tuple[int, ContentPart]] | None = None  # (lane serial, part); shared, append-only
    nparts: int = 0
    runs: list[tuple[int, int]] | None = None  # (first fragment, lane serial); shared, append-only
    nruns: int = 0
    owner: int = -1  # the serial of the lane that received the latest fragment
    hot: Lane | None = None  # that lane while it is still the first open match for its deltas
    rescued: Message | None = None  # set by a Fallback item: the reply, adopted wholesale
    keep_thinking: bool = False  # thinking lanes become message parts


# -- lanes to parts ------------------------------------------------------------------------------


def _lane_text(lane: Lane, state: TurnState) -> str:
    """Join the lane's fragments: those of the runs it owns, which all start after it opened."""
    head, frags, n = state._head, state._frags, state._nfrags
    runs, nruns = head.runs, head.nruns
    if not nruns or runs is None or frags is None:
        return ""
    serial = lane.serial
    first = bisect_left(runs, lane.start, 0, nruns, key=_run_start)
    pieces: list[str] = []
    for k in range(first, nruns):
        start, owner = runs[k]
        if owner == serial:
            end = runs[k + 1][0] if k + 1 < nruns else n
            pieces.extend(frags[start:end])
    return "".join(pieces)


def _run_start(run: tuple[int, int]) -> int:
    return run[0]


def closed_lane_part(lane: Lane, state: TurnState) -> ContentPart | None:
    if lane.kind == "text":
        text = _lane_text(lane, state)
        return TextPart(text) if text else None
    if lane.kind == "refusal":
        text = _lane_text(lane, state)
        return RefusalPart(text) if text else None
    if lane.kind == "thinking":
        if lane.accepts != "thinking":  # not kept
            return None
        if lane.redacted is not None:
            return RedactedThinkingPart(lane.redacted)
        return ThinkingPart(_lane_text(lane, state), lane.signature, lane.id)
    if lane.kind != "tool_call" or not lane.name:
        return None
    raw = _lane_text(lane, state)
    if not raw:
        return ToolCallPart(lane.id, lane.name, {})
    try:
        value: Any = _json_decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: nested too deeply
        detail = f"nested too deeply to decode ({exc})" if isinstance(exc, RecursionError) else exc
        raise InvalidToolInputError(f"{detail} in {_describe(lane)}", raw) from None
    return ToolCallPart(lane.id, lane.name, value)


def open_lane_part(lane: Lane, state: TurnState) -> ContentPart | None:
    if lane.kind != "tool_call" or not lane.name:
        return closed_lane_part(lane, state)  # text keeps its text; thinking gives nothing
    raw = _lane_text(lane, state)
    if not raw:
        return ToolCallPart(lane.id, lane.name, {})
    try:
        value: Any = parse_partial(raw)
    except ValueError as exc:
        raise InvalidToolInputError(f"{exc} in unfinished {_describe(lane)}", raw) from None
    return ToolCallPart(lane.id, lane.name, value)


def _describe(lane: Lane) -> str:
    return f"tool call {lane.name!r} (id {lane.id!r}, index {lane.index})"


# -- append-only shared logs ---------------------------------------------------------------------


def append_log(log: list[_T] | None, n: int, item: _T) -> list[_T]:
    """The log a state seeing ``log[:n]`` gets after appending ``item`` (see module docstring)."""
    if n and log is not None and len(log) == n:
        log.append(item)
        return log
    return fresh_log(log, n, item)


def fresh_log(log: list[_T] | None, n: int, item: _T) -> list[_T]:
    """A new list: ``log[:n]`` plus ``item``.

    ``n == 0`` always starts a fresh list, so a log is never shared with :data:`INITIAL_STATE`
    (which would otherwise keep the first turn's text alive for the life of the process).
    """
    fresh = log[:n] if log is not None and n else []
    fresh.append(item)
    return fresh


def visible_log(log: list[_T] | None, n: int) -> list[_T]:
    return log[:n] if log is not None and n else []
