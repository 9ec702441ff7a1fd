"""The benchmark's servers, each in a child process, and the launcher that starts them.

Why a child process. Every contender that streams over loopback is timed by the CPU time of the
*benchmark* process. The fake provider builds each reply's bytes per request and writes them;
run in-process, that work would be charged to whichever contender happened to be asking (and,
on one event loop, would also queue in front of its reads). In a child it runs on the other
core and costs no contender anything, so "µs per event" means what the client spends.

Two servers:

- ``fake`` — :class:`rxturn.testing.FakeProvider`, unmodified, serving a scenario file. Every
  per-size, per-format contender (rxturn's clients and both official SDKs) talks to it.
- ``stamp`` — a small aiohttp server for the concurrency run. It answers ``POST /v1/messages``
  (Anthropic) and ``POST /v1/chat/completions`` (OpenAI, usage included) with the *same bytes*
  the fake's emitter (:func:`rxturn.testing._emit.stream_events`) produces, for a model named
  ``stamp-<events>-<pace_us>``, with two differences the latency measurement needs: (1) every
  text delta is 19 ``@`` characters, and just before the delta is written the ``@``s are
  replaced by ``time.monotonic_ns()`` (CLOCK_MONOTONIC is one clock for every process on the
  machine), so a client can compute *arrival time - send time* per event; and (2) with a pace,
  the head of the reply (``message_start`` …) is written at once and the deltas follow
  ``pace_us`` apart, the first after a random offset in ``[0, pace)`` so that a thousand
  streams are not phase-locked into bursts (real traffic is not). Pace 0 writes the whole reply
  at once, in 256 KiB slices, as the fake does. It listens with a 4096-connection backlog
  (aiohttp's default of 128 would drop SYNs when a thousand turns connect at once and turn the
  run into a test of TCP retransmission timers).

Run as ``python _servers.py fake SCENARIO.json`` or ``python _servers.py stamp``; the first
stdout line is ``listening on http://127.0.0.1:PORT`` (the convention of ``rxturn fake-server``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

__all__ = ["PLACEHOLDER", "ChildServer", "FakeServerProcess", "stamp_model"]

#: The text of every delta the stamp server sends, replaced by the send time in nanoseconds.
PLACEHOLDER: Final = b"@" * 19
_SLICE: Final = 256 * 1024
_START_TIMEOUT: Final = 60.0
_STOP_TIMEOUT: Final = 10.0


def stamp_model(events: int, pace_us: int) -> str:
    """The model name asking the stamp server for ``events`` deltas, ``pace_us`` apart."""
    return f"stamp-{events}-{pace_us}"


class ChildServer:
    """Start one of this module's servers in a child process; stop it on exit.

    Attributes:
        base_url: ``http://127.0.0.1:PORT`` once started.
    """

    def __init__(self, *args: str) -> None:
        self._args = args
        self._process: asyncio.subprocess.Process | None = None
        self.base_url = ""

    async def __aenter__(self) -> Self:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(Path(__file__).resolve()),
            *self._args,
            stdout=asyncio.subprocess.PIPE,
        )
        self._process = process
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), _START_TIMEOUT)
        except TimeoutError:
            await self._stop()
            raise RuntimeError(f"benchmark server {self._args[0]!r} did not start") from None
        text = line.decode().strip()
        if not text.startswith("listening on "):
            await self._stop()
            raise RuntimeError(f"benchmark server {self._args[0]!r} failed to start: {text!r}")
        self.base_url = text.removeprefix("listening on ")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stop()

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), _STOP_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()


# ----------------------------------------------------------------------------- child side


async def _serve_fake(scenario: str) -> None:
    from rxturn.testing import FakeProvider

    async with FakeProvider(Path(scenario)) as fake:
        print(f"listening on {fake.base_url}", flush=True)
        await _until_stopped()


async def _serve_stamp() -> None:
    from aiohttp import web

    from rxturn.testing import Entry, ScenarioUsage
    from rxturn.testing._emit import ReplyContext, stream_events

    built: dict[tuple[str, int], tuple[list[bytes], list[bytes], list[bytes]]] = {}
    rng = random.Random(8)

    def reply(fmt: Any, events: int, model: str) -> tuple[list[bytes], list[bytes], list[bytes]]:
        """(head, deltas, tail) of a reply with ``events`` placeholder deltas."""
        if (fmt, events) not in built:
            entry = Entry(
                text=PLACEHOLDER.decode() * events,
                chunk_chars=len(PLACEHOLDER),
                usage=ScenarioUsage(10, events),
            )
            wire = stream_events(entry, fmt, ReplyContext(model=model, include_usage=True))
            first = next(i for i, event in enumerate(wire) if PLACEHOLDER in event)
            last = max(i for i, event in enumerate(wire) if PLACEHOLDER in event)
            built[(fmt, events)] = (wire[:first], wire[first : last + 1], wire[last + 1 :])
        return built[(fmt, events)]

    async def stream(
        response: web.StreamResponse,
        request: web.Request,
        head: list[bytes],
        deltas: list[bytes],
        tail: list[bytes],
        pace: float,
    ) -> None:
        await response.prepare(request)
        if not pace:
            data = memoryview(b"".join((*head, *deltas, *tail)))
            for offset in range(0, len(data), _SLICE):
                await response.write(data[offset : offset + _SLICE])
        else:
            await response.write(b"".join(head))
            await asyncio.sleep(rng.random() * pace)
            clock = time.monotonic_ns
            for event in deltas:
                await response.write(event.replace(PLACEHOLDER, b"%019d" % clock()))
                await asyncio.sleep(pace)
            await response.write(b"".join(tail))
        await response.write_eof()

    async def messages(request: web.Request) -> web.StreamResponse:
        fmt = "openai" if request.path.endswith("/chat/completions") else "anthropic"
        try:
            body: Any = await request.json()
        except ConnectionResetError:  # a turn cancelled at the end of a window, mid-request
            return web.Response(status=499)
        model = str(body.get("model", ""))
        try:
            _, events_text, pace_text = model.split("-")
            events, pace = int(events_text), int(pace_text) / 1e6
        except ValueError:
            return web.json_response(
                {"type": "error", "error": {"type": "not_found_error", "message": model}},
                status=404,
            )
        head, deltas, tail = reply(fmt, events, model)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        # A client that goes away (a turn cancelled at the end of a window) is not an error.
        with contextlib.suppress(ConnectionResetError):
            await stream(response, request, head, deltas, tail, pace)
        return response

    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.router.add_post("/v1/messages", messages)
    app.router.add_post("/v1/chat/completions", messages)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
    await site.start()
    address: Any = runner.addresses[0]
    print(f"listening on http://127.0.0.1:{address[1]}", flush=True)
    try:
        await _until_stopped()
    finally:
        await runner.cleanup()


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


class FakeServerProcess:
    """``rxturn fake-server`` in a child process scripted by ``scenario`` (its CPU is not the
    measuring process's); ``url`` once it listens, :meth:`close` to stop it."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self._dir = tempfile.TemporaryDirectory()
        path = Path(self._dir.name) / "scenario.json"
        path.write_text(json.dumps(scenario))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "rxturn", "fake-server", "--scenario", str(path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.close()
            raise RuntimeError(f"fake-server did not start: {line!r}")
        self.url = line.removeprefix("listening on ")

    @property
    def pid(self) -> int:
        """The server process's id (to read its CPU time)."""
        return self._proc.pid

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._dir.cleanup()


def _main(argv: list[str]) -> int:
    if argv[:1] == ["fake"] and len(argv) == 2:
        serve = _serve_fake(argv[1])
    elif argv == ["stamp"]:
        serve = _serve_stamp()
    else:
        print("usage: _servers.py fake SCENARIO.json | _servers.py stamp", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
