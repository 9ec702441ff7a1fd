"""A key is found however it was written down: as is, percent-encoded (any of its characters,
either case of hex digits), and in base64, standard or URL-safe, anywhere inside a longer base64
text (an HTTP Basic ``Authorization`` value is ``base64(user:key)``: the key sits at any of the
three byte alignments, with other bytes on both sides)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from urllib.parse import quote

import pytest

from rxturn.testing import assert_no_secret, find_secret

#: ``>``, ``?`` and ``~`` make ``+`` and ``/`` in standard base64 (``-`` and ``_`` URL-safe)
SECRET = "sk-ant-api03-~~??>>Zz0123456789"

ENCODERS = {"standard": base64.b64encode, "url-safe": base64.urlsafe_b64encode}


def test_the_secret_has_characters_the_two_alphabets_write_differently() -> None:
    data = SECRET.encode()
    for shift in range(3):  # so each alphabet's test means something
        padded = bytes(shift) + data
        assert base64.b64encode(padded) != base64.urlsafe_b64encode(padded)


@pytest.mark.parametrize("alphabet", list(ENCODERS))
@pytest.mark.parametrize("before", ["", "u", "us", "user:", "apikey-user:"])
@pytest.mark.parametrize("after", ["", "x", "xy", ":and-more"])
def test_base64_anywhere_in_a_longer_text(alphabet: str, before: str, after: str) -> None:
    encoded = ENCODERS[alphabet]((before + SECRET + after).encode()).decode()
    headers = {"Authorization": f"Basic {encoded}"}
    assert find_secret(headers, SECRET, name="headers") == ["headers['Authorization']"]
    unpadded = encoded.rstrip("=").encode()  # bytes, and no padding (a JWT's way)
    assert find_secret([unpadded], SECRET) == ["obj[0]"]


@pytest.mark.parametrize(
    "encode",
    [
        lambda s: "".join(f"%{b:02X}" for b in s.encode()),  # every byte, upper case
        lambda s: "".join(f"%{b:02x}" for b in s.encode()),  # every byte, lower case
        lambda s: quote(s, safe=""),  # what must be escaped only
        lambda s: "".join(f"%{ord(c):02x}" if i % 2 else c for i, c in enumerate(s)),  # mixed
    ],
    ids=["upper", "lower", "minimal", "mixed"],
)
def test_percent_encoded(encode: Callable[[str], str]) -> None:
    text = encode(SECRET)
    assert SECRET not in text
    url = f"https://api.example/v1/x?key={text}&next=1"
    assert find_secret({"url": url}, SECRET) == ["obj['url']"]
    assert find_secret(url.encode(), SECRET) == ["obj"]


def test_the_secret_in_base64_of_percent_encoded_text_is_found_too() -> None:
    # a base64 value carried in a URL: '+', '/' and '=' percent-escaped
    carried = quote(base64.b64encode(("user:" + SECRET).encode()).decode(), safe="")
    assert "%2B" in carried or "%2F" in carried
    assert find_secret(carried, SECRET) == ["obj"]


def test_what_is_not_the_secret_is_not_found() -> None:
    others = [
        base64.b64encode(b"user:sk-ant-api03-another-key-entirely").decode(),
        base64.b64encode(SECRET[:-3].encode()).decode(),  # a shorter key, no full groups left
        "%7E%7E%3F%3F" * 10,
        "https://api.example/v1/x?key=%ZZ%",  # broken escapes
        bytes(range(256)),
    ]
    for other in others:
        assert find_secret(other, SECRET) == [], other


def test_the_failure_message_shows_no_form_of_the_secret() -> None:
    encoded = base64.b64encode(("user:" + SECRET).encode()).decode()
    percent = "".join(f"%{b:02x}" for b in SECRET.encode())
    graph = {encoded: "a key holding it", percent: "another", "x": f"Basic {encoded}"}
    with pytest.raises(AssertionError) as error:
        assert_no_secret(graph, SECRET)
    message = str(error.value)
    assert "reachable from obj at" in message
    for form in (SECRET, encoded, encoded[8:-8], percent, percent[3:-3]):
        assert form not in message
