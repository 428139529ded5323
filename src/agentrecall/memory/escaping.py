"""Escape untrusted text for the ``<memory>`` block so it stays well-formed and unforgeable.

The block is read by models and by pipelines that may normalise their input with Unicode NFKC
first, so escaping only ``&``, ``<`` and ``>`` is not enough:

* Look-alikes that NFKC turns into markup (fullwidth ``＜`` U+FF1C, small ``﹤`` U+FE64, ...)
  are written as character references (``&#xFF1C;``), which NFKC leaves alone.
* A leading combining mark is written as a character reference too: NFKC would otherwise
  combine U+0338 with the ``>`` that ends the opening tag into ``≯`` and break the tag.
* Bidi controls (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069) are written as
  character references, so they are visible in the raw text instead of reordering what a
  reader sees; an XML parser still restores them.
* Characters XML 1.0 cannot carry at all, even as references (C0 controls other than tab,
  newline and carriage return, U+FFFE, U+FFFF and surrogates), become U+FFFD.

Every other character is kept as it is, so ordinary text renders exactly as with plain
escaping.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

__all__ = ["escape_attribute", "escape_text"]

# Every character whose NFKC form holds a markup character, for the Unicode versions Python
# ships; a test scans the running interpreter's whole Unicode database against this table.
NFKC_LOOKALIKES: Mapping[str, str] = {
    "\ufe60": "&",
    "\ufe64": "<",
    "\ufe65": ">",
    "\uff02": '"',
    "\uff06": "&",
    "\uff07": "'",
    "\uff1c": "<",
    "\uff1e": ">",
}

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

NOT_IN_XML = "".join(map(chr, [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])) + "\ufffe\uffff"

REPLACEMENT = "\ufffd"

_TEXT_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_ATTRIBUTE_ENTITIES = {**_TEXT_ENTITIES, '"': "&quot;", "'": "&#39;"}


def _reference(char: str) -> str:
    return f"&#x{ord(char):X};"


def _table(entities: Mapping[str, str]) -> dict[str, str]:
    table = dict(entities)
    table.update({c: _reference(c) for c, form in NFKC_LOOKALIKES.items() if form in entities})
    table.update({c: _reference(c) for c in BIDI_CONTROLS})
    table.update(dict.fromkeys(NOT_IN_XML, REPLACEMENT))
    return table


def _pattern(table: Mapping[str, str]) -> re.Pattern[str]:
    return re.compile("[" + "".join(map(re.escape, table)) + "\ud800-\udfff]")


_TEXT_TABLE = _table(_TEXT_ENTITIES)
_ATTRIBUTE_TABLE = _table(_ATTRIBUTE_ENTITIES)
_TEXT_PATTERN = _pattern(_TEXT_TABLE)
_ATTRIBUTE_PATTERN = _pattern(_ATTRIBUTE_TABLE)


def _escape(text: str, table: Mapping[str, str], pattern: re.Pattern[str]) -> str:
    escaped = pattern.sub(lambda match: table.get(match.group(), REPLACEMENT), text)
    # Only the first character touches markup that NFKC could combine it with; the characters
    # after it follow a base character or the ";" of a reference, which combine with nothing.
    if escaped and unicodedata.combining(unicodedata.normalize("NFKD", escaped[0])[0]):
        return _reference(escaped[0]) + escaped[1:]
    return escaped


def escape_text(text: str) -> str:
    """Escape text for use as element content; the result stays text after NFKC.

    ``&``, ``<`` and ``>`` become entities (quotes stay as they are); look-alikes, bidi
    controls and characters XML cannot carry are handled as the module docstring says.
    Parsing the result gives back ``text`` except for those last characters (U+FFFD) and the
    usual XML line-end normalisation.
    """
    return _escape(text, _TEXT_TABLE, _TEXT_PATTERN)


def escape_attribute(text: str) -> str:
    """Escape text for a double- or single-quoted attribute value; it stays one after NFKC.

    As :func:`escape_text`, and both quote characters and their look-alikes are escaped too.
    """
    return _escape(text, _ATTRIBUTE_TABLE, _ATTRIBUTE_PATTERN)
