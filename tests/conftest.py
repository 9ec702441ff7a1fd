"""Suite-wide setup: rxturn's own pytest plugin (``scheduler``, ``clean``, ``scripted_client``,
``fake_provider``, ``fake_client``), a stdin, and Hypothesis without per-example deadlines.

CI may start the suite with file descriptor 0 closed. Python then sets ``sys.stdin`` and
``sys.__stdin__`` to ``None``, and IPython, which jupyter_client imports to run the notebook
tests, asserts that a stdin exists. So when there is none, stdin becomes ``/dev/null``. Because
``open`` takes the lowest free descriptor, that is fd 0, and child processes inherit it as well.

Loop hygiene (autouse): asyncio reports what nobody else sees — "Task exception was never
retrieved", "Task was destroyed but it is pending!", "Future exception was never retrieved",
aiohttp's "Unclosed client session" / "Unclosed connection", an exception in a callback — through
``loop.call_exception_handler``, which by default only logs. :mod:`loop_hygiene` records every
such report that reaches the default handler of any loop, and a report fails the test that
produced it. Most reports are made by ``__del__`` methods, so a test that ran an event loop ends
with a collection of the young generations (cheap, and where a test's own objects live), and
every module ends with a full collection (objects that lived long enough to reach the oldest
generation; a full collection after every test would cost a minute or more over the suite). A
``ResourceWarning`` of an unclosed socket, transport or session raised there becomes an error
(``filterwarnings = error``) that pytest's unraisable-exception check fails the test with.

A test that provokes such a report on purpose says so with ``@pytest.mark.loop_reports_expected``
(and checks the reports itself, for instance with a handler of its own).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator

import loop_hygiene
import pytest
from hypothesis import settings

# the virtual-time kit and fake-provider fixtures rxturn ships for its users' tests
pytest_plugins = ["rxturn.testing.pytest_plugin"]

# Hypothesis times every example against a deadline (200 ms unless a test sets one) and fails a
# test whose example overran it once: a wall-clock bound that a loaded machine (two cores
# running the suite's subprocesses, a pause of the whole process) crosses with no fault in the
# code. Every property here holds or fails on its values alone, so no example has a deadline;
# with none, Hypothesis's own too_slow check allows 30 s of input generation instead of 1 s.
settings.register_profile("rxturn", deadline=None)
settings.load_profile("rxturn")

if sys.__stdin__ is None:
    sys.stdin = sys.__stdin__ = open(os.devnull)  # noqa: SIM115 - lives as long as the process


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "loop_reports_expected: the test provokes asyncio exception-handler reports on purpose",
    )
    loop_hygiene.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    loop_hygiene.uninstall()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what imports and collection built (libraries, SDK models, test tables): no test
    made it, so the full collections of the hygiene checks need not scan it again per module."""
    gc.collect()
    gc.freeze()


def _fail_on(reports: list[str], where: str) -> None:
    if reports:
        shown = "\n  ".join(report[:600] for report in reports[:10])
        pytest.fail(
            f"asyncio reported {len(reports)} problem(s) {where} (unretrieved exception, "
            f"destroyed pending task, unclosed resource…):\n  {shown}",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _loop_hygiene(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test when an event loop reported an unretrieved exception, a destroyed pending
    task or an unclosed connection during it (see the module docstring).

    A test that runs the ``rxturn`` command in-process (``main([...])``) lets the command tune
    the collector as it tunes its own process: the thresholds are set back after it, so the
    next tests see the interpreter's as a library user's process has them."""
    loop_hygiene.loop_ran(reset=True)
    earlier = loop_hygiene.take()  # reports made between tests: the module check shows them
    threshold = gc.get_threshold()
    yield
    if gc.get_threshold() != threshold:
        gc.set_threshold(*threshold)
    if loop_hygiene.loop_ran():
        gc.collect(1)
    reports = loop_hygiene.take()
    loop_hygiene.REPORTS[:0] = earlier
    if request.node.get_closest_marker("loop_reports_expected") is None:
        _fail_on(reports, "during this test")


@pytest.fixture(autouse=True, scope="module")
def _loop_hygiene_module() -> Iterator[None]:
    """The same check after a full collection, once per module.

    What survives that collection (modules and tables imported lazily by a test, session
    fixtures, caches) is frozen as well: the next module's collection then scans only what the
    next module's tests create, instead of everything every earlier module left behind (a tenth
    of a second per module by the end of the run)."""
    _fail_on(loop_hygiene.take(), "between the previous module and this one")
    yield
    gc.collect()
    gc.freeze()
    _fail_on(loop_hygiene.take(), "in this module (found by its closing full collection)")
