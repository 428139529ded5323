"""The store conformance suite: what every agentrecall store guarantees, as pytest tests.

Subclass :class:`StoreContract` in a test module of your backend and give it a ``make_store``
fixture; pytest then runs every contract test on your store::

    import pytest
    from agentrecall.testing.conformance import StoreContract

    class TestMyStore(StoreContract):
        persistent = True  # stores made with the same name share their memories

        @pytest.fixture
        def make_store(self, tmp_path):
            def make(name, **options):
                return MyStore(tmp_path / f"{name}.db", name=name, **options)
            return make

The suite needs pytest and pytest-asyncio; each async test carries an explicit
``pytest.mark.asyncio``, so it runs in pytest-asyncio's strict mode as well as in auto mode.
Importing this module imports pytest, which is why :mod:`agentrecall.testing` never does.

Every store must also close with ``aclose()`` and work as ``async with store:``; a closed
store refuses every later call with :class:`~agentrecall.errors.StoreClosedError` (closing
again is harmless). Tests beyond ``search``, ``add`` and closing run only on
stores declaring the matching :class:`~agentrecall.stores.base.Capability` in their
``capabilities`` attribute; the others are skipped with a reason naming the store and the
missing capability. The tests of each capability
are in their own section below and start with its name (``test_update_...``).

A store declaring ``Capability.SEMANTIC`` must be made with an embedder that puts "chair" near
"seat" (``HashEmbedder(synonyms=SYNONYMS)``, or a real model) and, since the rest of the suite
expects keyword ranking from a plain ``search``, with keyword search as its default mode; the
semantic tests name their modes.

No test depends on how fast the machine runs. The expiry tests move time with the ``clock``
fixture, a :class:`~agentrecall.testing.ManualClock` that every agentrecall store reads; a
store that reads another clock should override ``clock`` with a fixture that yields an object
with the same ``now``, ``advance`` and ``advance_past`` methods and moves its own clock.
"""

from __future__ import annotations

from agentrecall.testing._contract_base import TIMESTAMP, StoreFactory
from agentrecall.testing._contract_capabilities import CapabilityContract
from agentrecall.testing._contract_changes import ChangesContract
from agentrecall.testing._contract_closing import ClosingContract
from agentrecall.testing._contract_core import CoreContract
from agentrecall.testing._contract_import import ImportContract
from agentrecall.testing._contract_semantic import SYNONYMS, SemanticContract

__all__ = ["SYNONYMS", "TIMESTAMP", "StoreContract", "StoreFactory"]


class StoreContract(
    ClosingContract,
    ChangesContract,
    SemanticContract,
    ImportContract,
    CapabilityContract,
    CoreContract,
):
    """The whole contract; subclass it as ``Test<YourStore>`` and provide ``make_store``.

    Attributes:
        persistent: whether stores made with the same name share their memories, so that
            persistence across instances and read-only twins of a store can be tested.
    """
