"""Where the command line's Ctrl-C/SIGTERM handler (:func:`rxturn._interrupt.interrupt`) raises
``KeyboardInterrupt`` when the signal lands in code that cannot take it: a weakref callback
(printed as "Exception ignored" and lost: the command ran on), or asyncio's own callbacks
(a task's exception "never retrieved"; ``asyncio.run`` waiting forever on a half-done
``gather``). Each test calls the handler as Python would, in the frame the signal landed in."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
import weakref

import pytest

from rxturn._interrupt import interrupt


class _Thing:
    pass


def test_an_interrupt_in_a_weakref_callback_is_raised_in_the_code_that_ran(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # given back afterwards

    def landed_here(ref: object) -> None:  # the signal lands in the callback
        interrupt(signal.SIGTERM, sys._getframe())

    thing = _Thing()
    ref = weakref.ref(thing, landed_here)
    ran_on: list[str] = []
    with pytest.raises(KeyboardInterrupt):  # before: "Exception ignored in: …", and lost
        del thing  # the callback runs here
        ran_on.append("the line after")
    assert ran_on == []
    assert ref() is None


def test_an_interrupt_while_a_loop_runs_cancels_its_tasks_first(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    async def command() -> None:
        try:
            interrupt(signal.SIGTERM, sys._getframe())
            seen.append("ran on")
            await asyncio.sleep(30)
        except asyncio.CancelledError:  # asyncio.run's shutdown: the clean-up of a cancel
            seen.append("cancelled")
            raise

    with caplog.at_level(logging.ERROR, logger="asyncio"), pytest.raises(KeyboardInterrupt):
        asyncio.run(command())
    gc.collect()  # a task that ended with the interrupt logs when it is collected
    # before: KeyboardInterrupt raised inside the task, "Task exception was never retrieved"
    assert seen == ["ran on", "cancelled"]
    assert caplog.records == []
