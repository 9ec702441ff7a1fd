"""The fold's data: :class:`TurnState` (public as :class:`rxturn.fold.TurnState`), its lanes and
shared logs, and how a lane becomes a message part. The transitions, event by event, are in
:mod:`rxturn.fold` (its docstring says why the state looks the way it does)."""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter
from typing import Any, TypeVar

import msgspec

from .errors import InvalidToolInputError
from .events import PartKind
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
from .wire._errors import shown
from .wire._partial_json import parse_partial

__all__ = [
    "Head",
    "Lane",
    "TurnState",
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
_serial = itemgetter(0)  # a (lane serial, part) entry's serial


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
    #: (first fragment, lane serial), shared, append-only; empty while one run, the owner's
    #: from fragment 0, has all the fragments (it is written out when a second run starts)
    runs: list[tuple[int, int]] | None = None
    nruns: int = 0
    #: the serial of the lane that received the latest fragment (before any fragment: the first
    #: lane opened that takes fragments, made hot at its start)
    owner: int = -1
    hot: Lane | None = None  # that lane while it is still the first open match for its deltas
    rescued: Message | None = None  # set by a Fallback item: the reply, adopted wholesale
    keep_thinking: bool = False  # thinking lanes become message parts


# -- the state -------------------------------------------------------------------------------------


class TurnState(msgspec.Struct, frozen=True, eq=False, gc=False):
    """The fold's state after some prefix of a turn's events. Immutable; build a reply with
    :meth:`message`.

    A delta — nearly every event of a long reply — only appends to the fragment log, so the state
    keeps everything else in one shared ``Head`` and a delta costs one three-field Struct. The
    public attributes below are read-only properties over it.
    """

    _head: Head = Head()
    _frags: list[str] | None = None  # text and tool-JSON fragments; shared, append-only
    _nfrags: int = 0

    @property
    def id(self) -> str:
        """The provider's message id (from ``MessageStart``)."""
        return self._head.id

    @property
    def model(self) -> str:
        """The model that is answering (from ``MessageStart``)."""
        return self._head.model

    @property
    def stop_reason(self) -> StopReason:
        """The folded stop reason: ``END_TURN`` until a ``MessageDelta`` says otherwise."""
        return self._head.stop_reason

    @property
    def usage(self) -> Usage | None:
        """The usage of the last ``MessageDelta`` (``None`` before one, or if it had none)."""
        return self._head.usage

    @property
    def started(self) -> bool:
        """A ``MessageStart`` has been folded."""
        return self._head.started

    @property
    def completed(self) -> bool:
        """A ``MessageStop`` has been folded: the reply is complete."""
        return self._head.completed

    @property
    def keep_thinking(self) -> bool:
        """Thinking lanes become message parts (see :func:`initial_state`)."""
        return self._head.keep_thinking

    @property
    def has_partial_data(self) -> bool:
        """At least one part is complete: a closed non-empty text lane or a closed tool call
        (kept thinking does not count: it is not an answer)."""
        head = self._head
        if head.rescued is not None:
            return bool(head.rescued.content)
        if not head.keep_thinking:
            return head.nparts > 0
        return any(
            not isinstance(part, ThinkingPart | RedactedThinkingPart)
            for _, part in visible_log(head.parts, head.nparts)
        )

    @property
    def open_lanes(self) -> int:
        """How many lanes are open right now."""
        return len(self._head.open)

    def message(self) -> Message:
        """Build the assistant message folded so far.

        Parts come in the order their lanes opened, closed and still-open lanes alike: a
        still-open text lane keeps its text (as the official SDKs do) and a still-open tool lane
        keeps its call with the input parsed as far as it goes (docs/behaviour.md §6). ``END_TURN``
        with tool calls present becomes ``TOOL_CALL`` (docs/behaviour.md §1).

        Raises:
            InvalidToolInputError: a still-open tool lane's JSON cannot be parsed even partially.
        """
        head = self._head
        if head.rescued is not None:
            return head.rescued
        # (lane serial, part): the closed lanes' in closing order, then the open lanes'; a lane
        # is closed or open, so each serial comes once and the order by serial is block order
        entries = visible_log(head.parts, head.nparts)
        for lane in head.open:
            part = open_lane_part(lane, self)
            if part is not None:
                entries.append((lane.serial, part))
        if len(entries) > 1:  # (most replies are one part: no sort, no key call)
            entries.sort(key=_serial)
        parts: list[ContentPart] = []
        for _, part in entries:  # (a loop: a comprehension is a call of its own on 3.11)
            parts.append(part)
        content = tuple(parts)
        stop_reason = head.stop_reason
        if stop_reason is StopReason.END_TURN:
            for part in content:
                if type(part) is ToolCallPart:
                    stop_reason = StopReason.TOOL_CALL
                    break
        return Message(
            id=head.id,
            model=head.model,
            role="assistant",
            content=content,
            stop_reason=stop_reason,
            usage=head.usage,
        )

    def __repr__(self) -> str:
        head = self._head
        return (
            f"TurnState(id={head.id!r}, model={head.model!r}, stop_reason={head.stop_reason.value},"
            f" usage={head.usage!r}, started={head.started}, completed={head.completed},"
            f" parts={head.nparts}, open_lanes={len(head.open)},"
            f" rescued={head.rescued is not None})"
        )


# -- lanes to parts ------------------------------------------------------------------------------


def _lane_text(lane: Lane, state: TurnState) -> str:
    """Join the lane's fragments: those of the runs it owns, which all start after it opened."""
    head, frags, n = state._head, state._frags, state._nfrags
    if frags is None:
        return ""
    runs, nruns = head.runs, head.nruns
    if not nruns or runs is None:  # one run, implied: every fragment so far is its owner's
        return "".join(frags[:n]) if head.owner == lane.serial else ""
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
    return f"tool call {shown(lane.name)} (id {shown(lane.id)}, index {lane.index})"


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
