"""The store contract for search by meaning (``Capability.SEMANTIC``): modes and their scores."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from agentrecall.stores.base import Capability
from agentrecall.testing._contract_base import (
    FILLER,
    ContractBase,
    add_all,
    contents_of,
    has,
    require,
    score,
)

SYNONYMS = {"chair": "seat", "couch": "sofa", "automobile": "car"}
"""Words a test embedder must count as the same: ``HashEmbedder(synonyms=SYNONYMS)``."""

SEAT = "the user's favourite seat is by the window"
MODES = ("keyword", "semantic", "hybrid")


class SemanticContract(ContractBase):
    """Semantic and hybrid search, for stores that declare ``Capability.SEMANTIC``.

    The store under test must embed with a model that puts "chair" near "seat" and "couch"
    near "sofa": a real sentence model, or ``HashEmbedder(synonyms=SYNONYMS)`` from
    :mod:`agentrecall.testing`. Every test names its mode, so the store's default mode may be
    any (the rest of the contract expects keyword ranking from a plain ``search``).
    """

    @pytest.mark.asyncio
    async def test_semantic_search_finds_a_paraphrase_keyword_search_cannot(
        self, store: Any
    ) -> None:
        """A question sharing no word with a memory finds it by meaning, not by keyword."""
        require(store, Capability.SEMANTIC)
        await add_all(store, [SEAT, *FILLER])
        question = "which chair is preferred?"
        assert await store.search(question, {"mode": "keyword"}) == []
        for mode in ("semantic", "hybrid"):
            hits = await store.search(question, {"mode": mode})
            assert contents_of(hits)[:1] == [SEAT], mode

    @pytest.mark.asyncio
    async def test_semantic_hits_are_ranked_and_scored(self, store: Any) -> None:
        """Hits come best first; hybrid hits carry both parts, ``None`` where one missed."""
        require(store, Capability.SEMANTIC)
        await add_all(store, [SEAT, "The window cleaner comes on Fridays", *FILLER])
        for mode in MODES:
            hits = await store.search("window seat", {"mode": mode})
            assert hits, mode
            scores = [score(hit) for hit in hits]
            assert scores == sorted(scores, reverse=True), mode
        hybrid = await store.search("window seat", {"mode": "hybrid"})
        assert hybrid[0].content == SEAT
        for hit in hybrid:
            parts = [hit.metadata["_keywordScore"], hit.metadata["_semanticScore"]]
            assert any(part is not None for part in parts)
            assert all(part is None or isinstance(part, float) for part in parts)
        assert 0.0 <= score(hybrid[-1]) <= score(hybrid[0]) <= 1.0

    @pytest.mark.asyncio
    async def test_semantic_every_mode_keeps_the_search_conditions(self, store: Any) -> None:
        """Scopes, filters, expiry, deletes and updates hold in every mode."""
        require(store, Capability.SEMANTIC)
        kept = await store.add("Ana's seat on the train is by the window", {"kind": "travel"})
        gone = await store.add("Ana's old seat at the opera", {"kind": "leisure"})
        await add_all(store, FILLER)
        if has(store, Capability.DELETE):
            await store.delete(gone.id)
        if has(store, Capability.EXPIRY):
            await store.add("A seat that has expired", expires_at=datetime.now(timezone.utc))
        for mode in MODES:
            found = contents_of(await store.search("seat", {"mode": mode}))
            assert "A seat that has expired" not in found, mode
            if has(store, Capability.DELETE):
                assert "Ana's old seat at the opera" not in found, mode
            if has(store, Capability.FILTER):
                hits = await store.search("seat", {"mode": mode}, filter={"kind": "travel"})
                assert [hit.id for hit in hits] == [kept.id], mode
        if has(store, Capability.SCOPE):
            other = store.scope(user_id="someone-else")
            await other.add("Their seat is in the last row")
            for mode in MODES:
                found = contents_of(await other.search("seat", {"mode": mode}))
                assert found == ["Their seat is in the last row"], mode

    @pytest.mark.asyncio
    async def test_semantic_an_update_is_found_by_its_new_meaning(self, store: Any) -> None:
        """After an update of content, search by meaning follows the new content."""
        require(store, Capability.SEMANTIC, Capability.UPDATE)
        memory = await store.add("Owns a red automobile")
        await add_all(store, FILLER)
        await store.update(memory.id, content="Owns a blue couch")
        hits = await store.search("sofa", {"mode": "semantic"})
        assert contents_of(hits)[:1] == ["Owns a blue couch"]

    @pytest.mark.asyncio
    async def test_semantic_an_unknown_mode_is_refused(self, store: Any) -> None:
        """A mode other than keyword, semantic or hybrid is a ``ValueError`` naming it."""
        require(store, Capability.SEMANTIC)
        with pytest.raises(ValueError, match="mode"):
            await store.search("seat", {"mode": "fuzzy"})
