"""The timeline's broken time axis: which long gaps are cut, and the scale that draws them
shorter while every event keeps its true time."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "BREAK_SHARE",
    "CUT_FACTOR",
    "STALL_SHARE",
    "BrokenTimeScale",
    "TimeBreak",
    "seconds_label",
    "time_breaks",
]

# When one gap dwarfs the rest (a stalled stream waiting out its timeout, a long backoff), a
# linear time axis squeezes every other event into a few pixels. Of the three usual answers, a
# log axis distorts every interval and has no zero; clipping the stall moves every later event
# off its true time. A *broken* axis keeps each event at its true time and every other interval
# to scale: only the long gaps are drawn shorter, shaded and labelled with their real length.
# Which gaps: a gap is cut when it takes more than STALL_SHARE of the whole span *and* is more
# than CUT_FACTOR times as long as all the shorter gaps together; every longer gap is cut with
# it (so two equal stalls are both cut). Both conditions matter: a spread of lengths such as
# 1, 2, 2.5 is not a stall, and neither is an ordinary gap between events that merely follows
# many near-zero ones (a record landing just after a text bin's edge). Each cut gap is drawn
# BREAK_SHARE of the uncut time wide, but never narrower than the longest uncut gap, so it still
# reads as the longest wait.
STALL_SHARE = 0.25
CUT_FACTOR = 2.0
BREAK_SHARE = 0.15


class TimeBreak(msgspec.Struct, frozen=True):
    """A gap of the time axis drawn narrower than its length: ``[start, end)`` in seconds
    (relative to the first turn), drawn ``width`` seconds wide."""

    start: float
    end: float
    width: float


def time_breaks(times: Iterable[float]) -> list[TimeBreak]:
    """The gaps between activity times that a timeline draws compressed (see ``BREAK_SHARE``).

    Examples:
        >>> [(b.start, b.end) for b in time_breaks([0, 1, 2, 3, 103, 104])]
        [(3, 103)]
        >>> time_breaks([0, 1, 2, 3, 4])
        []
    """
    points = sorted(set(times))
    gaps = sorted(
        ((b - a, a, b) for a, b in itertools.pairwise(points)),
        key=lambda gap: gap[0],
    )
    shorter = [0.0]  # shorter[i]: the gaps before gaps[i] together
    for length, _, _ in gaps:
        shorter.append(shorter[-1] + length)
    total = shorter[-1]
    cut: int | None = None
    for i in range(len(gaps) - 1, 0, -1):
        if gaps[i][0] <= STALL_SHARE * total:
            break
        if shorter[i] > 0 and gaps[i][0] > CUT_FACTOR * shorter[i]:
            cut = i
    if cut is None:
        return []
    uncut = gaps[:cut]
    kept = sum(length for length, _, _ in uncut)
    longest = max((length for length, _, _ in uncut), default=0.0)
    width = max(BREAK_SHARE * kept, longest)
    return sorted(
        (TimeBreak(start, end, min(width, length)) for length, start, end in gaps[cut:]),
        key=lambda gap: gap.start,
    )


class BrokenTimeScale:
    """Seconds → drawn units, piecewise linear: 1:1 except across the breaks.

    ``forward`` and ``inverse`` are the pair ``ax.set_xscale("function", ...)`` wants; data
    stays in seconds (artists, offsets and tests read true times), only the drawing changes.
    """

    __slots__ = ("breaks",)

    def __init__(self, breaks: Iterable[TimeBreak]) -> None:
        self.breaks = sorted(breaks, key=lambda gap: gap.start)

    def forward(self, values: ArrayLike) -> NDArray[np.float64]:
        import numpy as np

        x = np.asarray(values, dtype=float)
        drawn = x.copy()
        for gap in self.breaks:
            length = gap.end - gap.start
            inside = (x > gap.start) & (x < gap.end)
            drawn = np.where(x >= gap.end, drawn - (length - gap.width), drawn)
            drawn = np.where(inside, drawn - (x - gap.start) * (1 - gap.width / length), drawn)
        return drawn

    def inverse(self, values: ArrayLike) -> NDArray[np.float64]:
        import numpy as np

        y = np.asarray(values, dtype=float)
        x = y.copy()
        removed = 0.0
        for gap in self.breaks:
            length = gap.end - gap.start
            start = gap.start - removed  # where the gap begins, drawn
            x = np.where(y >= start + gap.width, x + (length - gap.width), x)
            inside = (y > start) & (y < start + gap.width)
            x = np.where(inside, gap.start + (y - start) * length / gap.width, x)
            removed += length - gap.width
        return x

    def ticks(self, low: float, high: float, *, count: int = 12) -> list[float]:
        """Round tick values for the view ``[low, high]``, one step for the whole axis (chosen
        for its drawn width): the multiples of the step inside each uncut stretch, so the labels
        on either side of a cut show the jump."""
        from matplotlib.ticker import MaxNLocator

        total = float(self.forward([high])[0] - self.forward([low])[0]) or 1.0
        nice = MaxNLocator(nbins=count, steps=[1, 2, 2.5, 5, 10]).tick_values(0.0, total)
        step = float(nice[1] - nice[0])
        edges = [low]
        for gap in self.breaks:
            edges += [gap.start, gap.end]
        edges.append(high)
        ticks: list[float] = []
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            ticks += [k * step for k in range(math.ceil(a / step), math.floor(b / step) + 1)]
        kept: list[float] = []
        last = -math.inf
        for tick in ticks:
            at = float(self.forward([tick])[0])
            if at - last >= step * 0.6:  # never two labels on top of each other at a cut
                kept.append(tick)
                last = at
        return kept


def seconds_label(seconds: float) -> str:
    """A duration for a label: ``"850 ms"``, ``"1.02 s"``, ``"61.5 s"``, ``"250 s"``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.2f} s"
    return f"{seconds:.1f} s" if seconds < 100 else f"{seconds:.0f} s"
