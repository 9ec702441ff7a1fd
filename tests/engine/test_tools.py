"""Python functions as tools: schemas from signatures, converted arguments, errors as results."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Annotated

import msgspec
import pytest

from rxturn.clients._request import check_options
from rxturn.engine.agent.tools import Tool, ToolRegistry, tool
from rxturn.errors import ConfigError
from rxturn.messages import (
    AudioPart,
    CachePoint,
    ImagePart,
    InlineSource,
    RequestOptions,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)


class Point(msgspec.Struct):
    x: int
    y: int


def area(width: float, height: float, unit: str = "m") -> str:
    """Area of a rectangle.

    Longer explanation that is not part of the description.
    """
    return f"{width * height} {unit}2"


async def distance(a: Point, b: Point) -> float:
    """Distance between two points."""
    return ((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5


def test_schema_comes_from_the_signature() -> None:
    schema = Tool(area).schema
    assert schema.name == "area"
    assert schema.description == "Area of a rectangle."
    assert schema.input_schema == {
        "type": "object",
        "properties": {
            "width": {"type": "number"},
            "height": {"type": "number"},
            "unit": {"type": "string"},
        },
        "required": ["width", "height"],
    }


def test_struct_parameters_get_definitions() -> None:
    schema = Tool(distance).schema.input_schema
    assert schema["properties"]["a"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"]["Point"]["required"] == ["x", "y"]


async def test_arguments_are_converted_and_async_tools_awaited() -> None:
    registry = ToolRegistry([area, distance])
    result = await registry.run(
        ToolCallPart("1", "distance", {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}})
    )
    assert (result.tool_call_id, result.content, result.is_error) == ("1", "5.0", False)
    result = await registry.run(ToolCallPart("2", "area", {"width": 2, "height": 3}))
    assert result.content == "6.0 m2"  # converted to the annotated float


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"width": "wide", "height": 1}, "invalid arguments for area"),
        ({"width": 1}, "missing required argument(s): height"),
        ({"width": 1, "height": 1, "depth": 2}, "unexpected argument(s): depth"),
        (["not", "an", "object"], "must be a JSON object"),
    ],
)
async def test_bad_arguments_become_error_results(arguments: object, fragment: str) -> None:
    result = await ToolRegistry([area]).run(ToolCallPart("x", "area", arguments))
    assert result.is_error and fragment in result.content


async def test_a_raising_tool_is_an_error_result() -> None:
    def boom() -> None:
        raise RuntimeError("kaput")

    result = await ToolRegistry([boom]).run(ToolCallPart("x", "boom", {}))
    assert result.is_error and result.content == "RuntimeError: kaput"


def test_registry_rules() -> None:
    registry = ToolRegistry()
    assert registry.schemas() is None  # no tools: the request carries none
    registry.register(area)
    with pytest.raises(ConfigError, match="already registered"):
        registry.register(area)
    with pytest.raises(ConfigError, match="tool name"):
        Tool(area, name="has space")


@pytest.mark.parametrize(
    "name",
    ["", "é", "naïve_search", "x" * 65, "a.b", "caf\u00e9", "\u0663"],
    ids=["empty", "e-acute", "a diaeresis", "65 characters", "a dot", "escaped", "arabic digit"],
)
def test_a_tool_name_the_apis_refuse_is_a_config_error(name: str) -> None:
    # before, '' fell back to the function's name and non-ASCII letters or digits and names of
    # any length were taken, then every turn was a 400 from the provider
    with pytest.raises(ConfigError, match=r"tool name .* must be 1 to 64 ASCII letters"):
        Tool(area, name=name)
    with pytest.raises(ConfigError, match="tool name"):
        tool(name=name)(area)


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_a_schema_holding_a_number_json_cannot_spell_is_a_config_error(number: float) -> None:
    # before, the schema went out with null where the number was
    schema = {"type": "object", "properties": {"w": {"type": "number", "maximum": number}}}
    with pytest.raises(ConfigError, match=r"input_schema.* NaN or infinite"):
        Tool(area, input_schema=schema)
    response_format = ResponseFormat(name="out", schema=schema)
    with pytest.raises(ConfigError, match=r"response_format.* NaN or infinite"):
        check_options(RequestOptions(response_format=response_format))


def test_text_that_is_not_utf8_in_a_tool_or_a_schema_is_a_config_error() -> None:
    # before: Tool(description='\ud800') was built and the engine's first turn raised
    # UnicodeEncodeError counting the tools; a schema holding one made json_problem (the
    # check itself) raise it
    with pytest.raises(ConfigError, match=r"^Tool\(description=\.\.\.\) is not JSON text: .*lone"):
        Tool(area, description="area \ud800")
    schema = {"type": "object", "properties": {"w": {"description": "\udfff"}}}
    with pytest.raises(ConfigError, match=r"input_schema=\.\.\.\) must be JSON: .*lone surrogate"):
        Tool(area, input_schema=schema)
    response_format = ResponseFormat(name="out", schema=schema)
    with pytest.raises(ConfigError, match=r"response_format: schema must be JSON: .*lone"):
        check_options(RequestOptions(response_format=response_format))


@pytest.mark.parametrize("schema", [{"type": "string"}, {"type": "array", "items": {}}])
def test_a_schema_that_is_not_of_an_object_is_a_config_error(schema: dict[str, object]) -> None:
    # before, it was sent as the tool's input schema and every turn was the provider's 400;
    # a response format was already refused so, by the same rule
    with pytest.raises(ConfigError, match=r"input_schema=\.\.\.\) must be a JSON Schema object"):
        Tool(area, input_schema=schema)
    with pytest.raises(ConfigError, match=r"response_format: schema must be a JSON Schema object"):
        check_options(RequestOptions(response_format=ResponseFormat(name="out", schema=schema)))
    assert Tool(area, input_schema={"properties": {"w": {"type": "number"}}}).name == "area"


def test_tool_names_the_apis_take_are_kept() -> None:
    for name in ["a", "x" * 64, "get-weather_2", "A9"]:
        assert Tool(area, name=name).name == name


def test_a_callable_without_a_usable_name_is_told_to_pass_one() -> None:
    with pytest.raises(ConfigError, match=r"'<lambda>'.*\(pass name=\.\.\.\)"):
        Tool(lambda: "x")
    assert Tool(lambda: "x", name="named").name == "named"


def _takes_a_complex(x: int, z: complex) -> int:
    return x


def _takes_an_object(where: object) -> int:
    return 0


@pytest.mark.parametrize("function", [_takes_a_complex, _takes_an_object])
def test_a_parameter_type_without_a_json_schema_is_named_in_one_line(
    function: Callable[..., object],
) -> None:
    # before: msgspec's TypeError, several lines long and naming neither tool nor parameter
    with pytest.raises(ConfigError, match=r"^tool '_takes_an?_[a-z]+': parameter '[a-z]+' is "):
        Tool(function)
    with pytest.raises(ConfigError) as caught:
        Tool(function, name="named")
    assert "\n" not in str(caught.value) and "input_schema=" in str(caught.value)
    # the way out the message names works
    Tool(function, input_schema={"type": "object", "properties": {}})


def test_a_callable_whose_signature_cannot_be_read_is_a_config_error() -> None:
    # before: ValueError("no signature found for builtin <built-in function max>")
    with pytest.raises(ConfigError, match=r"^tool 'max': its signature cannot be read"):
        Tool(max)


async def test_the_registry_refuses_a_call_or_name_of_the_wrong_type() -> None:
    # before: AttributeError ('int' object has no attribute 'name') and TypeError (unhashable)
    registry = ToolRegistry([area])
    with pytest.raises(ConfigError, match=r"run\(call=\.\.\.\) must be a ToolCallPart, got int 5"):
        await registry.run(5)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=r"run\(call=\.\.\.\) must be a ToolCallPart, got dict"):
        await registry.run({"id": "1", "name": "area", "input": {}})  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=r"get\(name=\.\.\.\) must be a str, got list"):
        registry.get(["area"])  # pyright: ignore[reportArgumentType]
    assert registry.get("area") is not None and registry.get("nope") is None


def test_decorator_forms() -> None:
    @tool
    def plain(q: str) -> str:
        return q

    @tool(name="renamed", description="custom")
    def other(q: str) -> str:
        return q

    assert isinstance(plain, Tool) and plain.name == "plain"
    assert (other.name, other.schema.description) == ("renamed", "custom")


async def test_a_tool_that_raises_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(city: str) -> str:
        raise TypeError(f"no weather station in {city}")  # a bug inside the tool, not bad args

    registry = ToolRegistry([broken])
    with caplog.at_level(logging.WARNING, logger="rxturn.engine"):
        result = await registry.run(ToolCallPart(id="c1", name="broken", input={"city": "Oslo"}))
    assert result.is_error
    assert result.content == "TypeError: no weather station in Oslo"
    (record,) = [r for r in caplog.records if r.name == "rxturn.engine"]
    assert record.levelno == logging.WARNING
    assert "'broken'" in record.getMessage() and "c1" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is TypeError
    assert "no weather station" in caplog.text and "Traceback" in caplog.text


async def test_bad_arguments_are_the_models_mistake_and_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def weather(city: str) -> str:
        return city

    registry = ToolRegistry([weather])
    with caplog.at_level(logging.WARNING, logger="rxturn.engine"):
        result = await registry.run(ToolCallPart(id="c1", name="weather", input={"town": "x"}))
    assert result.is_error and "invalid arguments" in result.content
    assert not [r for r in caplog.records if r.name == "rxturn.engine"]


WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(24)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


@pytest.mark.parametrize(
    ("returned", "named"),
    [
        (lambda: AudioPart(InlineSource("audio/wav", WAV)), "type AudioPart"),
        (lambda: CachePoint(), "type CachePoint"),
        (
            lambda: [
                ImagePart(InlineSource("image/png", PNG)),
                AudioPart(InlineSource("audio/wav", WAV)),
            ],
            "type AudioPart among them (item 1)",
        ),
        (lambda: (ImagePart(InlineSource("image/png", PNG)), 5), "type int among them (item 1)"),
    ],
    ids=["audio", "cache point", "image and audio", "image and a number"],
)
async def test_a_tool_returning_parts_a_result_cannot_carry_is_an_error_result(
    returned: Callable[[], object], named: str
) -> None:
    # before, the value went out as its JSON: the media's bytes as base64 text to the model
    def snap() -> object:
        return returned()

    result = await ToolRegistry([snap]).run(ToolCallPart("c", "snap", {}))
    assert result.is_error and isinstance(result.content, str)
    assert named in result.content and "ConfigError" in result.content
    assert "UklGR" not in result.content and "iVBOR" not in result.content  # no base64


async def test_strs_among_a_tools_parts_are_text_parts() -> None:
    image = ImagePart(InlineSource("image/png", PNG))

    def snap() -> object:
        return [image, "the login page"]

    result = await ToolRegistry([snap]).run(ToolCallPart("c", "snap", {}))
    assert not result.is_error
    assert result.content == (image, TextPart("the login page"))


async def test_a_tool_that_raises_cancelled_error_of_its_own_is_a_failed_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An async tool whose own code raises ``CancelledError`` (an inner task it awaited was
    cancelled, say) was reported as the tool timing out — "did not finish within 0s", with no
    timeout set. Nothing cancelled the call: it failed, and is reported and logged as such."""
    from rxturn import AnthropicClient, TurnEngine
    from rxturn.testing import FakeProvider

    async def lookup(city: str) -> str:
        raise asyncio.CancelledError("the tool's own inner task")

    scenario = {
        "models": {
            "*": [
                {"tool_calls": [{"id": "c1", "name": "lookup", "input": {"city": "Oslo"}}]},
                {"text": "sorry"},
            ]
        }
    }
    async with (
        FakeProvider(scenario) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, tools=[lookup])
        with caplog.at_level(logging.WARNING, logger="rxturn.engine"):
            result = await asyncio.wait_for(engine.run("weather?"), 10)
    assert result.text == "sorry"
    (output,) = engine.history[2].content
    assert isinstance(output, ToolResultPart) and output.is_error
    assert output.content == "CancelledError: the tool's own inner task"
    (record,) = [r for r in caplog.records if r.name == "rxturn.engine"]
    assert record.exc_info is not None and record.exc_info[0] is asyncio.CancelledError


