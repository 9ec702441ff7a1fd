"""Helpers for the batch tests: input files, the CLI against a fake server, output lines."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from cli._support import RXTURN, TIMEOUT, clean_env


def write_rows(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def prompts(n: int, prefix: str = "r") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "prompt": f"question number {i}"} for i in range(n)]


def batch_args(inp: Path, out: Path, url: str, *extra: str, model: str = "m") -> list[str]:
    return [
        *RXTURN,
        "batch",
        "run",
        str(inp),
        "-o",
        str(out),
        "--provider",
        "anthropic",
        "--model",
        model,
        "--base-url",
        url,
        "--progress",
        "none",
        *extra,
    ]


def run_batch(
    inp: Path,
    out: Path,
    url: str,
    *extra: str,
    model: str = "m",
    timeout: float = TIMEOUT,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``rxturn batch run`` to its end; ``env``: the environment (default: ``clean_env()``),
    ``preexec_fn``: run in the child before the command (a resource limit)."""
    return subprocess.run(
        batch_args(inp, out, url, *extra, model=model),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else clean_env(),
        stdin=subprocess.DEVNULL,
        preexec_fn=preexec_fn,
    )


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RXTURN, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
        stdin=subprocess.DEVNULL if stdin is None else None,
    )


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def last_by_key(out: Path) -> dict[str, dict[str, Any]]:
    return {line["id"]: line for line in lines(out)}


def assert_complete(out: Path, keys: Sequence[str]) -> None:
    """Every key has exactly one line, and it is ok (a run with no retried rows)."""
    found = [line["id"] for line in lines(out)]
    assert len(found) == len(set(found)), "a key has two lines"
    assert sorted(found) == sorted(keys)
    assert all(line["status"] == "ok" for line in lines(out))
