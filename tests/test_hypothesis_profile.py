"""The suite's Hypothesis profile (tests/conftest.py): an example is never failed for the time it
took. Before, every ``@given`` test without its own ``deadline=None`` (the fake's emitter, the
retry policies, ``Retry-After`` parsing) failed with ``DeadlineExceeded`` when one example took
over 250 ms of wall-clock time: a pause of the whole process on a loaded machine did that."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

#: longer than Hypothesis's default deadline (200 ms) with its 25% grace
PAUSED = 0.3


@given(st.just(0))
def _an_example_paused_by_the_machine(value: int) -> None:
    time.sleep(PAUSED)  # what a descheduled process looks like from inside
    assert value == 0


def test_an_example_is_never_failed_for_its_duration() -> None:
    _an_example_paused_by_the_machine()
