"""``rxturn demo``: the resilience story on the embedded fake provider (_demo_story.py)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="play the resilience story offline (fake provider, no key)",
        description="Rate limit, dropped stream, rescue, breaker trip, backup, recovery, tool.",
    )
    color = parser.add_mutually_exclusive_group()
    color.add_argument(
        "--color",
        dest="color",
        action="store_const",
        const=True,
        default=None,
        help="colour even when stdout is not a terminal (default: on a terminal, unless NO_COLOR "
        "is set)",
    )
    color.add_argument(
        "--no-color",
        dest="color",
        action="store_const",
        const=False,
        help="no colour, even on a terminal",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from rxturn.cli._demo_story import play

    try:
        return asyncio.run(play(color=args.color))
    except KeyboardInterrupt:
        return 130
