"""Scopes: whose memories a store view holds, and how a view narrows to a smaller one."""

from __future__ import annotations

from dataclasses import dataclass

from agentrecall._internal.text import check_text
from agentrecall.errors import InvalidArgumentError


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memories a store view holds: any of user, agent and session, or none (all)."""

    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    def columns(self) -> dict[str, str | None]:
        """Return the scope as column values."""
        return {"user_id": self.user_id, "agent_id": self.agent_id, "session_id": self.session_id}

    def narrowed(self, **ids: str | None) -> Scope:
        """Return this scope with more ids set; an id already set cannot change."""
        merged = self.columns()
        for column, value in ids.items():
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise InvalidArgumentError(f"{column} must be a non-empty string, got {value!r}")
            check_text(value, column)
            if merged[column] not in (None, value):
                raise InvalidArgumentError(
                    f"this view is already scoped to {column}={merged[column]!r}; "
                    f"it cannot be narrowed to {value!r}"
                )
            merged[column] = value
        return Scope(**merged)

    def label(self) -> str:
        """Return ``user=ana,session=s1``-style text for names and messages."""
        return ",".join(
            f"{column.removesuffix('_id')}={value}"
            for column, value in self.columns().items()
            if value is not None
        )
