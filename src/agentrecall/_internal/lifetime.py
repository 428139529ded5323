"""Whether a store object was closed: shared by the store and its views, checked by every call."""

from __future__ import annotations

from agentrecall.errors import StoreClosedError


class Lifetime:
    """Open until :meth:`end`; :meth:`check` then refuses every call.

    A store's scope views are shallow copies of it, so they share its ``Lifetime``: closing
    any of them (they share their connections too) ends them all.
    """

    def __init__(self) -> None:
        self.ended = False

    def end(self) -> None:
        """Mark the store closed (idempotent)."""
        self.ended = True

    def check(self, name: str) -> None:
        """Raise if the store named ``name`` was closed.

        Raises:
            StoreClosedError: it was; the message says what to do instead.
        """
        if self.ended:
            raise StoreClosedError(
                f"store '{name}' is closed (aclose() was called); a closed store is not "
                f"reopened: create a new store object to use its memories again"
            )