@pytest.mark.parametrize(
    "returned",
    [float("nan"), {"v": float("inf")}, [1.0, -float("inf")], {"p": {"q": [None, float("nan")]}}],
    ids=["nan", "inf in a dict", "-inf in a list", "nan nested by a null"],
)
async def test_a_tool_returning_a_number_json_cannot_spell_is_an_error_result(
    returned: object,
) -> None:
    # before, msgspec wrote NaN and the infinities as null: a successful "null" to the model
    def compute() -> object:
        return returned

    result = await ToolRegistry([compute]).run(ToolCallPart("c", "compute", {}))
    assert result.is_error and isinstance(result.content, str)
    assert result.content.startswith("ConfigError: ") and "NaN or infinite" in result.content


def test_a_schema_holding_an_int_python_cannot_write_is_a_config_error() -> None:
    # before, Python's own ValueError ("Exceeds the limit (4300 digits) ...") from Tool()
    schema = {"type": "object", "properties": {"x": {"type": "integer", "maximum": 10**5000}}}
    with pytest.raises(ConfigError, match=r"input_schema=\.\.\.\) must be JSON: Exceeds"):
        Tool(area, input_schema=schema)


@pytest.mark.parametrize(
    ("returned", "sent"),
    [
        ({"n": None, "x": 1.5}, '{"n":null,"x":1.5}'),
        (Point(1, 2), '{"x":1,"y":2}'),
        ([None], "[null]"),
    ],
    ids=["a real null", "a struct", "a list of null"],
)
async def test_a_tools_finite_values_and_nulls_are_its_json(returned: object, sent: str) -> None:
    def compute() -> object:
        return returned

    result = await ToolRegistry([compute]).run(ToolCallPart("c", "compute", {}))
    assert (result.content, result.is_error) == (sent, False)


