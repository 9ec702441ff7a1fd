"""The fake's answer to a structured-output request follows the schema a user's types make.

``msgspec.json.schema`` of a Struct (and pydantic's ``model_json_schema``) puts nested models in
``$defs`` behind ``$ref`` and writes bounds (``minimum``, ``minLength``, ``minItems``); a user's
test decodes the reply into the same type. msgspec's decoder is the oracle.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from rxturn import OpenAIClient, RequestOptions, TurnEngine
from rxturn.messages import ResponseFormat
from rxturn.testing import FakeProvider


class Wind(msgspec.Struct):
    speed: Annotated[float, msgspec.Meta(gt=0)]
    gusts: list[Annotated[int, msgspec.Meta(ge=5)]]


class Forecast(msgspec.Struct):
    city: Annotated[str, msgspec.Meta(min_length=2)]
    days: Annotated[int, msgspec.Meta(ge=1, le=7)]
    wind: Wind
    calm: Wind | None
    alerts: Annotated[list[str], msgspec.Meta(min_length=1)]


class Node(msgspec.Struct):
    label: str
    child: Node | None = None
    children: list[Node] = []


async def _reply(schema: dict[str, object]) -> str:
    options = RequestOptions(response_format=ResponseFormat(name="out", schema=schema))
    async with (
        FakeProvider({"models": {"*": [{}]}}) as fake,
        OpenAIClient("m", api_key="k", base_url=fake.openai_base_url) as client,
    ):
        return (await TurnEngine(client, request_options=options).run("go")).text


async def test_the_answer_to_a_struct_schema_decodes_into_the_struct() -> None:
    text = await _reply(msgspec.json.schema(Forecast))
    msgspec.json.decode(text, type=Forecast)  # raises when the answer breaks the schema


async def test_the_answer_to_a_recursive_schema_ends() -> None:
    text = await _reply(msgspec.json.schema(Node))
    assert msgspec.json.decode(text, type=Node) == Node("")
