"""HTTP transports: the seam between provider clients and the network.

:class:`AsyncTransport` and :class:`HttpResponse` describe the small piece of HTTP a client
needs; :class:`AiohttpTransport` is the production implementation. It is resolved lazily, so
``import rxturn.transport`` does not import aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._exports import lazy_exports

if TYPE_CHECKING:  # what type checkers read; at run time, _HOMES below
    from ._base import AsyncTransport as AsyncTransport
    from ._base import HttpResponse as HttpResponse
    from .aiohttp import AiohttpTransport as AiohttpTransport

#: Each public name and its module, imported on first use of the name (PEP 562).
_HOMES: dict[str, str] = {
    "AsyncTransport": "._base",
    "HttpResponse": "._base",
    "AiohttpTransport": ".aiohttp",
}

if not TYPE_CHECKING:  # type checkers take the public names from the imports above
    __all__ = sorted(_HOMES)
    # hidden from type checkers too: a name that is not public is then an error there
    __getattr__, __dir__ = lazy_exports(globals(), _HOMES)
