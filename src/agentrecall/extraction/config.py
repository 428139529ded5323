"""A store's extraction setting, and its resolution into triggers, extractor and filter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall.errors import InvalidArgumentError
from agentrecall.extraction.filter import MessageFilter
from agentrecall.extraction.model_extractor import ModelExtractor
from agentrecall.extraction.reconcile import ReconcileConfig
from agentrecall.extraction.triggers import ExtractionTrigger, IntervalTrigger
from agentrecall.extraction.types import Extractor
from agentrecall.stores.base import Capability

DEFAULT_TRIGGER = IntervalTrigger(5)
"""Save every five agent invocations when a store names no trigger."""

_CONFIG_KEYS = ("trigger", "extractor", "filter", "reconcile")


@dataclass(frozen=True, slots=True)
class ExtractionConfig:
    """How a store learns from the conversation; every field is optional.

    Set it as a store's ``extraction`` attribute (``True`` means all defaults). The
    reference's dict form, ``{"trigger": ..., "extractor": ..., "filter": ...}``, is accepted
    too (with ``"reconcile"`` as well).

    Attributes:
        trigger: when to save: one trigger or a sequence of them (a save happens when any
            fires). ``None`` saves every 5 invocations; an empty sequence is refused by the
            memory manager.
        extractor: turns messages into memories written with the store's ``add``. ``None``
            picks a :class:`~agentrecall.extraction.ModelExtractor` for a store that has
            ``add`` but no ``add_messages``, and otherwise hands the messages to
            ``add_messages`` for the store to process itself.
        filter: the content blocks to drop first; ``None`` drops tool calls and tool
            results.
        reconcile: how extracted facts meet the memories already stored (see
            :mod:`agentrecall.extraction.reconcile`): ``None`` reconciles with the
            extractor's model when the extractor is a
            :class:`~agentrecall.extraction.ModelExtractor` and the store declares
            ``Capability.SUPERSEDE``, and only adds otherwise; ``False`` only adds; ``True``
            or a :class:`~agentrecall.extraction.ReconcileConfig` reconciles as it says (the
            memory manager refuses a setting the store cannot follow).
    """

    trigger: ExtractionTrigger | Sequence[ExtractionTrigger] | None = None
    extractor: Extractor | None = None
    filter: MessageFilter | None = None
    reconcile: bool | ReconcileConfig | None = None

    def __post_init__(self) -> None:
        triggers = _as_sequence(self.trigger)
        if any(not isinstance(trigger, ExtractionTrigger) for trigger in triggers):
            raise InvalidArgumentError(
                "ExtractionConfig: trigger must be an ExtractionTrigger (an object with a "
                f"fires(turn) method) or a sequence of them, got {self.trigger!r}"
            )
        if self.extractor is not None and not isinstance(self.extractor, Extractor):
            raise InvalidArgumentError(
                "ExtractionConfig: extractor must have an async extract(messages, context) "
                f"method, got {type(self.extractor).__name__}"
            )
        if self.filter is not None and not isinstance(self.filter, MessageFilter):
            raise InvalidArgumentError(
                f"ExtractionConfig: filter must be a MessageFilter, got {self.filter!r}"
            )
        if self.reconcile is not None and not isinstance(self.reconcile, bool | ReconcileConfig):
            raise InvalidArgumentError(
                "ExtractionConfig: reconcile must be True, False, None or a ReconcileConfig, "
                f"got {self.reconcile!r}"
            )


@dataclass(frozen=True, slots=True)
class ResolvedExtraction:
    """A store's extraction setting with every default filled in.

    Attributes:
        triggers: the triggers, possibly empty (a configuration the manager refuses).
        extractor: the extractor, or ``None`` for the ``add_messages`` path.
        filter: the message filter.
        reconcile: how extracted facts are reconciled, or ``None`` to add them as they are.
    """

    triggers: tuple[ExtractionTrigger, ...]
    extractor: Extractor | None
    filter: MessageFilter
    reconcile: ReconcileConfig | None = None


def resolve_extraction(value: object, store: object) -> ResolvedExtraction | None:
    """Resolve a store's ``extraction`` attribute; ``None`` when extraction is off.

    Args:
        value: ``None`` or ``False`` (off), ``True`` (all defaults), an
            :class:`ExtractionConfig`, or a mapping with some of the keys ``trigger``,
            ``extractor`` and ``filter``.
        store: the store, whose methods decide the default extractor (see
            :class:`ExtractionConfig`).

    Raises:
        InvalidArgumentError: ``value`` is none of the above, a mapping has another key, or
            its ``reconcile`` setting asks for what the store cannot do (a model's decisions
            need ``Capability.SUPERSEDE``, a ``duplicate_threshold`` needs
            ``Capability.SEMANTIC``).
    """
    if value is None or value is False:
        return None
    if value is True:
        config = ExtractionConfig()
    elif isinstance(value, ExtractionConfig):
        config = value
    elif isinstance(value, Mapping):
        config = _config_from_mapping(value, store)
    else:
        raise InvalidArgumentError(
            f"store '{_name(store)}' extraction must be True, False, None, an "
            f"ExtractionConfig or a mapping, got {value!r}"
        )
    triggers = (DEFAULT_TRIGGER,) if config.trigger is None else tuple(_as_sequence(config.trigger))
    extractor = config.extractor
    if extractor is None and implements(store, "add") and not implements(store, "add_messages"):
        extractor = ModelExtractor()
    return ResolvedExtraction(
        triggers=triggers,
        extractor=extractor,
        filter=config.filter if config.filter is not None else MessageFilter(),
        reconcile=_reconcile(config.reconcile, extractor, store),
    )


def _reconcile(
    value: bool | ReconcileConfig | None, extractor: Extractor | None, store: object
) -> ReconcileConfig | None:
    capabilities = getattr(store, "capabilities", ())
    if value is None:
        # On by default only where it cannot fail: a model is at hand and the store retires.
        wanted = isinstance(extractor, ModelExtractor) and Capability.SUPERSEDE in capabilities
        return ReconcileConfig() if wanted else None
    if value is False:
        return None
    if extractor is None:
        raise InvalidArgumentError(
            f"store '{_name(store)}' extraction: reconcile needs an extractor (facts written "
            "with add); a store saving through add_messages reconciles by itself"
        )
    config = ReconcileConfig() if value is True else value
    if config.use_model and Capability.SUPERSEDE not in capabilities:
        raise InvalidArgumentError(
            f"store '{_name(store)}' extraction: reconciling with a model needs a store that "
            "supersedes memories (Capability.SUPERSEDE: SQLiteStore, PostgresStore); use "
            "ReconcileConfig(use_model=False, duplicate_threshold=...) or reconcile=False"
        )
    if config.duplicate_threshold is not None and Capability.SEMANTIC not in capabilities:
        raise InvalidArgumentError(
            f"store '{_name(store)}' extraction: ReconcileConfig.duplicate_threshold compares "
            "embeddings and needs a store with an embedder (Capability.SEMANTIC), such as "
            "SQLiteStore(..., embedder=LocalEmbedder())"
        )
    return config


def implements(store: object, method: str) -> bool:
    """Whether the store's class defines ``method`` itself (not a protocol's stub).

    Decided on the class, so a protocol class's placeholder inherited by a subclass (such as
    the Strands ``MemoryStore`` defaults that raise ``NotImplementedError``) does not count.
    """
    for owner in type(store).__mro__:
        if method in vars(owner):
            return callable(vars(owner)[method]) and not getattr(owner, "_is_protocol", False)
    return False


def _config_from_mapping(value: Mapping[Any, Any], store: object) -> ExtractionConfig:
    unknown = [key for key in value if key not in _CONFIG_KEYS]
    if unknown:
        raise InvalidArgumentError(
            f"store '{_name(store)}' extraction has unknown key(s) "
            f"{', '.join(map(repr, unknown))}; expected some of trigger, extractor, filter, "
            "reconcile"
        )
    return ExtractionConfig(**value)


def _as_sequence(trigger: object) -> Sequence[Any]:
    if trigger is None:
        return ()
    if isinstance(trigger, Sequence) and not isinstance(trigger, str):
        return trigger
    return (trigger,)


def _name(store: object) -> str:
    return str(getattr(store, "name", type(store).__name__))
