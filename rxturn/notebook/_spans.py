"""A turn log's points in time turned back into attempt intervals and per-turn summaries
(what :func:`~rxturn.notebook.timeline` draws and the notebooks tabulate)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from ._recorder import TurnRecorder
from ._records import Outcome, Record, as_records

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = ["AttemptSpan", "TurnSummary", "attempt_spans", "summarize_turns"]


class AttemptSpan(msgspec.Struct, frozen=True, kw_only=True):
    """One streaming attempt on the timeline: when it ran and how it ended."""

    seq: int
    turn: int | None
    attempt: int
    start: float
    end: float
    model: str | None
    outcome: Outcome
    detail: str = ""


def attempt_spans(records: Iterable[Record]) -> list[AttemptSpan]:
    """Rebuild the attempts from a log: a turn start opens attempt 1, a reset closes one and
    opens the next, a rescue or the turn's end closes the last.

    Attempts still open at the end of the log end at its last record, with outcome ``open``.

    Raises:
        ConfigError: ``records`` is not an iterable of :class:`Record`.
    """
    records = as_records(records, name="attempt_spans(records)", recorder=False)
    spans: list[AttemptSpan] = []
    current: dict[str, Any] | None = None
    last_time = 0.0

    def close(at: float, outcome: Outcome, detail: str = "") -> None:
        nonlocal current
        if current is not None:
            spans.append(AttemptSpan(end=at, outcome=outcome, detail=detail, **current))
            current = None

    for record in records:
        last_time = record.time
        kind = record.kind
        if kind == "turn_start":
            close(record.time, "open")
            current = {
                "seq": record.seq,
                "turn": record.turn,
                "attempt": 1,
                "start": record.time,
                "model": record.model,
            }
        elif kind == "attempt_reset" and current is not None:
            close(record.time, "reset", record.detail)
            current = {
                "seq": record.seq,
                "turn": record.turn,
                "attempt": record.attempt,
                "start": record.time,
                "model": record.model,
            }
        elif kind == "rescue":
            close(record.time, "rescued", record.detail)
        elif kind in ("stream_success", "stream_failure") and current is not None:
            current["model"] = record.model
        elif kind == "turn_end":
            close(record.time, "ok" if record.ok else "failed", record.detail)
    close(last_time, "open")
    return spans


class TurnSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One turn of a log in a line: a row of a results table.

    Attributes:
        seq: the recorder's serial number of the turn.
        turn: the engine's turn index.
        model: the model that served (or failed) it, as last recorded.
        attempts: streaming attempts made (resets + 1).
        resets: ``AttemptReset`` items seen.
        rescued: the non-streaming rescue produced the reply.
        ok: how the turn ended; ``None`` while no end is recorded.
        error: the failure's description when ``ok`` is false.
        start: clock reading of the turn start.
        duration: seconds from start to end (``None`` while running).
    """

    seq: int
    turn: int | None
    model: str | None
    attempts: int
    resets: int
    rescued: bool
    ok: bool | None
    error: str | None
    start: float
    duration: float | None


def summarize_turns(records: Iterable[Record] | TurnRecorder) -> list[TurnSummary]:
    """One :class:`TurnSummary` per turn of the log, in order.

    Raises:
        ConfigError: ``records`` is neither a :class:`TurnRecorder` nor an iterable of
            :class:`Record`.
    """
    if isinstance(records, TurnRecorder):
        records = records.records
    records = as_records(records, name="summarize_turns(records)")
    rows: dict[int, dict[str, Any]] = {}
    for record in records:
        if record.kind == "turn_start":
            rows[record.seq] = {
                "seq": record.seq,
                "turn": record.turn,
                "model": record.model,
                "resets": 0,
                "rescued": False,
                "ok": None,
                "error": None,
                "start": record.time,
                "duration": None,
            }
            continue
        row = rows.get(record.seq)
        if row is None or record.turn is None or row["ok"] is not None:
            continue  # before any turn, between turns, or after this turn's (first) end
        if row["model"] is None and record.model:
            row["model"] = record.model
        if record.kind == "attempt_reset":
            row["resets"] += 1
        elif record.kind == "rescue":
            row["rescued"] = True
        elif record.kind in ("stream_success", "stream_failure"):
            row["model"] = record.model
        elif record.kind == "turn_end":
            row["ok"] = bool(record.ok)
            row["error"] = None if record.ok else record.detail
            row["duration"] = record.time - row["start"]
    return [TurnSummary(attempts=row["resets"] + 1, **row) for row in rows.values()]
