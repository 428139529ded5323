"""Argument checks shared by the stores."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrecall import InvalidArgumentError
from agentrecall._internal.checks import check_item, check_limit, check_offset, seconds
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
