"""HTTP transports: the seam between provider clients and the network.

:class:`AsyncTransport` and :class:`HttpResponse` describe the small piece of HTTP a client
needs; :class:`AiohttpTransport` is the production implementation. It is resolved lazily, so
``import rxturn.transport`` does not import aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import AsyncTransport, HttpResponse

__all__ = ["AiohttpTransport", "AsyncTransport", "HttpResponse"]


def __getattr__(name: str) -> Any:
    if name == "AiohttpTransport":
        from .aiohttp import AiohttpTransport

        globals()[name] = AiohttpTransport
        return AiohttpTransport
    raise AttributeError(f"module 'rxturn.transport' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .aiohttp import AiohttpTransport
