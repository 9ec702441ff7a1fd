"""``timeline``: a turn log drawn as lanes of attempts over time (matplotlib).

The log only has points in time; :func:`attempt_spans` turns them back into intervals — a turn
start opens attempt 1, a reset closes it and opens the next, a rescue or the turn's end closes
the last — and :func:`timeline` draws them with the events on top. matplotlib is imported inside
the functions; the figure is a bare ``Figure`` (not registered with pyplot, so nothing leaks
between notebook cells or tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ._recorder import TurnRecorder
from ._records import Outcome, Record

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["AttemptSpan", "TurnSummary", "attempt_spans", "summarize_turns", "timeline"]

# matplotlib's Axes methods leave ``**kwargs`` unannotated, so a strict checker reads every call
# through them as partially unknown; that one rule is off here, the rest of the module is typed.
# pyright: reportUnknownMemberType=false


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
    """
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
    """One :class:`TurnSummary` per turn of the log, in order."""
    if isinstance(records, TurnRecorder):
        records = records.records
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


_OUTCOME_COLOURS: dict[str, str] = {
    "ok": "#2e7d32",
    "reset": "#e57373",
    "rescued": "#6a1b9a",
    "failed": "#212121",
    "open": "#9e9e9e",
}
_OUTCOME_LABELS: dict[str, str] = {
    "ok": "attempt served the turn",
    "reset": "attempt discarded (retried)",
    "rescued": "stream abandoned → rescue",
    "failed": "attempt failed the turn",
    "open": "attempt still running",
}


