"""Bounded, incremental decoding of a compressed response body (gzip, deflate), sans-IO.

Theory of operation
-------------------
A few kilobytes of gzip can inflate to gigabytes (a "zip bomb"), and inflating them in one call
holds the event loop for as long as that takes. So rxturn decompresses bodies itself instead of
letting the HTTP library do it, one bounded step at a time:

* :meth:`Inflater.feed` takes compressed bytes as they arrive; :meth:`Inflater.step` returns at
  most ``size`` decompressed bytes (``zlib``'s ``max_length``), keeping the compressed input it has
  not used yet (``unconsumed_tail``) for the next step. The caller hands each step's output on
  and may yield to the loop between steps, so no single call does more than one slice of work.
* Two limits are checked after every step: the decompressed bytes of the whole response
  (``max_bytes``) and, once the output has passed :data:`RATIO_CHECK_AFTER`, the expansion ratio
  (decompressed ÷ compressed bytes received). Breaking either raises
  :class:`~rxturn.errors.DecompressionLimitError`, which names the limit.
* Corrupt compressed data, an unknown coding, or a compressed stream that stops before its end
  are :class:`~rxturn.errors.ReadError`: the body could not be read, as with a dropped
  connection.

Codings: ``gzip`` (also ``x-gzip``; concatenated members are read in turn) and ``deflate``
(the zlib format that RFC 9110 names, and the raw deflate some servers send instead, told apart by
the zlib header). Brotli and zstd are neither asked for nor accepted: decoding them would need
extra packages. ``identity`` means no coding. See ``docs/reliability.md``.
"""

from __future__ import annotations

import zlib

from ..errors import DecompressionLimitError, ReadError

__all__ = [
    "ACCEPT_ENCODING",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_MAX_EXPANSION_RATIO",
    "RATIO_CHECK_AFTER",
    "Inflater",
    "inflater_for",
]

#: What rxturn asks servers for: exactly the codings :class:`Inflater` decodes.
ACCEPT_ENCODING = "gzip, deflate"
#: Default cap on the decompressed bytes of one response.
DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
#: Default cap on decompressed ÷ compressed bytes (checked past :data:`RATIO_CHECK_AFTER`).
DEFAULT_MAX_EXPANSION_RATIO = 100.0
#: The expansion ratio is only checked once this much has been decompressed: a small body that
#: compresses extremely well (a run of identical keep-alives) is not a bomb, and below this size
#: the other caps already bound the work.
RATIO_CHECK_AFTER = 16 * 1024 * 1024

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_CODINGS = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


def inflater_for(
    content_encoding: str | None, *, max_bytes: int, max_ratio: float, where: str
) -> Inflater | None:
    """The :class:`Inflater` for a ``Content-Encoding`` header, or ``None`` for no coding.

    Raises:
        ReadError: a coding rxturn does not decode (``br``, ``zstd``, ``compress``, …) or more
            than one coding stacked.
    """
    if not content_encoding:
        return None
    codings = [
        item
        for item in (part.strip().lower() for part in content_encoding.split(","))
        if item and item != "identity"
    ]
    if not codings:
        return None
    shown = content_encoding.strip()[:60]
    if len(codings) > 1:
        raise ReadError(
            f"cannot decode the response body from {where}: stacked Content-Encoding "
            f"{shown!r} is not supported (rxturn asks for {ACCEPT_ENCODING})"
        )
    coding = _CODINGS.get(codings[0])
    if coding is None:
        raise ReadError(
            f"cannot decode the response body from {where}: Content-Encoding {shown!r} is not "
            f"supported (rxturn asks for {ACCEPT_ENCODING})"
        )
    return Inflater(coding, max_bytes=max_bytes, max_ratio=max_ratio, where=where)


