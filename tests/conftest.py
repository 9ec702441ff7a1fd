"""Suite-wide setup.

CI may start the suite with file descriptor 0 closed. Python then sets ``sys.stdin`` and
``sys.__stdin__`` to ``None``, and IPython, which jupyter_client imports to run the notebook
tests, asserts that a stdin exists. So when there is none, stdin becomes ``/dev/null``. Because
``open`` takes the lowest free descriptor, that is fd 0, and child processes inherit it as well.

Loop hygiene (every test, autouse): asyncio reports what nobody else can see — "Task exception
was never retrieved", "Task was destroyed but it is pending!", "Future exception was never
retrieved", aiohttp's "Unclosed client session" / "Unclosed connection", an exception in a
callback — through ``loop.call_exception_handler``, which by default only logs. Here every such
report that reaches the default handler of any loop (the test's own, or one made by
``asyncio.run`` inside a test) is recorded and fails the test that produced it. Most of them are
made by ``__del__`` methods, so a test that ran an event loop ends with a ``gc.collect()``:
the report (and any ``ResourceWarning`` of an unclosed socket or transport, which
``filterwarnings = error`` turns into an exception that pytest's unraisable-exception check
fails the test with) then lands in the test that leaked it, not in a later one.

A test that provokes such a report on purpose says so with ``@pytest.mark.loop_reports_expected``
(and checks the reports itself, for instance with a handler of its own).
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

if sys.__stdin__ is None:
    sys.stdin = sys.__stdin__ = open(os.devnull)  # noqa: SIM115 - lives as long as the process


class _LoopReports:
    """What every event loop reported to its default exception handler, and whether one ran."""

    reports: ClassVar[list[str]] = []
    loop_ran: ClassVar[bool] = False


_original_call_exception_handler = asyncio.BaseEventLoop.call_exception_handler
_original_run_forever = asyncio.BaseEventLoop.run_forever


def _recording_call_exception_handler(self: asyncio.BaseEventLoop, context: dict[str, Any]) -> None:
    if self.get_exception_handler() is None:  # a handler of the test's own decides for itself
        message = str(context.get("message", "asyncio exception handler called"))
        exception = context.get("exception")
        if exception is not None:
            message += f": {type(exception).__name__}: {exception}"
        for key in ("task", "future", "handle", "client_session", "connector", "transport"):
            if key in context:
                message += f" [{key}: {context[key]!r:.200}]"
        _LoopReports.reports.append(message)
    _original_call_exception_handler(self, context)


def _flagging_run_forever(self: asyncio.BaseEventLoop) -> None:
    _LoopReports.loop_ran = True
    _original_run_forever(self)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "loop_reports_expected: the test provokes asyncio exception-handler reports on purpose",
    )
    asyncio.BaseEventLoop.call_exception_handler = _recording_call_exception_handler  # type: ignore[method-assign]
    asyncio.BaseEventLoop.run_forever = _flagging_run_forever  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    asyncio.BaseEventLoop.call_exception_handler = _original_call_exception_handler  # type: ignore[method-assign]
    asyncio.BaseEventLoop.run_forever = _original_run_forever  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _loop_hygiene(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test when an event loop reported an unretrieved exception, a destroyed pending
    task or an unclosed connection during it (see the module docstring)."""
    _LoopReports.loop_ran = False
    del _LoopReports.reports[:]
    yield
    if _LoopReports.loop_ran:
        gc.collect()  # __del__-made reports and ResourceWarnings land in this test
    reports, _LoopReports.reports = _LoopReports.reports, []
    if reports and request.node.get_closest_marker("loop_reports_expected") is None:
        shown = "\n  ".join(report[:600] for report in reports[:10])
        pytest.fail(
            f"asyncio reported {len(reports)} problem(s) during this test "
            f"(unretrieved exception, destroyed pending task, unclosed resource…):\n  {shown}",
            pytrace=False,
        )
