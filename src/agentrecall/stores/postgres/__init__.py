"""``PostgresStore``: memories in PostgreSQL (see :mod:`agentrecall.stores.postgres.store`).

Needs the ``postgres`` extra; importing this package without it raises an ``ImportError``
naming ``pip install 'agentrecall[postgres]'``.
"""

from agentrecall._internal.postgres import load_psycopg

load_psycopg()

from agentrecall.stores.postgres.store import PostgresStore  # noqa: E402

__all__ = ["PostgresStore"]
