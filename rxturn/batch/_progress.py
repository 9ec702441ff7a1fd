"""Progress of a batch run: a tqdm bar on a terminal (a widget in Jupyter), or JSON lines.

``--progress json`` writes one object per second on stderr with exactly these keys:
``done``, ``total``, ``ok``, ``error``, ``rows_per_s``, ``tokens_per_s``, ``waiting_s``,
``eta_s`` (``null`` until a rate is known). Rates count this run's rows only, so a resumed run
does not report the skipped rows as speed. ``waiting_s`` is the backend gate's
:attr:`~._budget.LocalGate.waited`: the wall time during which at least one row waited for the
provider's rate limit (a grant, a Retry-After pause, a sleep on the rate-limit ladder).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, TextIO

import msgspec

from ._api import BAR_SIZE, Tally, sized

__all__ = ["ProgressReport", "Reporter", "snapshot"]


class ProgressReport(msgspec.Struct, frozen=True):
    done: int
    total: int
    ok: int
    error: int
    rows_per_s: float
    tokens_per_s: float
    waiting_s: float
    eta_s: float | None


def snapshot(
    tally: Tally,
    start_done: int,
    waiting: float,
    *,
    rpm: int | None = None,
    tpm: int | None = None,
) -> ProgressReport:
    """The progress now. ``rpm`` / ``tpm``: the run's budgets, under which no pace can hold
    (a first burst fits in the window, then rows go ``rpm`` a minute, or as many as ``tpm``
    tokens a minute pay for): the ETA's rate is never above either. The tokens a row left
    will spend are guessed from the rows this run finished (the usage they reported, which is
    what the budget charges a row once its usage is in); the input is not read again."""
    elapsed = max(time.monotonic() - tally.started, 1e-9)
    rows = tally.done - start_done
    rate = rows / elapsed
    left = tally.total - tally.done
    if rpm is not None and rate > 0:
        rate = min(rate, rpm / 60.0)
    tokens = tally.input_tokens + tally.output_tokens
    if tpm is not None and rate > 0 and tokens > 0:
        rate = min(rate, tpm / 60.0 / (tokens / rows))
    return ProgressReport(
        done=tally.done,
        total=tally.total,
        ok=tally.ok,
        error=tally.error,
        rows_per_s=round(rows / elapsed, 2),
        tokens_per_s=round((tally.input_tokens + tally.output_tokens) / elapsed, 1),
        waiting_s=round(waiting, 2),
        eta_s=round(left / rate, 1) if rate > 0 else (0.0 if left == 0 else None),
    )


class Reporter:
    """Updates a bar or writes JSON lines every ``interval`` seconds until stopped."""

    def __init__(
        self,
        mode: str,
        tally: Tally,
        stream: TextIO,
        waiting: Callable[[], float] = lambda: 0.0,
        interval: float = 1.0,
        rpm: int | None = None,
        tpm: int | None = None,
    ) -> None:
        self.rpm = rpm
        self.tpm = tpm
        self.mode = mode
        self.tally = tally
        self.stream = stream
        self.waiting = waiting
        self.interval = interval
        self.start_done = tally.done
        self._bar: Any = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.mode == "none":
            return
        if self.mode == "bar":
            from tqdm.auto import tqdm

            fits = sized(self.stream)
            try:  # the bar draws itself at once
                self._bar = tqdm(
                    total=self.tally.total,
                    initial=self.tally.done,
                    unit="row",
                    file=self.stream,
                    dynamic_ncols=fits,
                    # a terminal of no size: tqdm would draw the bar in -1 columns (nothing)
                    ncols=None if fits else BAR_SIZE[0],
                    nrows=None if fits else BAR_SIZE[1],
                    smoothing=0.1,
                )
            except (OSError, ValueError):  # stderr's reader is gone already
                self.mode = "none"
                return
            self.interval = min(self.interval, 0.25)
        self._task = asyncio.ensure_future(self._loop())

    def _emit(self) -> None:
        try:
            self._show()
        except (OSError, ValueError):  # stderr's reader went away: the run goes on unseen
            self.mode = "none"
            if self._task is not None and self._task is not asyncio.current_task():
                self._task.cancel()
            self._task = None
            self._bar = None

    def _show(self) -> None:
        report = snapshot(self.tally, self.start_done, self.waiting(), rpm=self.rpm, tpm=self.tpm)
        if self._bar is not None:
            bar = self._bar
            bar.n = report.done
            bar.set_postfix_str(
                f"ok {report.ok} err {report.error} · {report.tokens_per_s:.0f} tok/s"
                + (f" · waited {report.waiting_s:.0f}s" if report.waiting_s else ""),
                refresh=False,
            )
            bar.refresh()
        else:
            self.stream.write(msgspec.json.encode(report).decode() + "\n")
            self.stream.flush()

    async def _loop(self) -> None:
        while self.mode != "none":
            await asyncio.sleep(self.interval)
            self._emit()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
            self._emit()
        if self._bar is not None:
            with contextlib.suppress(OSError, ValueError):  # stderr went away
                self._bar.close()
            self._bar = None
