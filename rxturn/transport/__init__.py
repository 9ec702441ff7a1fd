"""HTTP transports: the seam between provider clients and the network.

:class:`AsyncTransport` and :class:`HttpResponse` describe the small piece of HTTP a client
needs; :class:`AiohttpTransport` is the production implementation. It is resolved lazily, so
``import rxturn.transport`` does not import aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import LazyExports

if TYPE_CHECKING:  # the table of public names (rxturn._lazy)
    from ._base import AsyncTransport as AsyncTransport
    from ._base import HttpResponse as HttpResponse
    from .aiohttp import AiohttpTransport as AiohttpTransport

_exports = LazyExports(globals())
__getattr__ = _exports.resolve
__dir__ = _exports.names
