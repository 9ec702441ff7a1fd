"""``timeline``: a turn log drawn as lanes of attempts over time (matplotlib).

The log only has points in time; :func:`attempt_spans` turns them back into intervals — a turn
start opens attempt 1, a reset closes it and opens the next, a rescue or the turn's end closes
the last — and :func:`timeline` draws them with the events on top. matplotlib is imported inside
the functions; the figure is a bare ``Figure`` (not registered with pyplot, so nothing leaks
between notebook cells or tests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._arguments import shown
from .._validate import positive
from ..errors import ConfigError
from ._recorder import TurnRecorder
from ._records import DeltaDensity, Record, as_records
from ._spans import AttemptSpan, TurnSummary, attempt_spans, summarize_turns
from ._time_axis import BrokenTimeScale, TimeBreak, seconds_label, time_breaks

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "AttemptSpan",
    "BrokenTimeScale",
    "TimeBreak",
    "TurnSummary",
    "attempt_spans",
    "summarize_turns",
    "time_breaks",
    "timeline",
]

# matplotlib's Axes methods leave ``**kwargs`` unannotated, so a strict checker reads every call
# through them as partially unknown; that one rule is off here, the rest of the module is typed.
# pyright: reportUnknownMemberType=false


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

# Figure geometry, in inches: a lane is LANE_HEIGHT tall; the title, the x axis and the margins
# take FRAME_HEIGHT; each row of breaker-trip / model-switch labels above the top lane takes
# LABEL_ROW (13 points).
LANE_HEIGHT = 0.55
# More lanes than this (a turn retried thousands of times) share the height of this many, and
# only every k-th lane is named: the figure stays a readable size instead of growing a lane's
# height per attempt (3,000 attempts made a figure 1,650 inches tall, an 8 MB PNG).
MAX_LANES = 40
FRAME_HEIGHT = 1.5
LABEL_ROW = 13 / 72
LABEL_FONT = 8  # points

# Marker sizes (scatter ``s``, points²). A rescued turn has its rescue star and its outcome
# marker at almost the same time on the same lane; the outcome marker is then drawn DODGE points
# to the right, more than the two markers' radii together, so they sit side by side.
RESCUE_SIZE = 160
OUTCOME_SIZE = 100
OUTCOME_EDGE = 2.0  # points
DODGE = (RESCUE_SIZE**0.5 + OUTCOME_SIZE**0.5 + OUTCOME_EDGE) / 2 + 3


def new_figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A constrained-layout ``Figure`` with one axes, outside pyplot's global state.

    Raises:
        ImportError: matplotlib is not installed (saying which extra brings it).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(
            "rxturn.notebook draws with matplotlib, which is not installed: "
            "pip install 'rxturn[notebook]'"
        ) from exc

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
    ``★`` rescue, ``▾`` first provider event (at the top edge of its lane), ``●`` served /
    ``✖`` failed turn (drawn just right of the rescue star when the turn was rescued); dashed
    vertical lines: breaker trips (``on_fallback``); dotted: model switches, each labelled
    above the top lane. A gap that dwarfs everything else (a stall waiting out its timeout) is
    drawn compressed: the time axis is broken there, the gap shaded and labelled with its real
    length (see :func:`time_breaks`); data coordinates stay true seconds.

    Each marker kind is one artist whose ``gid`` names it (``reset``, ``rescue``,
    ``first_event``, ``success``, ``failure``, ``fallback``, ``model_switched``, ``density``,
    ``time-break``), so tests and users can find it.

    Args:
        source: a :class:`TurnRecorder` or its records.
        title: the axes title.
        width: figure width in inches (height follows the number of lanes).
        labels: names for turns by their ``seq`` (default ``turn <seq>``), e.g. the scenario
            each turn ran.
        show_models: add the serving model under each lane's name.

    Returns:
        A ``matplotlib.figure.Figure`` (not registered with pyplot; Jupyter renders it inline).

    Raises:
        ConfigError: ``source`` is neither a recorder nor records, ``width`` is not a positive
            finite number, ``labels`` is not a mapping.
    """
    if not positive(width, finite=True):
        raise ConfigError(
            f"timeline(width) must be a positive number of inches, got {shown(width, 100)}"
        )
    if labels is not None and not isinstance(labels, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(
            f"timeline(labels) must be a mapping of turn seq to name, got {type(labels).__name__}"
        )
    if isinstance(source, TurnRecorder):
        records, densities = source.records, source.densities
    else:
        records, densities = as_records(source, name="timeline(source)"), []
    if not records:
        figure, ax = new_figure(width, FRAME_HEIGHT + LANE_HEIGHT)
        ax.set_title(title)
        ax.text(0.5, 0.5, "no records", ha="center", va="center", transform=ax.transAxes)
        return figure
    spans = attempt_spans(records)
    starts = [r.time for r in records if r.kind == "turn_start"]
    t0 = starts[0] if starts else records[0].time
    lines = [r for r in records if r.kind in ("fallback", "model_switched")]
    # activity: every record, and the start and end of every bin of text deltas
    activity = [r.time - t0 for r in records]
    for density in densities:
        activity += [start - t0 for start, _ in density.series()]
        activity += [start - t0 + density.bin_width for start, _ in density.series()]
    scale = BrokenTimeScale(time_breaks(activity))
    rows = _label_rows(lines, scale, t0, width, activity)
    n = max(len(spans), 1)
    head = max((row for row, _ in rows), default=-1) + 1
    lane_height = LANE_HEIGHT * min(n, MAX_LANES) / n
    figure, ax = new_figure(width, FRAME_HEIGHT + lane_height * n + LABEL_ROW * head)
    ax.set_title(title)
    if scale.breaks:
        ax.set_xscale("function", functions=(scale.forward, scale.inverse))
    lanes = {(span.seq, span.attempt): i for i, span in enumerate(spans)}

    def y_of(seq: int, attempt: int) -> float:
        return float(n - 1 - lanes.get((seq, attempt), 0))

    _draw_spans(ax, spans, t0, y_of)
    _draw_density(ax, densities, spans, lanes, t0, y_of)
    _draw_markers(ax, figure, records, t0, y_of)

    named = spans[:: -(-len(spans) // MAX_LANES)] if spans else spans  # every k-th lane
    ax.set_yticks([y_of(s.seq, s.attempt) for s in named])
    names = labels or {}
    ax.set_yticklabels(
        [
            f"{names.get(s.seq, f'turn {s.seq}')} · attempt {s.attempt}"
            + (f"\n{s.model}" if s.model and show_models else "")
            for s in named
        ],
        fontsize=8,
    )
    # headroom above the top lane: one row per stacked breaker / model-switch label
    ax.set_ylim(-0.7, n - 0.45 + head * LABEL_ROW / lane_height)
    low, high = ax.get_xlim()
    if scale.breaks:
        _draw_breaks(ax, scale)
        ax.set_xticks(scale.ticks(low, high))
        ax.xaxis.set_major_formatter(_plain_seconds)
        ax.set_xlim(low, high)
    _draw_lines(ax, lines, rows, t0)
    xlabel = "seconds since the first turn started" if starts else "seconds"
    if scale.breaks:
        xlabel += " (shaded gaps drawn shorter than they lasted)"
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure


def _plain_seconds(value: float, _position: float) -> str:
    return f"{round(value, 6):g}"


YOf = Callable[[int, int], float]


def _draw_spans(ax: Axes, spans: list[AttemptSpan], t0: float, y_of: YOf) -> None:
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


def _draw_density(
    ax: Axes,
    densities: Iterable[DeltaDensity],
    spans: list[AttemptSpan],
    lanes: Mapping[tuple[int, int], int],
    t0: float,
    y_of: YOf,
) -> None:
    densities = list(densities)
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


def _draw_markers(ax: Axes, figure: Figure, records: list[Record], t0: float, y_of: YOf) -> None:
    from matplotlib.transforms import ScaledTranslation

    rescued = {r.seq for r in records if r.kind == "rescue"}
    # the outcome marker of a rescued turn, DODGE points right of its rescue star
    dodged = ax.transData + ScaledTranslation(DODGE / 72, 0, figure.dpi_scale_trans)

    def marks(kind: str, chosen: list[Record], *, lift: float = 0.0, **style: Any) -> None:
        if not chosen:
            return
        failed_attempt = kind == "attempt_reset"  # drawn on the lane of the attempt that failed
        ax.scatter(
            [r.time - t0 for r in chosen],
            [y_of(r.seq, r.attempt - 1 if failed_attempt else r.attempt) + lift for r in chosen],
            zorder=3,
            **style,
        )

    def of(kind: str) -> list[Record]:
        return [r for r in records if r.kind == kind]

    marks(
        "attempt_reset",
        of("attempt_reset"),
        marker="x",
        s=70,
        color="#c62828",
        label="attempt reset",
        gid="reset",
    )
    marks(
        "rescue",
        of("rescue"),
        marker="*",
        s=RESCUE_SIZE,
        color="#6a1b9a",
        label="non-streaming rescue",
        gid="rescue",
    )
    # at the top edge of the lane, pointing down at it: never on top of the lane-end markers
    marks(
        "message_start",
        of("message_start"),
        lift=0.3,
        marker="v",
        s=30,
        color="#37474f",
        label="first event",
        gid="first_event",
    )
    # one outcome marker per turn: a tool turn's LLM and tool phases may both report an end
    outcomes: tuple[tuple[bool, dict[str, Any]], ...] = (
        (
            True,
            {
                "marker": "o",
                "facecolors": "none",
                "edgecolors": "#2e7d32",
                "linewidths": OUTCOME_EDGE,
                "label": "turn served",
                "gid": "success",
            },
        ),
        (False, {"marker": "X", "color": "#212121", "label": "turn failed", "gid": "failure"}),
    )
    for wanted, style in outcomes:
        first: dict[int, Record] = {}
        for r in of("turn_end"):
            if (r.ok is True) == wanted:
                first.setdefault(r.seq, r)
        plain = [r for r in first.values() if r.seq not in rescued]
        beside = [r for r in first.values() if r.seq in rescued]
        marks("turn_end", plain, s=OUTCOME_SIZE, **style)
        if plain:  # one legend entry per kind
            style = {key: value for key, value in style.items() if key != "label"}
        marks("turn_end", beside, s=OUTCOME_SIZE, transform=dodged, **style)


def _line_label(record: Record) -> str:
    return ("trip " if record.kind == "fallback" else "serving ") + record.detail


def _label_rows(
    lines: list[Record], scale: BrokenTimeScale, t0: float, width: float, activity: list[float]
) -> list[tuple[int, bool]]:
    """For each breaker-trip / model-switch line: the row of its label above the top lane, and
    whether the label sits left of the line (in the right part of the plot, so that it never
    runs past the axes into the legend).

    Positions are estimated before layout: the axes are about ``width - 3.8`` inches wide (lane
    names on the left, the legend on the right) and a character is about 0.55 em wide. Labels
    whose estimated extents would touch go to different rows.
    """
    if not lines:
        return []
    drawn = [float(v) for v in scale.forward(activity)]
    low, high = min(drawn), max(drawn)
    pad = 0.05 * ((high - low) or 1.0)  # matplotlib's default x margin
    low, high = low - pad, high + pad
    axes_points = max(width - 3.8, 0.5 * width) * 72
    rows: list[list[tuple[float, float]]] = []
    placed: list[tuple[int, bool]] = []
    for record in lines:
        at = float(scale.forward([record.time - t0])[0])
        x = (at - low) / (high - low) * axes_points
        extent = len(_line_label(record)) * LABEL_FONT * 0.55 + 3
        left = x > 0.55 * axes_points
        span = (x - extent, x) if left else (x, x + extent)
        row = 0
        while row < len(rows) and any(span[0] < b + 6 and a - 6 < span[1] for a, b in rows[row]):
            row += 1
        if row == len(rows):
            rows.append([])
        rows[row].append(span)
        placed.append((row, left))
    return placed


def _draw_lines(ax: Axes, lines: list[Record], rows: list[tuple[int, bool]], t0: float) -> None:
    """Breaker trips (dashed) and model switches (dotted), labelled in rows above the lanes."""
    labelled: set[str] = set()
    for record, (row, left) in zip(lines, rows, strict=True):
        colour = "#ef6c00" if record.kind == "fallback" else "#1565c0"
        legend = "breaker trip (fallback)" if record.kind == "fallback" else "model switch"
        ax.axvline(
            record.time - t0,
            linestyle="--" if record.kind == "fallback" else ":",
            color=colour,
            linewidth=1.4,
            label=None if legend in labelled else legend,
            gid=record.kind,
        )
        labelled.add(legend)
        ax.annotate(
            _line_label(record),
            (record.time - t0, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(-3 if left else 3, -(10 + 13 * row)),
            textcoords="offset points",
            ha="right" if left else "left",
            fontsize=LABEL_FONT,
            color=colour,
            gid=f"{record.kind}-label",
        )


def _draw_breaks(ax: Axes, scale: BrokenTimeScale) -> None:
    """Shade each cut gap, mark the cut on both spines and write the gap's real length."""
    from matplotlib.transforms import blended_transform_factory

    edge = blended_transform_factory(ax.transData, ax.transAxes)
    for i, gap in enumerate(scale.breaks):
        ax.axvspan(
            gap.start,
            gap.end,
            facecolor="#eceff1",
            edgecolor="#b0bec5",
            hatch="\\\\",
            linewidth=0.0,
            zorder=0,
            label="long gap, drawn shorter than it lasted" if i == 0 else None,
            gid="time-break",
        )
        # the classic broken-axis marks, a slash at each end of the cut (on the time axis only:
        # on the top spine they would cross the title)
        ax.plot(
            [gap.start, gap.end],
            [0.0, 0.0],
            transform=edge,
            marker=[(-1, -1), (1, 1)],
            markersize=9,
            linestyle="none",
            color="#37474f",
            mew=1.2,
            clip_on=False,
            gid="time-break-mark",
        )
        middle = float(scale.inverse(scale.forward([gap.start]) + gap.width / 2)[0])
        ax.text(
            middle,
            0.012,
            f"{seconds_label(gap.end - gap.start)} gap",
            transform=edge,
            ha="center",
            va="bottom",
            fontsize=7,
            color="#37474f",
            gid="time-break-label",
        )
