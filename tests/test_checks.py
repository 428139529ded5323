"""Argument checks shared by the stores."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrecall import InvalidArgumentError
from agentrecall._internal.checks import check_item

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
