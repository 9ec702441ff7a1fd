"""``rxturn batch run --ray``: rows run on Ray actors; the driver stays the one writer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from .._arguments import counted, shown
from .._redact import quoted
from ..batch._errors import BatchError
from ..batch._file import Done, run_line
from ..batch._runner import BatchConfig, Runner
from ..batch._workers import SILENT_BEATS, heartbeat_interval, say
from ..errors import ConfigError
from ._budget import RayGate, budget_actor, ray_module

__all__ = ["RayBackend", "RowActor", "check_address"]

#: seconds a look at a Ray address may take (Ray's own client retries for minutes)
_REACH_TIMEOUT = 5.0
#: seconds the driver waits, at the end of a run, for the budget actor's last count of waits
_LAST_LOOK = 2.0
_PENDING: Any = object()  # an ask of an actor whose answer is not in yet

_KEY_ENV = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}


def check_address(address: str) -> None:
    """A clear error now for a Ray address with nothing listening there (``auto``: the one in
    ``RAY_ADDRESS``, if set); Ray itself would retry for minutes, printing a warning every few
    seconds. Imports nothing of Ray.

    Raises:
        ConfigError: ``address`` is not ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``.
        BatchError: nothing answers at that address.
    """
    import socket

    named = address
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "").strip()
        if not address or address == "auto":
            return  # the local cluster, found (or started) by Ray itself
        named = f"{address} (RAY_ADDRESS)"
    rest = address.removeprefix("ray://")
    host, colon, port_text = rest.rpartition(":")
    # (another scheme is no host: the dashboard's http://HOST:8265, which `ray job submit`
    # takes, was looked up as the host name "http://HOST", "Name or service not known")
    if (
        not colon
        or not host
        or "/" in host
        or not port_text.isdigit()
        or not 0 < int(port_text) < 65536
    ):
        raise ConfigError(
            f"--ray takes auto, HOST:PORT or ray://HOST:PORT, got {shown(address, 100)}"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port_text)), _REACH_TIMEOUT):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise BatchError(
            f"cannot reach the Ray cluster at {shown(named, 100)} ({reason})"
        ) from None


class RowActor:
    """One Ray actor: a :class:`~rxturn.batch.Runner` taking input lines, giving output lines."""

    def __init__(self, config: BatchConfig, run: int, budget: str, key_env: str) -> None:
        self.config = config
        self.run = run
        #: the run's budget actor, by name: an actor handle among the constructor's arguments
        #: would go to the object store, which Ray warns about for a restartable actor
        self.budget = budget
        self.key_env = key_env
        self.runner: Runner | None = None

    async def run_line(self, number: int, raw: bytes) -> Done:
        if self.runner is None:
            api_key = (os.environ.get(self.key_env) or "").strip() or None if self.key_env else None
            config = self.config
            # without --rpm/--tpm the budget actor still carries the run's Retry-After pauses
            limited = config.rpm is not None or config.tpm is not None
            gate = RayGate(ray_module().get_actor(self.budget), limited=limited)
            self.runner = Runner(config, api_key=api_key, gate=gate)
        return await run_line(self.runner, number, raw, self.run)

    async def ping(self) -> None:
        """Answered by this actor's event loop: the driver's watchdog asks it."""


class _Waited:
    """What the progress line reads as ``waiting_s``: the budget actor's count, as the
    driver's watchdog last heard it (once a heartbeat). ``on_pause`` (the command line's
    notice of a long Retry-After pause, where no progress is shown) is told, once a
    heartbeat, how long the run's pause still holds and how long it is in all, on the clock
    ``now``."""

    waited = 0.0
    on_pause: Callable[[float, float], object] | None = None
    now = staticmethod(time.monotonic)


class RayBackend:
    """Rows on ``actors`` Ray actors (default: one per CPU of the cluster)."""

    def __init__(
        self,
        config: BatchConfig,
        api_key: str | None,
        run: int,
        *,
        address: str = "auto",
        actors: int | None = None,
    ) -> None:
        self.config = config
        self.run = run
        self.address = address
        self.actors_wanted = actors
        self._api_key = api_key
        self.gate = _Waited()
        self.capacity = config.concurrency
        self._actors: list[Any] = []
        self._load: list[int] = []
        self._started_ray = False
        self.beat = heartbeat_interval()
        #: per actor: the ping in flight and the watchdog's looks since it was sent
        self._pings: list[tuple[Any, int] | None] = []
        self._watchdog: asyncio.Task[None] | None = None
        self._budget: Any = None  # the run's budget actor, made by _init
        self._waited: Any = None  # the ask for its count of waits, in flight
        self._left: Any = None  # the ask for what is left of the run's pause, in flight

    def _init(self) -> None:
        ray = ray_module()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": "ERROR",
            }
            try:
                if self.address == "auto":
                    try:
                        ray.init(address="auto", **kwargs)
                    except ConnectionError:  # no cluster running: start a local one
                        ray.init(**kwargs)
                else:
                    ray.init(address=self.address, **kwargs)
            except Exception as exc:  # Ray's own errors: one line, not a traceback
                raise BatchError(
                    f"cannot start on the Ray cluster at {shown(self.address, 100)}: "
                    f"{type(exc).__name__}: {quoted(exc)}"
                ) from None
            self._started_ray = True
        count = self.actors_wanted or max(1, int(ray.cluster_resources().get("CPU", 1)))
        config = self.config
        # one per run, with or without --rpm/--tpm: it also carries the Retry-After pauses and
        # counts the run's waits (the progress line's waiting_s)
        budget = f"rxturn-budget-{uuid.uuid4().hex[:12]}"
        self._budget = budget_actor(budget, rpm=config.rpm, tpm=config.tpm)
        key_env = _KEY_ENV.get(config.provider, "")
        env = {key_env: self._api_key} if key_env and self._api_key else {}
        # an async actor runs at most max_concurrency calls at once (Ray's default: 1000):
        # room for every row of --concurrency, and for the watchdog's ping beside them
        remote = ray.remote(
            num_cpus=0,
            max_restarts=-1,
            max_task_retries=-1,
            max_concurrency=config.concurrency + 8,
        )(RowActor)
        self._actors = [
            remote.options(runtime_env={"env_vars": env} if env else None).remote(
                config, self.run, budget, key_env
            )
            for _ in range(count)
        ]
        self._load = [0] * count
        self._pings = [None] * count
        self.capacity = count * config.concurrency

    async def start(self) -> None:
        self._init()  # in the main thread (Ray sets signal handlers there); nothing runs yet
        self._watchdog = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        """Restart an actor that holds rows and has not answered a ping for
        :data:`~rxturn.batch._workers.SILENT_BEATS` heartbeats (stopped, deadlocked, its loop
        stuck): Ray sees a dead actor, not a hung one. Ray restarts a killed actor and sends
        it again the calls it held (``max_restarts``/``max_task_retries``)."""
        ray = ray_module()
        while True:
            await asyncio.sleep(self.beat)
            self._look_at_waits(ray)
            for index, actor in enumerate(self._actors):
                ping = self._pings[index]
                if self._load[index] == 0:
                    self._pings[index] = None
                    continue
                if ping is None:
                    self._pings[index] = (actor.ping.remote(), 0)
                    continue
                ref, looks = ping
                ready, _ = ray.wait([ref], timeout=0)
                if ready:  # answered: the next look asks again
                    self._pings[index] = None
                    continue
                looks += 1
                self._pings[index] = (ref, looks)
                if looks >= SILENT_BEATS:
                    self._pings[index] = None
                    say(
                        f"rxturn batch: Ray actor {index} answered nothing for "
                        f"{looks * self.beat:.0f} s while holding "
                        f"{counted(self._load[index], 'row')}; restarted\n"
                    )
                    ray.kill(actor, no_restart=False)

    def _look_at_waits(self, ray: Any) -> None:
        """Take the budget actor's count of the run's waits if its answer is in, and ask
        again (never waiting for it: a busy or lost actor leaves the last count shown); the
        same for what is left of the run's pause, when a notice of long pauses listens."""
        if self._budget is None:
            return
        waited = self._answer(ray, self._waited)
        if waited is not _PENDING:
            if waited is not None:
                self.gate.waited = float(waited)
            self._waited = self._budget.waited.remote()
        on_pause = self.gate.on_pause
        if on_pause is None:
            return
        pause = self._answer(ray, self._left)
        if pause is not _PENDING:
            if pause and pause[0] > 0:
                on_pause(float(pause[0]), float(pause[1]))
            self._left = self._budget.pause_now.remote()

    @staticmethod
    def _answer(ray: Any, asked: Any) -> Any:
        """The answer of ``asked`` if it is in (``None``: nothing asked yet, or the actor is
        gone), :data:`_PENDING` while it is not."""
        if asked is None:
            return None
        ready, _ = ray.wait([asked], timeout=0)
        if not ready:
            return _PENDING
        with contextlib.suppress(Exception):  # the actor is gone: the last answer stays
            return ray.get(asked)
        return None

    def submit(self, number: int, raw: bytes) -> asyncio.Future[Done]:
        index = min(range(len(self._actors)), key=self._load.__getitem__)
        self._load[index] += 1
        ref = self._actors[index].run_line.remote(number, raw)
        future: asyncio.Future[Done] = asyncio.wrap_future(ref.future())

        def release(_: object) -> None:
            self._load[index] -= 1

        future.add_done_callback(release)
        return future

    async def aclose(self) -> None:
        ray = ray_module()
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        budget, self._budget = self._budget, None
        if budget is not None:
            # the run's last count of waits, for the summary's progress line
            with contextlib.suppress(Exception):  # Ray's errors, or no answer in time
                answer = asyncio.wrap_future(budget.waited.remote().future())
                self.gate.waited = float(await asyncio.wait_for(answer, _LAST_LOOK))
            ray.kill(budget)
        if self._started_ray:
            await asyncio.to_thread(ray.shutdown)
