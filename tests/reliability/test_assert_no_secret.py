"""``rxturn.testing.assert_no_secret`` itself: it must find the secret wherever it hides, name the
path, never print the secret, end on cycles and deep graphs, and pass on clean objects.

A checker that cannot find what it looks for would make every secrets test pass vacuously, so
each hiding place is planted here on purpose and the reported path is compared with where it was
planted.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import aiohttp
import msgspec
import pytest
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from rxturn.errors import ReadError, RescueFailed, ServerError, status_error
from rxturn.testing import assert_no_secret, find_secret

SECRET = "opaque-SECRET-value-77aa"


class Plain:
    # set after construction by the cycle test (the others pass theirs as keywords)
    forward: Plain
    hidden: str

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class Slotted:
    __slots__ = ("__hidden", "visible")

    def __init__(self, visible: object, hidden: object) -> None:
        self.visible = visible
        self.__hidden = hidden


class Shown:
    """Holds the secret only in what ``repr`` computes (e.g. a URL object's cache)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Shown({SECRET[::-1][::-1]})"


class Wire(msgspec.Struct):
    kind: str
    payload: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class Info:
    method: str
    headers: dict[str, str]


def with_cause(inner: BaseException) -> ReadError:
    outer = ReadError("connection error")
    outer.__cause__ = inner
    return outer


def with_context(inner: BaseException) -> ReadError:
    outer = ReadError("connection error")
    outer.__context__ = inner
    return outer


def with_note() -> ServerError:
    error = ServerError("HTTP 500")
    error.add_note(f"while talking to key {SECRET}")
    return error


def client_response_error() -> aiohttp.ClientResponseError:
    headers = CIMultiDictProxy(CIMultiDict({"Authorization": f"Bearer {SECRET}"}))
    info = aiohttp.RequestInfo(URL("http://h/v1"), "POST", headers, URL("http://h/v1"))
    return aiohttp.ClientResponseError(info, (), status=400, message="Bad status line")


PLANTED: dict[str, tuple[Any, str]] = {
    "message": (ServerError(f"HTTP 500: key {SECRET}"), "str(obj)"),
    "args": (ValueError("x", ("y", SECRET)), "obj.args[1][1]"),
    "attribute": (status_error(500, "body", request_id=SECRET), "obj.request_id"),
    "nested attribute": (Plain(a=Plain(b=[{"c": SECRET}])), "obj.a.b[0]['c']"),
    "dict key": ({SECRET: 1}, "obj.<key '<SECRET>'>"),
    "bytes": ([b"prefix " + SECRET.encode()], "obj[0]"),
    "bytearray": ((bytearray(SECRET.encode()),), "obj[0]"),
    "slot": (Slotted("fine", SECRET), "obj._Slotted__hidden"),
    "msgspec struct": (Wire("k", SECRET.encode()), "obj.payload"),
    "dataclass with slots": (Info("POST", {"x-api-key": SECRET}), "obj.headers['x-api-key']"),
    "set": (frozenset({SECRET}), "obj[0]"),
    "repr only": (Shown(), "repr(obj)"),
    "cause": (with_cause(KeyError(SECRET)), "obj.__cause__.args[0]"),
    "context": (with_context(OSError(5, SECRET)), "obj.__context__.args[1]"),
    "notes": (with_note(), "obj.__notes__[0]"),
    "aiohttp request_info": (with_cause(client_response_error()), "repr(obj.__cause__)"),
    "rescue chain": (
        RescueFailed(ServerError("HTTP 500"), with_cause(RuntimeError(SECRET))),
        "obj.rescue_error.__cause__.args[0]",
    ),
    "exception group": (ExceptionGroup("many", [ValueError(SECRET)]), "str(obj.args[1][0])"),
}


@pytest.mark.parametrize("place", list(PLANTED))
def test_the_secret_is_found_wherever_it_is_planted(place: str) -> None:
    obj, path = PLANTED[place]
    found = find_secret(obj, SECRET)
    assert path in found, f"{place}: expected the path {path!r} among {found}"
    with pytest.raises(AssertionError) as caught:
        assert_no_secret(obj, SECRET)
    message = str(caught.value)
    assert message.startswith("the secret is reachable from obj at: ")
    assert SECRET not in message, "the failure message must not print the secret"


CLEAN: dict[str, Any] = {
    "plain error": ServerError("HTTP 500: upstream failed"),
    "error with a clean chain": with_cause(KeyError("nothing here")),
    "containers": {"a": [1, 2.5, None, (b"bytes", "text")], "b": {frozenset({"x"})}},
    "struct and slots": [Wire("k", b"p"), Slotted("v", "h"), Info("GET", {})],
    "aiohttp error without credentials": aiohttp.ClientResponseError(
        aiohttp.RequestInfo(
            URL("http://h/v1"), "POST", CIMultiDictProxy(CIMultiDict()), URL("http://h/v1")
        ),
        (),
        status=400,
    ),
    "a prefix of the secret": Plain(text=SECRET[:-1]),
}


@pytest.mark.parametrize("name", list(CLEAN))
def test_clean_objects_pass(name: str) -> None:
    assert find_secret(CLEAN[name], SECRET) == []
    assert_no_secret(CLEAN[name], SECRET)


def test_request_headers_inside_an_aiohttp_error_are_found_by_attribute() -> None:
    """Its ``repr`` aside, the headers sit in ``request_info`` (reached through ``args`` first)."""
    found = find_secret(with_cause(client_response_error()), SECRET)
    assert any(
        path.startswith("obj.__cause__.") and path.endswith("['Authorization']") for path in found
    ), found


def test_a_percent_encoded_secret_is_found() -> None:
    """A key with URL-unsafe characters, as a redirect ``Location`` would carry it."""
    secret = "abc/def+ghi=jkl0123"
    location = "http://elsewhere/steal?k=abc%2Fdef%2Bghi%3Djkl0123"
    assert find_secret(Plain(location=location), secret) == ["obj.location"]


def test_cycles_end_and_the_secret_behind_one_is_still_found() -> None:
    a = Plain()
    b = Plain(back=a)
    a.forward = b
    assert_no_secret(a, SECRET)  # terminates
    error = ValueError("loop")
    error.__context__ = with_cause(error)  # an exception chain that loops
    assert_no_secret(error, SECRET)
    b.hidden = SECRET
    assert find_secret(a, SECRET) == ["obj.forward.hidden"]


def test_depth_is_bounded() -> None:
    deep: Any = SECRET
    for _ in range(10_000):
        deep = [deep]
    assert find_secret(deep, SECRET) == []  # past max_depth: not followed, and no RecursionError
    shallow: Any = SECRET
    for _ in range(5):
        shallow = [shallow]
    assert find_secret(shallow, SECRET, max_depth=5) == ["obj[0][0][0][0][0]"]
    assert find_secret(shallow, SECRET, max_depth=4) == []


def test_the_path_uses_the_given_name_and_an_empty_secret_is_refused() -> None:
    with pytest.raises(AssertionError, match=r"from error at: error\.request_id"):
        assert_no_secret(status_error(500, "", request_id=SECRET), SECRET, name="error")
    with pytest.raises(ValueError, match="non-empty"):
        find_secret("anything", "")
