r"""Memory tools for a model: defined once, offered in OpenAI, Anthropic and MCP shapes.

A :class:`MemoryTool` holds a tool's ``name``, ``description`` and ``input_schema`` (JSON
Schema) with the coroutine that runs it. ``await tool(**arguments)`` checks the model's
arguments against the schema, runs the tool and returns the text the model should see:

* success: the result as JSON (``json.dumps(result, ensure_ascii=False)``, but a lone
  surrogate, which UTF-8 cannot carry, written as its ``\u`` escape);
* arguments that do not fit the schema: ``Error: Validation failed for input parameters: ...``;
* a ``ValueError`` (a bad request, e.g. an unknown store): ``Error: <message>``;
* any other exception (a failing backend): ``Error: <ExceptionClass> - <message>``.

The builders below make the manager's four tools. ``search_memory`` and ``add_memory`` have the
names, input schemas, payloads and results of the Strands Agents memory tools, so a model (or a
prompt) written for those works unchanged; the descriptions are agentrecall's own. One
deliberate difference: an optional property has no ``"default": null`` (a default its own
``type`` refuses, which strict schema validators reject); leaving it out means the same.
``forget_memory`` and ``update_memory`` go beyond the reference, and so does ``search_memory``'s
``as_of``, offered only when a store it searches keeps its past
(:attr:`~agentrecall.stores.base.Capability.SUPERSEDE`).
"""

from __future__ import annotations

import copy
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall._internal.arguments import validate_arguments
from agentrecall._internal.text import escape_surrogates
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.stores.times import timestamp
from agentrecall.types import AddResult, JsonObject, MemoryEntry

__all__ = [
    "AddToolConfig",
    "MemoryTool",
    "ToolConfig",
    "ToolResult",
    "add_memory_tool",
    "forget_memory_tool",
    "search_memory_tool",
    "update_memory_tool",
]

logger = logging.getLogger(__name__)

SEARCH_MEMORY = "search_memory"
ADD_MEMORY = "add_memory"
FORGET_MEMORY = "forget_memory"
UPDATE_MEMORY = "update_memory"

SearchFunction = Callable[[str, list[str], int | None, str | None], Awaitable[list[MemoryEntry]]]
UpdateFunction = Callable[[str, str, str | None, list[str]], Awaitable[list[tuple[str, AddResult]]]]
AddFunction = Callable[
    [list[str], JsonObject | None, list[str], float | None],
    Awaitable[list[tuple[str, list[AddResult | None]]]],
]

# The name rule shared by OpenAI and Anthropic tool definitions.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

_SEARCH_TEXT = (
    "Search your long-term memory for what you learned in earlier conversations: facts about "
    "the user, their preferences, past decisions and project context. Call it before answering "
    "whenever the answer could depend on something the user told you before."
)
_ADD_TEXT = (
    "Save facts to long-term memory so you still know them in future conversations. Call it "
    "when the user tells you something worth keeping, such as a preference, a decision or a "
    "lasting detail about them or their work. Write each entry as one short, self-contained fact."
)
_FORGET_TEXT = (
    "Delete memories from long-term memory by id. Call it when the user asks you to forget "
    "something, or when a remembered fact has turned out to be wrong or out of date. The ids are "
    "the `id` fields of memory search results."
)
_UPDATE_TEXT = (
    "Correct a memory that is no longer true: give its id (the `id` field of a memory search "
    "result) and the fact as it stands now. The new text replaces it in what you recall; the "
    "old one is kept in the memory's history, so earlier states can still be looked up. Call it "
    "when the user corrects something you remembered or tells you it has changed."
)
_AS_OF_TEXT = (
    "Recall what memory held at this moment instead of now: an ISO 8601 date such as "
    "2025-03-01 (midnight UTC) or a time with an offset such as 2025-03-01T09:30:00Z. Facts "
    "corrected or deleted since are found as they were then."
)


