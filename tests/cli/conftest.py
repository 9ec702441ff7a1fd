"""Fixtures of the CLI tests: one piped ``rxturn demo`` run that every test reading it shares."""

from __future__ import annotations

import subprocess

import pytest

from ._support import run


@pytest.fixture(scope="session")
def piped_demo() -> subprocess.CompletedProcess[str]:
    """``rxturn demo`` with stdout and stderr as pipes and no API key or colour setting in its
    environment; it exited 0."""
    out = run("demo")
    assert out.returncode == 0, out.stdout + out.stderr
    return out
