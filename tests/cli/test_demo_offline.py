"""``rxturn demo`` promises no network: its provider is in the process, on loopback. A proxy in
the environment (``HTTP_PROXY`` without ``127.0.0.1`` in ``NO_PROXY``, as on many company
machines) is for real endpoints, never for the demo's own requests; before, every one of them
went to the proxy and the whole story failed ("demo check failed", exit 1).

In-process, the first chapter only (a 529, then the reply): the rest of the story runs on the
same client."""

from __future__ import annotations

import asyncio
import io

import pytest

from rxturn.cli import _demo_story

from ._support import closed_port


def test_the_demo_ignores_the_environment_s_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = f"http://127.0.0.1:{closed_port()}"  # a proxy that refuses every connection
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    story = _demo_story
    monkeypatch.setattr(story, "_CHAPTERS", story._CHAPTERS[:1])
    monkeypatch.setattr(story, "_EXPECTED", story._EXPECTED[:1])
    out, err = io.StringIO(), io.StringIO()
    asyncio.run(_demo_story.play(out, color=False, err=err))
    assert "\n  The 529 was absorbed: one short wait, then this reply.\n" in out.getvalue()
    assert "cannot connect" not in err.getvalue()
