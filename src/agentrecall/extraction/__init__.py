"""Automatic memory extraction: the conversation turned into memories in the background.

A store opts in through its ``extraction`` attribute (``True``, an :class:`ExtractionConfig`,
or the reference's dict form). :func:`resolve_extraction` fills in the defaults and an
:class:`ExtractionCoordinator` runs the saves; with a model, extracted facts are reconciled
with the memories already stored first (:class:`ReconcileConfig`). Importing this package
needs the standard library only.
"""

from agentrecall.extraction.config import (
    ExtractionConfig,
    ResolvedExtraction,
    implements,
    resolve_extraction,
)
from agentrecall.extraction.coordinator import ExtractionCoordinator
from agentrecall.extraction.filter import MessageFilter
from agentrecall.extraction.model_extractor import ModelExtractor
from agentrecall.extraction.reconcile import ReconcileConfig
from agentrecall.extraction.triggers import ExtractionTrigger, IntervalTrigger, InvocationTrigger
from agentrecall.extraction.types import (
    AddMessagesContext,
    ExtractionResult,
    Extractor,
    ExtractorContext,
)

__all__ = [
    "AddMessagesContext",
    "ExtractionConfig",
    "ExtractionCoordinator",
    "ExtractionResult",
    "ExtractionTrigger",
    "Extractor",
    "ExtractorContext",
    "IntervalTrigger",
    "InvocationTrigger",
    "MessageFilter",
    "ModelExtractor",
    "ReconcileConfig",
    "ResolvedExtraction",
    "implements",
    "resolve_extraction",
]