class Blob(msgspec.Struct):
    name: str
    data: bytes


@pytest.mark.parametrize(
    ("returned", "sent"),
    [
        ({"data": "café".encode()}, '{"data":"café"}'),
        ([bytearray(b"a"), (memoryview(b"b"), 2.5)], '["a",["b",2.5]]'),
        (Blob("log", b"line 1\n"), '{"name":"log","data":"line 1\\n"}'),
    ],
    ids=["in a dict", "bytearray and memoryview in lists", "in a struct"],
)
async def test_utf8_bytes_inside_a_tools_value_are_their_text(returned: object, sent: str) -> None:
    # before, msgspec wrote them as base64 ("Y2Fmw6k="), which bytes returned alone never are
    def read() -> object:
        return returned

    result = await ToolRegistry([read]).run(ToolCallPart("c", "read", {}))
    assert (result.content, result.is_error) == (sent, False)


@pytest.mark.parametrize(
    ("returned", "at"),
    [({"data": b"\x89PNG\xff"}, "['data']"), ([0, {"k": (1, bytearray(b"\xfe"))}], "[1]['k'][1]")],
    ids=["in a dict", "deep in lists"],
)
async def test_binary_bytes_inside_a_tools_value_are_an_error_result_naming_where(
    returned: object, at: str
) -> None:
    def read() -> object:
        return returned

    result = await ToolRegistry([read]).run(ToolCallPart("c", "read", {}))
    assert result.is_error and isinstance(result.content, str)
    assert result.content.startswith("ConfigError: the tool returned ")
    assert f"bytes that are not UTF-8 text at {at} " in result.content
    assert "ImagePart.from_bytes" in result.content and "\n" not in result.content


