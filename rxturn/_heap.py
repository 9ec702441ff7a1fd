"""The cycle collector in rxturn's long-running command processes.

A batch process is a long loop of turns, each allocating a few hundred container objects that
die with it (a turn leaves no reference cycle: every one is freed as its last reference goes).
CPython's collector still runs a young collection every 700 net allocations and walks every
object the process holds at each full one: the imports, the price tables, the clients, tens of
thousands of objects that live as long as the process. With a hundred rows in flight that is
one young collection every few rows, and a few full walks of everything per thousand rows.
``rxturn fake-server`` is the same kind of loop on the other side (a few dozen objects per
request, most freed with it; what it records of each request lives on).

:func:`tune` is called once by those commands (``rxturn batch run``, each of its worker
processes, ``rxturn fake-server``) when their set-up is done, before the traffic: what exists
then is moved out of the collector's sight for good (``gc.freeze``), and young collections run
every :data:`YOUNG` net allocations. The library never calls it: a program that runs turns (or
a ``FakeProvider``) itself keeps its own collector settings. docs/batch.md, "Workers", "What a
batch process tunes".
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG", "tune"]

#: net allocations of container objects between two young collections in a tuned process
#: (CPython's default: 700)
YOUNG = 20_000


def tune() -> None:
    """Freeze what the process holds now and make young collections rarer (see the module)."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, old)
