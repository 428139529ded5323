"""Strings in fixed memory: a new one may pass for one held, never a held one for new."""

from __future__ import annotations

__all__ = ["SeenStrings"]

BITS_PER_STRING = 16
"""Bits a :class:`SeenStrings` keeps for each string it is sized for."""

MAX_BITS = 1 << 27
"""The most bits a :class:`SeenStrings` keeps (16 MiB): about 8 million strings at full accuracy."""


class SeenStrings:
    """Remembers strings in a fixed number of bits: a Bloom filter probing three bits a string.

    :meth:`add` never answers ``False`` for a string added before. It answers ``True`` for a
    string never added with a probability of about 0.5% while it holds no more strings than
    it was sized for, rising slowly beyond (about 3% at twice as many). Its memory is fixed
    at construction: :data:`BITS_PER_STRING` bits for each string expected, at most
    :data:`MAX_BITS`. Strings are told apart by Python's ``hash``, so answers hold within one
    process only.
    """

    def __init__(self, expected: int) -> None:
        wanted = max(expected, 1) * BITS_PER_STRING
        bits = min(1 << max(wanted - 1, 1023).bit_length(), MAX_BITS)
        self._bits = bytearray(bits >> 3)
        self._mask = bits - 1

    def add(self, text: str) -> bool:
        """Add ``text``; return whether it may have been added before."""
        mask, bits = self._mask, self._bits
        hashed = hash(text)
        step = (hashed >> 32) | 1  # odd, so that the three probes are three bits
        a, b, c = hashed & mask, (hashed + step) & mask, (hashed + 2 * step) & mask
        a_bit, b_bit, c_bit = 1 << (a & 7), 1 << (b & 7), 1 << (c & 7)
        a, b, c = a >> 3, b >> 3, c >> 3
        held = bool(bits[a] & a_bit and bits[b] & b_bit and bits[c] & c_bit)
        bits[a] |= a_bit
        bits[b] |= b_bit
        bits[c] |= c_bit
        return held