@dataclass(frozen=True, slots=True)
class ToolConfig:
    """Options of a manager's ``search_memory``, ``forget_memory`` or ``update_memory`` tool.

    Attributes:
        name: the tool's name instead of the default one.
        description: the tool's description instead of the default one (the list of stores is
            still appended).
    """

    name: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class AddToolConfig:
    """Options of a manager's ``add_memory`` tool.

    Attributes:
        name: the tool's name instead of ``add_memory``.
        description: the tool's description instead of the default one (the list of stores is
            still appended).
        stores: the stores the tool may write to, by name or as store objects (matched by name);
            ``None`` allows every writable store with ``add``.
        wait_for_writes: ``True`` returns ``{"stored": n, "new": [...], "already_stored":
            [...]}`` once every write finished and reports failures to the model; ``False``
            starts the writes in the background and returns ``{"accepted": n}`` at once
            (failures are only logged).
    """

    name: str | None = None
    description: str | None = None
    stores: Sequence[str | MemoryStore] | None = None
    wait_for_writes: bool = True


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call produced: the text for the model and whether it reports an error."""

    text: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class MemoryTool:
    """A tool a model can call, in a form every agent loop can use.

    Attributes:
        name: the name the model calls it by.
        description: what the tool does and when to call it, written for the model.
        input_schema: JSON Schema of the arguments (an ``object``).
        function: the coroutine function run with the checked arguments as keywords; it
            returns a JSON-serialisable result.
    """

    name: str
    description: str
    input_schema: JsonObject
    function: Callable[..., Awaitable[Any]]

    async def __call__(self, /, **arguments: Any) -> str:
        """Run the tool with the model's arguments; return the text the model should see."""
        return (await self.invoke(arguments)).text

    async def invoke(self, arguments: Mapping[str, Any] | str | None) -> ToolResult:
        """Run the tool and return its text with an error flag; never raises for a bad call.

        Args:
            arguments: the model's arguments as a mapping, or as the JSON text OpenAI-style APIs
                deliver (``None`` or ``""`` mean no arguments).
        """
        try:
            checked = validate_arguments(self.name, self.input_schema, _parse(arguments))
            result = await self.function(**checked)
        except ValueError as error:
            return ToolResult(f"Error: {error}", is_error=True)
        except Exception as error:
            logger.warning("tool %s failed", self.name, exc_info=True)
            return ToolResult(f"Error: {type(error).__name__} - {error}", is_error=True)
        # A memory another program wrote may hold a lone surrogate, which no UTF-8 transport
        # carries; its JSON escape reads back as the same string.
        return ToolResult(escape_surrogates(json.dumps(result, ensure_ascii=False)), False)

    def as_openai(self) -> JsonObject:
        """Return the OpenAI Chat Completions function tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(self.input_schema),
            },
        }

    def as_anthropic(self) -> JsonObject:
        """Return the Anthropic Messages API tool definition."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": copy.deepcopy(self.input_schema),
        }

    def as_mcp(self) -> JsonObject:
        """Return the Model Context Protocol tool definition (as ``tools/list`` lists it)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": copy.deepcopy(self.input_schema),
        }


def _parse(arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any]:
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as error:
            raise InvalidArgumentError(
                f"Validation failed for input parameters: the arguments are not JSON ({error})"
            ) from error
    if not isinstance(arguments, Mapping):
        raise InvalidArgumentError(
            "Validation failed for input parameters: the arguments must be a JSON object, "
            f"got {type(arguments).__name__}"
        )
    return arguments


def _tool_name(configured: str | None, default: str) -> str:
    """Return the tool's name, checked against the rule OpenAI and Anthropic share.

    Raises:
        InvalidArgumentError: the name is not 1–64 letters, digits, ``_`` or ``-``.
    """
    name = default if configured is None else configured
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"tool name must be 1 to 64 letters, digits, '_' or '-', got {name!r}"
        )
    return name


def _describe(text: str, header: str, stores: Sequence[MemoryStore], closing: str) -> str:
    """Append the stores that have a description to ``text``, one ``- name: description`` line each.

    Nothing is appended when no store has a description.
    """
    lines = [f"- {store.name}: {store.description}" for store in stores if store.description]
    if not lines:
        return text
    return f"{text}\n\n{header}\n" + "\n".join(lines) + f"\n\n{closing}"


def _pick_stores(requested: Sequence[str] | None, scope: Sequence[str], tool: str) -> list[str]:
    """Return the stores a tool call targets: the requested ones in scope, else the whole scope.

    ``None`` or an empty list targets every store in ``scope``. Otherwise requested names in
    scope are kept in request order without repeats; the others are dropped with a warning.

    Raises:
        InvalidArgumentError: names were requested but none is in scope.
    """
    if not requested:
        return list(scope)
    chosen = list(dict.fromkeys(name for name in requested if name in scope))
    ignored = [name for name in requested if name not in scope]
    if ignored:
        logger.warning("%s: ignoring stores it cannot use: %s", tool, ", ".join(ignored))
    if not chosen:
        raise InvalidArgumentError(
            "MemoryManager: none of the requested memory stores are available "
            f"(requested: {', '.join(requested)}); available stores: {', '.join(scope)}"
        )
    return chosen


def _string_array(description: str) -> JsonObject:
    return {
        "type": "array",
        "items": {"type": "string"},
        "description": description,
    }


def search_memory_tool(
    config: ToolConfig,
    scope: Sequence[MemoryStore],
    search: SearchFunction,
    *,
    with_ids: bool = False,
) -> MemoryTool:
    """Build the ``search_memory`` tool.

    The model gives ``query`` and optionally ``max_search_results`` (per store) and ``stores``.
    The result is a list of ``{"content", "store_name", "metadata"}`` objects (a key is left out
    when its value is empty), plus ``"id"`` when ``with_ids`` is set so the model can forget or
    correct.

    When a store of ``scope`` keeps its past (``Capability.SUPERSEDE``), the schema also has
    ``as_of``: the search then answers from what memory held at that moment, in the stores
    that can; naming only other stores in ``stores`` with it is an error, and a time that is
    not one is an error naming ``as_of``.

    Args:
        config: name and description overrides.
        scope: the stores the tool searches, in order.
        search: ``search(query, store_names, max_search_results, as_of)`` returning stamped
            hits.
        with_ids: whether each result carries the memory's ``id``.
    """
    name = _tool_name(config.name, SEARCH_MEMORY)
    names = [store.name for store in scope]
    remembering = [store.name for store in scope if remembers(store)]

    async def run(
        query: str,
        max_search_results: int | None,
        stores: list[str] | None,
        as_of: str | None = None,
    ) -> Any:
        moment = timestamp(as_of, "as_of")  # a bad time is the model's to fix, not a failed store
        targets = _pick_stores(stores, names, name)
        if moment is not None:
            targets = _remembering_targets(targets, remembering, bool(stores))
        return [
            _payload(entry, with_ids)
            for entry in await search(query, targets, max_search_results, moment)
        ]

    description = _describe(
        config.description or _SEARCH_TEXT,
        "Available memory stores:",
        scope,
        "Name one or more of these stores in `stores` to search only them, or leave `stores` "
        "out to search them all.",
    )
    schema: JsonObject = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to recall, in words or a question."},
            "max_search_results": {
                "type": "integer",
                "description": "The most results to return from each store.",
            },
            "stores": _string_array("Names of the stores to search; leave out to search all."),
        },
        "required": ["query"],
    }
    if remembering:
        schema["properties"]["as_of"] = {"type": "string", "description": _AS_OF_TEXT}
    return MemoryTool(name, description, schema, run)


def remembers(store: MemoryStore) -> bool:
    """Whether ``store`` keeps its past: retired memories, and reads ``as_of`` a moment."""
    return Capability.SUPERSEDE in _capabilities(store)


def _remembering_targets(targets: list[str], remembering: list[str], named: bool) -> list[str]:
    """Return the targets an ``as_of`` search reads: those that keep their past.

    Stores the model left to the default are narrowed in silence, since the others cannot
    answer for a past moment; stores it named that cannot are an error.

    Raises:
        InvalidArgumentError: the model named stores that keep no past.
    """
    kept = [target for target in targets if target in remembering]
    others = [target for target in targets if target not in remembering]
    if others and named:
        raise InvalidArgumentError(
            f"as_of: the store{'s' if len(others) > 1 else ''} {', '.join(others)} "
            "cannot recall a past moment (only SQLiteStore and PostgresStore can); leave "
            "as_of out, or name stores that can in stores"
            + (f": {', '.join(remembering)}" if remembering else "")
        )
    return kept


def _payload(entry: MemoryEntry, with_id: bool) -> JsonObject:
    item: JsonObject = {"content": entry.content}
    if entry.store_name:
        item["store_name"] = entry.store_name
    if entry.metadata:
        item["metadata"] = entry.metadata
    if with_id and entry.id:
        item["id"] = entry.id
    return item


def add_memory_tool(
    config: AddToolConfig,
    scope: Sequence[MemoryStore],
    add_entries: AddFunction,
    spawn: Callable[[Coroutine[Any, Any, None]], None],
) -> MemoryTool:
    """Build the ``add_memory`` tool.

    The model gives ``entries`` (facts) and optionally ``stores``, ``metadata`` (a JSON
    object stored with every entry) and ``ttl`` (seconds until the entries are forgotten; only
    for stores with :attr:`~agentrecall.stores.base.Capability.EXPIRY`). The result is
    ``{"stored": n, "new": [...], "already_stored": [...]}``: ``n`` counts the entries (a
    deduplicated one too, as the reference does), and each list item is
    ``{"content", "id", "store_name"}``, per store written to. An entry a store already held
    (identical content, or an earlier entry of the same call) is under ``already_stored``
    with the id of the memory that holds it; its ``metadata`` and ``ttl`` are not applied
    (a store with expiry lets it live at least as long). A store that does not say whether
    an entry was new (its ``AddResult`` has no ``created``) counts it as new. With
    ``config.wait_for_writes`` off the result is ``{"accepted": n}`` at once.

    Args:
        config: name, description and write-mode options (its ``stores`` already applied to
            ``scope``).
        scope: the stores the tool may write to, in order.
        add_entries: ``add_entries(entries, metadata, store_names, ttl)`` writing every entry
            to every named store and returning each store's name with each entry's result,
            or raising ``AggregateMemoryError`` naming the entries that failed.
        spawn: runs a coroutine in the background (used when not waiting for writes).
    """
    name = _tool_name(config.name, ADD_MEMORY)
    names = [store.name for store in scope]
    expiring = {store.name for store in scope if Capability.EXPIRY in _capabilities(store)}

    async def run(
        entries: list[str],
        stores: list[str] | None,
        metadata: JsonObject | None,
        ttl: float | None,
    ) -> Any:
        if not entries:
            raise InvalidArgumentError(f"MemoryManager: {name} requires at least one entry")
        if ttl is not None and not (math.isfinite(ttl) and ttl > 0):
            raise InvalidArgumentError(
                f"ttl: expected a positive number of seconds, got {json.dumps(ttl)}"
            )
        targets = _pick_stores(stores, names, name)
        lasting = [store for store in targets if store not in expiring]
        if ttl is not None and lasting:
            raise InvalidArgumentError(
                f"ttl: the store{'s' if len(lasting) > 1 else ''} {', '.join(lasting)} cannot "
                "forget memories after a time; leave ttl out, or name stores that can in stores"
            )
        if not config.wait_for_writes:

            async def write() -> None:
                await add_entries(entries, metadata, targets, ttl)

            spawn(write())
            return {"accepted": len(entries)}
        return _added(entries, await add_entries(entries, metadata, targets, ttl))

    description = _describe(
        config.description or _ADD_TEXT,
        "Available writable stores:",
        scope,
        "Name a store in `stores` to save only there, or leave `stores` out to save to every "
        "store listed.",
    )
    schema: JsonObject = {
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The facts to save, one self-contained statement per item.",
            },
            "stores": _string_array("Names of the stores to save to; leave out to save to all."),
            "metadata": {
                "type": "object",
                "description": "A JSON object stored with every entry, e.g. its topic.",
            },
            "ttl": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Seconds after which the entries are forgotten; leave out to "
                "keep them.",
            },
        },
        "required": ["entries"],
    }
    return MemoryTool(name, description, schema, run)


def _added(entries: list[str], done: list[tuple[str, list[AddResult | None]]]) -> JsonObject:
    """The ``add_memory`` result: what each store stored anew and what it already held."""
    new: list[JsonObject] = []
    held: list[JsonObject] = []
    for store_name, results in done:
        seen: set[str] = set()
        for content, result in zip(entries, results, strict=True):
            item: JsonObject = {"content": content, "store_name": store_name}
            if result is None:
                new.append(item)
                continue
            item["id"] = result.id
            # An entry repeated in one call is already there the second time, in any store.
            (held if result.created is False or result.id in seen else new).append(item)
            seen.add(result.id)
    return {"stored": len(entries), "new": new, "already_stored": held}


def _capabilities(store: MemoryStore) -> Any:
    return getattr(store, "capabilities", ())


def forget_memory_tool(
    config: ToolConfig,
    scope: Sequence[MemoryStore],
    forget: Callable[[list[str], list[str]], Awaitable[int]],
) -> MemoryTool:
    """Build the ``forget_memory`` tool (not in the reference).

    The model gives ``ids`` (from search results) and optionally ``stores``. The result is
    ``{"deleted": n}``, the number of memories removed; ids no store holds are not an error.

    Args:
        config: name and description overrides.
        scope: the stores the tool may delete from, in order.
        forget: ``forget(ids, store_names)`` returning how many memories were removed.
    """
    name = _tool_name(config.name, FORGET_MEMORY)
    names = [store.name for store in scope]

    async def run(ids: list[str], stores: list[str] | None) -> Any:
        if not ids:
            raise InvalidArgumentError(f"MemoryManager: {name} requires at least one id")
        return {"deleted": await forget(ids, _pick_stores(stores, names, name))}

    description = _describe(
        config.description or _FORGET_TEXT,
        "Stores you can delete from:",
        scope,
        "Name stores in `stores` to delete only from them, or leave `stores` out to look in all.",
    )
    schema: JsonObject = {
        "type": "object",
        "properties": {
            "ids": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Ids of the memories to delete, as search results give them.",
            },
            "stores": _string_array("Names of the stores to delete from; leave out for all."),
        },
        "required": ["ids"],
    }
    return MemoryTool(name, description, schema, run)


def update_memory_tool(
    config: ToolConfig,
    scope: Sequence[MemoryStore],
    update: UpdateFunction,
) -> MemoryTool:
    """Build the ``update_memory`` tool (not in the reference).

    The model gives ``memory_id`` (from search results), ``content`` (the corrected fact) and
    optionally ``reason`` and ``stores``. The store holding the memory supersedes it: the
    corrected fact becomes a memory of its own and the old one is retired, kept in the
    history. The result is ``{"updated": [{"id", "replaces", "store_name"}, ...]}``, one item
    per store that held the id (``id`` the memory now holding the fact); an id no store holds
    is an error.

    Args:
        config: name and description overrides.
        scope: the stores the tool may correct memories in, in order.
        update: ``update(memory_id, content, reason, store_names)`` returning each store's
            name with the :class:`~agentrecall.types.AddResult` of the new memory.
    """
    name = _tool_name(config.name, UPDATE_MEMORY)
    names = [store.name for store in scope]

    async def run(
        memory_id: str, content: str, reason: str | None, stores: list[str] | None
    ) -> Any:
        done = await update(memory_id, content, reason, _pick_stores(stores, names, name))
        return {
            "updated": [
                {"id": result.id, "replaces": memory_id, "store_name": store_name}
                for store_name, result in done
            ]
        }

    description = _describe(
        config.description or _UPDATE_TEXT,
        "Stores you can correct memories in:",
        scope,
        "Name stores in `stores` to look only in them, or leave `stores` out to look in all.",
    )
    schema: JsonObject = {
        "type": "object",
        "properties": {
            "memory_id": {
                "type": "string",
                "description": "The id of the memory to correct, as search results give it.",
            },
            "content": {
                "type": "string",
                "description": "The fact as it is true now, one self-contained statement.",
            },
            "reason": {
                "type": "string",
                "description": "Why it changed, in a few words; kept in the memory's history.",
            },
            "stores": _string_array("Names of the stores to look in; leave out for all."),
        },
        "required": ["memory_id", "content"],
    }
    return MemoryTool(name, description, schema, run)