async def test_a_sync_tool_raising_stop_iteration_is_a_failed_result_not_a_hang() -> None:
    # asyncio cannot set a StopIteration on the future awaiting the worker thread: unconverted,
    # that future never settles and the run hangs (an async tool's is a RuntimeError already)
    def first(items: list[int]) -> int:
        return next(iter(items))  # the model sends an empty list

    registry = ToolRegistry([first])
    call = ToolCallPart(id="c1", name="first", input={"items": []})
    result = await asyncio.wait_for(registry.run(call), 5)
    assert result.is_error
    assert isinstance(result.content, str) and result.content.startswith("RuntimeError: ")
    assert "StopIteration" in result.content


async def test_a_kwargs_tool_with_its_own_schema_takes_the_models_arguments() -> None:
    # the schema names what the function takes through **kwargs: those are not "unexpected"
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "k": {"type": "integer"}},
    }

    def search(**arguments: object) -> str:
        return f"{arguments['query']} top {arguments['k']}"

    def ranked(query: str, **options: object) -> list[object]:
        return [query, options]

    registry = ToolRegistry([Tool(search, input_schema=schema), Tool(ranked, input_schema=schema)])
    arguments = {"query": "rx", "k": 3}
    searched = await registry.run(ToolCallPart(id="c1", name="search", input=arguments))
    assert (searched.content, searched.is_error) == ("rx top 3", False)
    ranked_result = await registry.run(ToolCallPart(id="c2", name="ranked", input=arguments))
    assert (ranked_result.content, ranked_result.is_error) == ('["rx",{"k":3}]', False)
    # a function without **kwargs still refuses an argument it has no parameter for
    bare = ToolRegistry([Tool(lambda query: query, name="bare", input_schema=schema)])
    refused = await bare.run(ToolCallPart(id="c3", name="bare", input=arguments))
    assert refused.is_error and "unexpected argument(s): k" in str(refused.content)


