"""``rxturn fake-server``: serve the scripted fake provider until interrupted.

The first line on stdout is exactly ``listening on http://HOST:PORT`` (flushed), so a script
or a test can start the server with ``--port 0`` and read the port it got. SIGINT and SIGTERM
stop it cleanly (exit 0), while it starts too. A scenario file that does not load is one line
on stderr, exit 2.
The scenario format is documented for users in docs/fake-provider.md, and ``--help`` says so.

Module-level imports are stdlib only: the dispatcher imports every command module to build
``--help``, and ``rxturn.testing`` imports aiohttp.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from .._arguments import shown
from .._interrupt import give_back, take_signals
from ._console import argument_shown, file_argument

__all__ = ["add_parser", "run"]


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid port {argument_shown(text)}: not an integer"
        ) from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {argument_shown(text)}: expected 0..65535")
    return value


def _host(text: str) -> str:
    from .._validate import HOST_RULE, is_host

    if not is_host(text):  # (the rule FakeProvider keeps)
        raise argparse.ArgumentTypeError(f"invalid host {shown(text, 100)}: expected {HOST_RULE}")
    return text


# every wire the fake serves (its ``Wire`` names, with the API each speaks), for --help
SERVED_WIRES = {
    "anthropic": "Anthropic Messages",
    "openai": "OpenAI Chat Completions",
    "openai-responses": "OpenAI Responses",
    "ollama": "Ollama chat",
}
_WIRES_NAMED = (
    ", ".join(list(SERVED_WIRES.values())[:-1]) + f" and {list(SERVED_WIRES.values())[-1]}"
)


def add_parser(subparsers: Any) -> None:
    """Register ``fake-server`` on the ``rxturn`` sub-command parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "fake-server",
        help=f"serve the scripted fake provider ({_WIRES_NAMED} wire formats)",
        description=(
            f"Serve the fake provider ({_WIRES_NAMED}, streaming and not) on HOST:PORT "
            "until interrupted. The first stdout line is "
            "'listening on http://HOST:PORT'. Without --scenario every model answers "
            "'Hello from the rxturn fake provider.' GET /_fake/requests returns every request "
            "received, in order: its body, model, arrival and how it ended."
        ),
        epilog=(
            "The scenario format (every entry key, an example per fault, and how to use "
            "/_fake/requests in assertions) is documented in docs/fake-provider.md in the "
            "rxturn repository."
        ),
    )
    parser.add_argument(
        "--host", type=_host, default="127.0.0.1", help="address to bind (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=_port, default=0, help="port to bind (default 0: any free)")
    parser.add_argument(
        "--scenario",
        type=file_argument,
        metavar="FILE",
        help="scenario JSON file: which reply or fault each request gets (docs/fake-provider.md)",
    )
    parser.set_defaults(run=run)


async def _serve(scenario: Any, host: str, port: int) -> int:
    from rxturn._heap import tune
    from rxturn.testing import FakeProvider

    from ._console import STATE, write

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    taken = take_signals(loop, lambda _signum: stop.set())
    try:
        async with FakeProvider(scenario, host=host, port=port) as fake:
            tune()  # the set-up is done: freeze it, rarer young collections (rxturn._heap)
            if not write(sys.stdout, f"listening on {fake.base_url}\n") and STATE.failure:
                return 1  # nobody can learn the port (a full disk): the dispatcher says so
            await stop.wait()
    finally:
        give_back(loop, taken)
    return 0


def run(args: argparse.Namespace) -> int:
    """Load the scenario, serve until SIGINT/SIGTERM; 0 on a clean stop, 2 on bad input."""
    from rxturn.errors import ConfigError
    from rxturn.testing import DEFAULT_SCENARIO, load_scenario

    try:
        scenario = load_scenario(Path(args.scenario)) if args.scenario else DEFAULT_SCENARIO
    except ConfigError as exc:
        print(f"rxturn fake-server: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # SIGINT or SIGTERM before it served: stopped cleanly too
        return 0
    try:
        return asyncio.run(_serve(scenario, args.host, args.port))
    except ConfigError as exc:  # the host does not resolve or is not ours, the port is taken
        line = str(exc).removeprefix("FakeProvider: ")  # (FakeProvider's one check says it)
        print(f"rxturn fake-server: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C while shutting down
        return 0