class Inflater:
    """Incremental gzip / deflate decoder with bounded steps and bounded output.

    Args:
        coding: ``"gzip"`` or ``"deflate"``.
        max_bytes: most decompressed bytes for the whole body.
        max_ratio: most decompressed bytes per compressed byte received, checked once the
            output passes :data:`RATIO_CHECK_AFTER`.
        where: the (display) URL, for messages.

    Use: ``feed`` compressed bytes when :attr:`pending` is false; call ``step`` while it is true;
    at the end of the body call :meth:`finish`.

    Examples:
        >>> import gzip
        >>> inflater = Inflater("gzip", max_bytes=1 << 20, max_ratio=100, where="here")
        >>> inflater.feed(gzip.compress(b"hello " * 4))
        >>> out = []
        >>> while inflater.pending:
        ...     out.append(inflater.step(10))
        >>> inflater.finish()
        >>> b"".join(out), max(map(len, out))
        (b'hello hello hello hello ', 10)
    """

    __slots__ = (
        "_coding",
        "_ended",
        "_in",
        "_max_bytes",
        "_max_ratio",
        "_more",
        "_obj",
        "_out",
        "_tail",
        "_where",
    )

    def __init__(self, coding: str, *, max_bytes: int, max_ratio: float, where: str) -> None:
        self._coding = coding
        self._max_bytes = max_bytes
        self._max_ratio = max_ratio
        self._where = where
        self._obj: zlib._Decompress | None = (  # pyright: ignore[reportPrivateUsage]
            zlib.decompressobj(_GZIP_WBITS) if coding == "gzip" else None
        )
        self._tail = b""  # compressed input not used yet
        self._more = False  # the last step filled its slice: output may still be waiting
        self._ended = False  # the (last) compressed stream reached its end
        self._in = 0  # compressed bytes received
        self._out = 0  # decompressed bytes produced

    @property
    def pending(self) -> bool:
        """Whether :meth:`step` may still produce output from what was fed."""
        return self._more or (bool(self._tail) and not (self._obj is None and len(self._tail) < 2))

    def feed(self, data: bytes) -> None:
        """Add compressed bytes (``step`` must have drained the previous ones)."""
        self._in += len(data)
        self._tail = self._tail + data if self._tail else data

    def step(self, size: int) -> bytes:
        """At most ``size`` decompressed bytes of what was fed (``b""`` if none is ready yet).

        Raises:
            DecompressionLimitError: the body passed ``max_bytes`` or ``max_ratio``.
            ReadError: the compressed data is corrupt.
        """
        obj = self._obj
        if obj is None:
            if len(self._tail) < 2:
                return b""  # the deflate flavour is known from the first two bytes
            obj = self._obj = zlib.decompressobj(_deflate_wbits(self._tail))
        elif self._ended:
            if not self._tail:
                return b""
            if self._coding != "gzip":
                raise self._corrupt("data after the end of the compressed body")
            obj = self._obj = zlib.decompressobj(_GZIP_WBITS)  # the next gzip member
            self._ended = False
        try:
            out = obj.decompress(self._tail, size)
        except zlib.error as exc:
            raise self._corrupt(str(exc)) from None
        self._more = len(out) == size
        if obj.eof:
            self._ended = True
            self._tail = obj.unused_data
            self._more = False
        else:
            self._tail = obj.unconsumed_tail
        if out:
            self._out += len(out)
            self._check()
        return out

    def finish(self) -> None:
        """End of body: the compressed stream must be complete (an empty body is fine).

        Raises:
            ReadError: the body stopped inside the compressed stream.
        """
        if self._in == 0:
            return
        if not self._ended:
            raise ReadError(
                f"response body incomplete ({self._where}): the {self._coding} stream stopped "
                "before its end"
            )

    def _check(self) -> None:
        if self._out > self._max_bytes:
            raise DecompressionLimitError(
                f"compressed response body inflates past max_decompressed_bytes="
                f"{self._max_bytes} ({self._in} {self._coding} bytes received)",
                limit="max_decompressed_bytes",
                value=self._max_bytes,
                where=self._where,
            )
        if self._out > RATIO_CHECK_AFTER and self._out > self._max_ratio * self._in:
            raise DecompressionLimitError(
                f"compressed response body inflates more than max_expansion_ratio="
                f"{self._max_ratio:g} to 1 ({self._in} {self._coding} bytes gave "
                f"{self._out} bytes)",
                limit="max_expansion_ratio",
                value=self._max_ratio,
                where=self._where,
            )

    def _corrupt(self, detail: str) -> ReadError:
        return ReadError(
            f"response body could not be decompressed ({self._where}): invalid "
            f"{self._coding} data: {detail}"
        )


def _deflate_wbits(head: bytes) -> int:
    """zlib-wrapped deflate (what the HTTP ``deflate`` coding means) or raw deflate."""
    cmf, flg = head[0], head[1]
    if cmf & 0x0F == 8 and cmf >> 4 <= 7 and ((cmf << 8) | flg) % 31 == 0:
        return zlib.MAX_WBITS
    return -zlib.MAX_WBITS