async def test_positional_only_parameters_are_passed_by_position() -> None:
    def lookup(key: str, /) -> str:
        return key.upper()

    def scaled(factor: int = 2, /, *, value: int) -> int:
        return factor * value

    registry = ToolRegistry([lookup, scaled, len])
    found = await registry.run(ToolCallPart(id="c1", name="lookup", input={"key": "oslo"}))
    assert (found.content, found.is_error) == ("OSLO", False)
    given = await registry.run(
        ToolCallPart(id="c2", name="scaled", input={"factor": 3, "value": 5})
    )
    assert (given.content, given.is_error) == ("15", False)
    default = await registry.run(ToolCallPart(id="c3", name="scaled", input={"value": 5}))
    assert (default.content, default.is_error) == ("10", False)
    counted = await registry.run(ToolCallPart(id="c4", name="len", input={"obj": [1, 2, 3]}))
    assert (counted.content, counted.is_error) == ("3", False)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_tool_error_whose_str_fails_is_still_a_failed_result(kind: str) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            return self.args[0]  # raised without arguments: an IndexError here

    def broken() -> str:
        raise Unprintable

    async def broken_async() -> str:
        raise Unprintable

    registry = ToolRegistry([Tool(broken if kind == "sync" else broken_async, name="broken")])
    result = await registry.run(ToolCallPart(id="c1", name="broken", input={}))
    assert result.is_error
    assert result.content == "Unprintable: <exception str() failed>"


def _bounded(count: Annotated[int, msgspec.Meta(ge=1, le=10, description="how many")]) -> int:
    return count


async def test_annotated_constraints_reach_the_schema_and_the_conversion() -> None:
    # Annotated[int, Meta(...)] is how a tool describes a parameter: the model is told the
    # description and the bounds, and a value beyond them is its mistake, not the function's
    bounded = Tool(_bounded)
    assert bounded.schema.input_schema == {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "description": "how many"}
        },
        "required": ["count"],
    }
    registry = ToolRegistry([bounded])
    kept = await registry.run(ToolCallPart("c1", "_bounded", {"count": 3}))
    assert kept == ToolResultPart("c1", "3")
    refused = await registry.run(ToolCallPart("c2", "_bounded", {"count": 11}))
    assert refused.is_error
    assert refused.content == (
        "invalid arguments for _bounded: Expected `int` <= 10 - at `$.count`"
    )


