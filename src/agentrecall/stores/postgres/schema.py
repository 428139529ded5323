"""The tables of ``PostgresStore``, as append-only migrations applied under an advisory lock.

Every store of one schema (one per ``name``) shares these tables; a store's rows carry its
number from ``stores``. Migration N brings the schema from version N to N + 1; a released
migration is never edited. ``{schema}`` in a migration is replaced by the quoted schema name.
The version is recorded in ``{schema}.migrations``; :func:`migrate` takes a transaction-level
advisory lock keyed by the schema's name first, so processes starting at once apply each
migration exactly once and the others wait for it, then find nothing to do.

The tables:

* ``stores (store, name)``: one row per store name.
* ``scopes (scope, store, user_id, agent_id, session_id)``: each exact scope of a store, once
  (scope ids are never empty strings, so ``coalesce(id, '')`` tells "none" apart).
* ``memories``: ``seq`` orders them (list order, ties in search); ``id`` is the public id,
  unique per store; ``(scope, content_hash)`` is unique, the dedup key: the 128-bit BLAKE2b
  digest of the stripped content (:func:`~agentrecall.stores.contentkeys.content_hash`), so
  concurrent adds of one content in one scope store it once, by ``ON CONFLICT``. ``terms`` is
  the content's terms as :func:`~agentrecall.retrieval.keywords.keyword_terms` reads them, with
  positions, under a GIN index; ``length`` is how many terms it has, for BM25.
* ``history``: the versions updates, deletes and expiry replaced.
* Ids and times are ``COLLATE "C"``: they sort by code point, as in SQLite and Python.
* ``vectors (seq, store, embedding real[])`` (migration 2): a memory's vector, deleted with
  it; see :mod:`~agentrecall.stores.postgres.vectors`.
* ``store_stats (store, shard, memories, terms)``: the count and total length of each store's
  memories, kept by statement triggers in 16 shards (a writer updates the shard of its
  connection's backend), so concurrent writers rarely wait for one another's counter row.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection, sql

MIGRATIONS: list[str] = [
    """
    CREATE TABLE {schema}.stores (
        store integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name text NOT NULL UNIQUE
    );
    CREATE TABLE {schema}.scopes (
        scope bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        store integer NOT NULL REFERENCES {schema}.stores,
        user_id text,
        agent_id text,
        session_id text
    );
    CREATE UNIQUE INDEX scopes_ids ON {schema}.scopes
        (store, coalesce(user_id, ''), coalesce(agent_id, ''), coalesce(session_id, ''));
    CREATE INDEX scopes_user ON {schema}.scopes (store, user_id) WHERE user_id IS NOT NULL;
    CREATE INDEX scopes_agent ON {schema}.scopes (store, agent_id) WHERE agent_id IS NOT NULL;
    CREATE INDEX scopes_session ON {schema}.scopes (store, session_id)
        WHERE session_id IS NOT NULL;
    CREATE TABLE {schema}.memories (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        store integer NOT NULL,
        id text COLLATE "C" NOT NULL,
        scope bigint NOT NULL,
        content text NOT NULL,
        content_hash bytea NOT NULL,
        metadata jsonb,
        created_at text COLLATE "C" NOT NULL,
        updated_at text COLLATE "C",
        expires_at text COLLATE "C",
        terms tsvector NOT NULL,
        length integer NOT NULL
    );
    CREATE UNIQUE INDEX memories_id ON {schema}.memories (store, id);
    CREATE UNIQUE INDEX memories_dedup ON {schema}.memories (scope, content_hash);
    CREATE INDEX memories_store ON {schema}.memories (store, seq);
    CREATE INDEX memories_created ON {schema}.memories (store, created_at);
    CREATE INDEX memories_expiry ON {schema}.memories (store, expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE INDEX memories_terms ON {schema}.memories USING gin (terms);
    CREATE INDEX memories_metadata ON {schema}.memories USING gin (metadata jsonb_path_ops);
    CREATE TABLE {schema}.history (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        store integer NOT NULL,
        id text COLLATE "C" NOT NULL,
        scope bigint NOT NULL,
        content text NOT NULL,
        metadata jsonb,
        changed_at text COLLATE "C" NOT NULL,
        change text NOT NULL,
        reason text
    );
    CREATE INDEX history_id ON {schema}.history (store, id, seq);
    CREATE TABLE {schema}.store_stats (
        store integer NOT NULL,
        shard integer NOT NULL,
        memories bigint NOT NULL,
        terms bigint NOT NULL,
        PRIMARY KEY (store, shard)
    );
    CREATE FUNCTION {schema}.count_memories() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            INSERT INTO {schema}.store_stats AS s (store, shard, memories, terms)
                SELECT store, pg_backend_pid() % 16, -count(*), -sum(length)
                FROM old_rows GROUP BY store
            ON CONFLICT (store, shard) DO UPDATE
                SET memories = s.memories + excluded.memories, terms = s.terms + excluded.terms;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            INSERT INTO {schema}.store_stats AS s (store, shard, memories, terms)
                SELECT store, pg_backend_pid() % 16, count(*), sum(length)
                FROM new_rows GROUP BY store
            ON CONFLICT (store, shard) DO UPDATE
                SET memories = s.memories + excluded.memories, terms = s.terms + excluded.terms;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_added AFTER INSERT ON {schema}.memories
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {schema}.count_memories();
    CREATE TRIGGER memories_changed AFTER UPDATE ON {schema}.memories
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {schema}.count_memories();
    CREATE TRIGGER memories_removed AFTER DELETE ON {schema}.memories
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {schema}.count_memories();
    """,
    # Vectors as plain arrays, so writes need no extension; search casts them to pgvector's
    # type, under an HNSW index per store and dimension made by the first store with an
    # embedder (stores/postgres/vectors.py). A store records the model of its vectors.
    """
    ALTER TABLE {schema}.stores ADD COLUMN model text, ADD COLUMN dimension integer;
    CREATE TABLE {schema}.vectors (
        seq bigint PRIMARY KEY REFERENCES {schema}.memories (seq) ON DELETE CASCADE,
        store integer NOT NULL,
        embedding real[] NOT NULL
    );
    """,
]


async def migrate(connection: AsyncConnection[Any], schema: str) -> int:
    """Bring ``schema`` to the newest version in one transaction; return how many migrations ran.

    Safe to call from many processes at once: an advisory lock keyed by the schema's name
    serialises them, and each migration runs once.
    """
    name = sql.Identifier(schema)
    async with connection.transaction():
        await lock_schema(connection, schema)
        await connection.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
        await connection.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {}.migrations "
                "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(name)
        )
        cursor = await connection.execute(
            sql.SQL("SELECT coalesce(max(version), 0) FROM {}.migrations").format(name)
        )
        row = await cursor.fetchone()
        version = int(row[0]) if row else 0
        for number in range(version, len(MIGRATIONS)):
            text = MIGRATIONS[number].replace("{schema}", name.as_string(connection))
            await connection.execute(text.encode())
            await connection.execute(
                sql.SQL("INSERT INTO {}.migrations (version) VALUES (%s)").format(name),
                [number + 1],
            )
        return len(MIGRATIONS) - version


async def lock_schema(connection: AsyncConnection[Any], schema: str) -> None:
    """Hold the schema's advisory lock until the current transaction ends."""
    await connection.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('agentrecall:' || %s, 0))", [schema]
    )
