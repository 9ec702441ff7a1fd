"""What asyncio reports behind the tests' backs, recorded so the suite can fail on it.

asyncio reports "Task exception was never retrieved", "Task was destroyed but it is pending!",
"Future exception was never retrieved", aiohttp's "Unclosed client session" / "Unclosed
connection" and exceptions in callbacks through ``loop.call_exception_handler``, which by default
only logs them. :func:`install` wraps that method (for every loop, including loops that
``asyncio.run`` makes inside a test, in any thread) so that each report reaching a loop's
*default* handler is also appended to :data:`REPORTS`; a loop with a handler of its own (a test
checking reports itself) is left alone. ``tests/conftest.py`` turns the records into failures.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["REPORTS", "install", "take", "uninstall"]

#: Reports not yet claimed by a test, oldest first.
REPORTS: list[str] = []


class _Flags:
    loop_ran = False


_original_call_exception_handler = asyncio.BaseEventLoop.call_exception_handler
_original_run_forever = asyncio.BaseEventLoop.run_forever


def _recording_call_exception_handler(self: asyncio.BaseEventLoop, context: dict[str, Any]) -> None:
    if self.get_exception_handler() is None:
        message = str(context.get("message", "asyncio exception handler called"))
        exception = context.get("exception")
        if exception is not None:
            message += f": {type(exception).__name__}: {exception}"
        for key in ("task", "future", "handle", "client_session", "connector", "transport"):
            if key in context:
                message += f" [{key}: {context[key]!r:.200}]"
        REPORTS.append(message)
    _original_call_exception_handler(self, context)


def _flagging_run_forever(self: asyncio.BaseEventLoop) -> None:
    _Flags.loop_ran = True
    _original_run_forever(self)


def install() -> None:
    asyncio.BaseEventLoop.call_exception_handler = _recording_call_exception_handler
    asyncio.BaseEventLoop.run_forever = _flagging_run_forever


def uninstall() -> None:
    asyncio.BaseEventLoop.call_exception_handler = _original_call_exception_handler
    asyncio.BaseEventLoop.run_forever = _original_run_forever


def loop_ran(reset: bool = False) -> bool:
    """Whether an event loop ran since the last reset."""
    ran = _Flags.loop_ran
    if reset:
        _Flags.loop_ran = False
    return ran


def take() -> list[str]:
    """The reports recorded so far (and forget them)."""
    taken = REPORTS[:]
    del REPORTS[:]
    return taken