@pytest.mark.parametrize(
    ("arguments", "content"),
    [
        (
            {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": "four"}},
            "invalid arguments for distance: Expected `int`, got `str` - at `$.b.y`",
        ),
        (
            {"a": {"x": 0}, "b": {"x": 3, "y": 4}},
            "invalid arguments for distance: Object missing required field `y` - at `$.a`",
        ),
        (
            {"a": "origin", "b": {"x": 3, "y": 4}},
            "invalid arguments for distance: Expected `object`, got `str` - at `$.a`",
        ),
    ],
)
async def test_an_argument_of_the_wrong_type_is_named_to_the_model(
    arguments: dict[str, object], content: str
) -> None:
    # the model can only fix the call it is told about: which argument (and where in it) failed
    result = await ToolRegistry([distance]).run(ToolCallPart("x", "distance", arguments))
    assert result == ToolResultPart("x", content, is_error=True)


def _tool_over_a_local_type() -> Tool:
    class Spot(msgspec.Struct):  # not in the module's namespace: its name cannot be resolved
        x: int

    def locate(spot: Spot, zoom: int) -> str:
        return repr(spot)

    return Tool(locate)


def test_an_annotation_that_cannot_be_resolved_is_a_config_error_naming_it() -> None:
    # (this module has `from __future__ import annotations`: every annotation is a string.) One
    # that names a type only the enclosing function knows made every parameter untyped: the
    # model was told nothing and the tool got a dict for `spot` and a str for `zoom`
    with pytest.raises(ConfigError) as raised:
        _tool_over_a_local_type()
    assert str(raised.value) == (
        "tool 'locate': the annotation 'Spot' of parameter 'spot' cannot be resolved "
        "(NameError: name 'Spot' is not defined); define the type at module level or pass "
        "input_schema=..."
    )


def test_the_annotations_of_a_partial_are_kept() -> None:
    schema = Tool(functools.partial(area, unit="cm"), name="area_cm").schema.input_schema
    assert schema["properties"]["width"] == {"type": "number"}
    assert schema["properties"]["unit"] == {"type": "string"}
    assert schema["required"] == ["width", "height"]


async def test_an_unresolved_annotation_beside_an_input_schema_converts_nothing() -> None:
    class Spot(msgspec.Struct):
        x: int

    def locate(spot: Spot) -> str:
        return repr(spot)

    schema = {"type": "object", "properties": {"spot": {"type": "object"}}}
    made = Tool(locate, input_schema=schema)
    assert made.schema.input_schema == schema
    result = await ToolRegistry([made]).run(ToolCallPart("1", "locate", {"spot": {"x": 1}}))
    assert result == ToolResultPart("1", "{'x': 1}")


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [(None, "null"), ([1], "an array"), ("x", "a string"), (3, "a number"), (True, "a boolean")],
)
async def test_arguments_that_are_not_an_object_are_named_by_their_json_type(
    arguments: object, kind: str
) -> None:
    # the model wrote JSON: it is told what it wrote in JSON's words, not Python's (NoneType)
    result = await ToolRegistry([area]).run(ToolCallPart("x", "area", arguments))
    assert result == ToolResultPart(
        "x", f"invalid arguments for area: arguments must be a JSON object, got {kind}", True
    )


@pytest.mark.parametrize(
    ("returned", "sent"),
    [
        (range(3), "[0,1,2]"),
        ({"a": 1, "b": 2}.keys(), '["a","b"]'),
        ({"ids": {"x": 1}.values(), "pairs": {"y": 2}.items()}, '{"ids":[1],"pairs":[["y",2]]}'),
    ],
)
async def test_a_range_or_a_dict_view_a_tool_returns_is_its_items(
    returned: object, sent: str
) -> None:
    def listing() -> object:
        return returned

    assert await ToolRegistry([listing]).run(ToolCallPart("1", "listing", {})) == ToolResultPart(
        "1", sent
    )


@pytest.mark.parametrize(
    ("returned", "kind"),
    [
        (lambda: map(str, [1, 2]), "map"),
        (lambda: (n for n in [1]), "generator"),
        (lambda: {"rows": iter([1])}, "list_iterator"),
    ],
)
async def test_an_iterator_a_tool_returns_is_an_error_result_not_its_repr(
    returned: Callable[[], object], kind: str
) -> None:
    # its str() is '<map object at 0x7f...>': the model would read that as the tool's answer
    def listing() -> object:
        return returned()

    result = await ToolRegistry([listing]).run(ToolCallPart("1", "listing", {}))
    assert result == ToolResultPart(
        "1",
        f"ConfigError: the tool returned a {kind} object, an iterator the model would get as "
        "its repr; return a list (list(...))",
        is_error=True,
    )
