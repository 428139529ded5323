"""The one-shot metadata encoder writes exactly what ``json`` writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrecall._internal import jsonencode
from agentrecall._internal.jsonencode import compact_encoder

_PLAIN = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
objects = st.dictionaries(st.text(), values, max_size=6)


@given(objects)
def test_the_text_is_the_plain_encoders(value: dict[str, Any]) -> None:
    assert compact_encoder()(value) == _PLAIN(value)


def test_one_encoder_serves_many_values_and_keeps_non_ascii() -> None:
    encode = compact_encoder()
    assert encode({"city": "Zürich", "n": [1, 2.5, None, True]}) == (
        '{"city": "Zürich", "n": [1, 2.5, null, true]}'
    )
    assert encode({}) == "{}"


def test_a_value_json_cannot_take_raises_type_error() -> None:
    with pytest.raises(TypeError, match="set"):
        compact_encoder()({"tags": {"a"}})


def test_without_the_c_accelerator_the_plain_encoder_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jsonencode, "_C_MAKE_ENCODER", None)
    encode = compact_encoder()
    assert encode({"a": "é"}) == '{"a": "é"}'


def test_a_c_encoder_taking_other_arguments_leaves_the_plain_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def other_signature(markers: object) -> None:
        raise AssertionError("not reached: called with more arguments than it takes")

    monkeypatch.setattr(jsonencode, "_C_MAKE_ENCODER", other_signature)
    assert compact_encoder()({"a": [1, "é"]}) == '{"a": [1, "é"]}'


def test_a_c_encoder_writing_other_text_leaves_the_plain_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def compact(*arguments: object) -> Callable[[object, int], tuple[str]]:
        return lambda value, level: (json.dumps(value, separators=(",", ":")),)

    monkeypatch.setattr(jsonencode, "_C_MAKE_ENCODER", compact)
    assert compact_encoder()({"a": [1, 2]}) == '{"a": [1, 2]}'