def new_figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A constrained-layout ``Figure`` with one axes, outside pyplot's global state."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def timeline(
    source: TurnRecorder | Iterable[Record],
    *,
    title: str = "turn timeline",
    width: float = 11.0,
    labels: Mapping[int, str] | None = None,
    show_models: bool = True,
) -> Figure:
    """Draw a turn log: one lane per attempt, with what happened to it over time.

    Lanes (top to bottom in order) are bars coloured by how the attempt ended, with the
    text-delta density as grey bars inside (from a recorder only). Markers: ``x`` attempt reset,
    ``★`` rescue, ``▾`` first provider event, ``●`` served / ``✖`` failed turn; dashed vertical
    lines: breaker trips (``on_fallback``); dotted: model switches. Each marker kind is one
    artist whose ``gid`` names it (``reset``, ``rescue``, ``first_event``, ``success``,
    ``failure``, ``fallback``, ``model_switched``, ``density``), so tests and users can find it.

    Args:
        source: a :class:`TurnRecorder` or its records.
        title: the axes title.
        width: figure width in inches (height follows the number of lanes).
        labels: names for turns by their ``seq`` (default ``turn <seq>``), e.g. the scenario
            each turn ran.
        show_models: add the serving model under each lane's name.

    Returns:
        A ``matplotlib.figure.Figure`` (not registered with pyplot; Jupyter renders it inline).
    """
    if isinstance(source, TurnRecorder):
        records, densities = source.records, source.densities
    else:
        records, densities = list(source), []
    spans = attempt_spans(records)
    lanes = {(span.seq, span.attempt): i for i, span in enumerate(spans)}
    n = max(len(spans), 1)
    figure, ax = new_figure(width, 1.6 + 0.55 * n)
    ax.set_title(title)
    if not records:
        ax.text(0.5, 0.5, "no records", ha="center", va="center", transform=ax.transAxes)
        return figure
    starts = [r.time for r in records if r.kind == "turn_start"]
    t0 = starts[0] if starts else records[0].time

    def y_of(seq: int, attempt: int) -> float:
        return float(n - 1 - lanes.get((seq, attempt), 0))

    for outcome in _OUTCOME_COLOURS:
        chosen = [s for s in spans if s.outcome == outcome]
        for i, span in enumerate(chosen):
            ax.broken_barh(
                [(span.start - t0, max(span.end - span.start, 1e-9))],
                (y_of(span.seq, span.attempt) - 0.35, 0.7),
                facecolors=_OUTCOME_COLOURS[outcome],
                alpha=0.25,
                edgecolor=_OUTCOME_COLOURS[outcome],
                hatch="//" if outcome == "failed" else None,
                label=_OUTCOME_LABELS[outcome] if i == 0 else None,
                gid=f"span-{outcome}",
            )

    peak = max((n_ for d in densities for _, n_ in d.series()), default=0)
    xs: list[float] = []
    heights: list[float] = []
    bottoms: list[float] = []
    widths: list[float] = []
    for density in densities:
        index = lanes.get((density.seq, density.attempt))
        if index is None:
            continue
        y, end = y_of(density.seq, density.attempt), spans[index].end
        for start, count in density.series():
            xs.append(start - t0)
            heights.append(0.6 * count / peak)
            bottoms.append(y - 0.3)
            widths.append(max(min(density.bin_width, end - start), 0.0))
    if xs:
        ax.bar(
            xs,
            heights,
            width=widths,
            bottom=bottoms,
            align="edge",
            color="#455a64",
            alpha=0.55,
            label="text deltas (density)",
            gid="density",
        )

    def lane_of(record: Record, *, failed_attempt: bool = False) -> float:
        attempt = record.attempt - 1 if failed_attempt else record.attempt
        return y_of(record.seq, attempt)

    def marks(kind: str, **style: Any) -> None:
        chosen = [r for r in records if r.kind == kind]
        if kind == "turn_end":
            # one marker per turn: a tool turn's LLM and tool phases may both report an end
            wanted = style["gid"] == "success"
            first: dict[int, Record] = {}
            for r in chosen:
                if (r.ok is True) == wanted:
                    first.setdefault(r.seq, r)
            chosen = list(first.values())
        if not chosen:
            return
        ax.scatter(
            [r.time - t0 for r in chosen],
            [lane_of(r, failed_attempt=kind == "attempt_reset") for r in chosen],
            zorder=3,
            **style,
        )

    marks("attempt_reset", marker="x", s=70, color="#c62828", label="attempt reset", gid="reset")
    marks("rescue", marker="*", s=160, color="#6a1b9a", label="non-streaming rescue", gid="rescue")
    marks(
        "message_start", marker="v", s=30, color="#37474f", label="first event", gid="first_event"
    )
    # hollow, so a rescue star drawn just before the turn's end stays visible inside
    marks(
        "turn_end",
        marker="o",
        s=110,
        facecolors="none",
        edgecolors="#2e7d32",
        linewidths=2,
        label="turn served",
        gid="success",
    )
    marks("turn_end", marker="X", s=80, color="#212121", label="turn failed", gid="failure")

    for kind, style, label in (
        ("fallback", "--", "breaker trip (fallback)"),
        ("model_switched", ":", "model switch"),
    ):
        colour = "#ef6c00" if kind == "fallback" else "#1565c0"
        for i, record in enumerate(r for r in records if r.kind == kind):
            ax.axvline(
                record.time - t0,
                linestyle=style,
                color=colour,
                linewidth=1.4,
                label=label if i == 0 else None,
                gid=kind,
            )
            ax.annotate(
                ("trip " if kind == "fallback" else "serving ") + record.detail,
                (record.time - t0, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(3, -12 if kind == "fallback" else -24),
                textcoords="offset points",
                fontsize=8,
                color=colour,
            )

    ax.set_yticks([y_of(s.seq, s.attempt) for s in spans])
    names = labels or {}
    ax.set_yticklabels(
        [
            f"{names.get(s.seq, f'turn {s.seq}')} · attempt {s.attempt}"
            + (f"\n{s.model}" if s.model and show_models else "")
            for s in spans
        ],
        fontsize=8,
    )
    ax.set_ylim(-0.7, n - 0.1)  # headroom above the top lane for the vertical-line labels
    ax.set_xlabel("seconds since the first turn started" if starts else "seconds")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure
