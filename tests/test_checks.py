"""Argument checks shared by the stores."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrecall import InvalidArgumentError
from agentrecall._internal.checks import (
    check_ids,
    check_item,
    check_limit,
    check_offset,
    seconds,
)
from agentrecall._internal.jsonvalue import check_json_object
from agentrecall._internal.text import check_text, escape_surrogates

# Every character Python counts as white space, and a few that look blank but are not.
blanks = st.text(st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2000\u2028\u3000"))
texts = st.text() | blanks | st.builds(lambda a, b: a + b, blanks, st.sampled_from("a\u200b\ufeff"))


@given(texts)
def test_content_is_refused_exactly_when_stripping_leaves_nothing(content: str) -> None:
    if content.strip():
        check_item(content, None, "")
    else:
        with pytest.raises(InvalidArgumentError, match="non-blank"):
            check_item(content, None, "")


# Text with lone surrogates among ordinary characters (st.text() alone never draws them).
surrogate_texts = st.text(
    st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010) | st.characters()
)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@given(surrogate_texts)
def test_text_and_metadata_are_refused_exactly_when_utf8_cannot_encode_them(text: str) -> None:
    for value in ({"k": text}, {text: 1}, {"a": [{"b": text}]}):
        if _encodes(text):
            check_json_object(value, "metadata")
            check_text(text, "field")
        else:
            with pytest.raises(InvalidArgumentError, match="lone surrogate"):
                check_json_object(value, "metadata")
            with pytest.raises(InvalidArgumentError, match="^field holds a lone surrogate"):
                check_text(text, "field")


@given(surrogate_texts, surrogate_texts)
def test_escaping_surrogates_keeps_the_json_value_and_only_touches_surrogates(
    key: str, text: str
) -> None:
    value = {key: [text]}
    raw = json.dumps(value, ensure_ascii=False)
    escaped = escape_surrogates(raw)
    escaped.encode("utf-8")  # always encodable
    assert json.loads(escaped) == value
    if _encodes(raw):
        assert escaped == raw


def test_limits_offsets_and_durations_have_64_bit_and_calendar_bounds() -> None:
    check_limit(2**63 - 1, "limit")
    check_offset(2**63 - 1)
    for huge in (2**63, 10**5000):
        with pytest.raises(InvalidArgumentError, match="limit must be an integer from 1 to"):
            check_limit(huge, "limit")
        with pytest.raises(InvalidArgumentError, match="offset must be an integer from 0 to"):
            check_offset(huge)
    assert seconds(timedelta(days=365 * 9_000), "ttl") == 365 * 9_000 * 86_400
    for too_long in (float("inf"), 10**5000, timedelta.max):
        with pytest.raises(InvalidArgumentError, match="ttl must be at most"):
            seconds(too_long, "ttl")


ids = st.text() | st.sampled_from(["\ud800", "a\udc80b"]) | st.integers() | st.none() | st.binary()


@given(st.lists(ids, max_size=6))
def test_a_list_of_ids_is_refused_exactly_when_one_id_is_and_the_message_names_it(
    ids: list[object],
) -> None:
    first_bad = next(
        (
            index
            for index, value in enumerate(ids)
            if not isinstance(value, str) or any("\ud800" <= c <= "\udfff" for c in value)
        ),
        None,
    )
    if first_bad is None:
        assert check_ids(ids) == ids  # type: ignore[arg-type]
    else:
        with pytest.raises(InvalidArgumentError, match=rf"memory_ids\[{first_bad}\]"):
            check_ids(ids)  # type: ignore[arg-type]
