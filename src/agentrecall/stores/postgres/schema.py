"""The tables of ``PostgresStore``, as append-only migrations applied under an advisory lock.

Every store of one schema (one per ``name``) shares these tables; a store's rows carry its
number from ``stores``. Migration N brings the schema from version N to N + 1; a released
migration is never edited. ``{schema}`` in a migration is replaced by the quoted schema name; a
migration that needs Python (terms computed as the store computes them) is an async function
given the connection and the quoted schema name.
The version is recorded in ``{schema}.migrations``; :func:`migrate` takes a transaction-level
advisory lock keyed by the schema's name first, so processes starting at once apply each
migration exactly once and the others wait for it, then find nothing to do.

The tables:

* ``stores (store, name)``: one row per store name.
* ``scopes (scope, store, user_id, agent_id, session_id)``: each exact scope of a store, once
  (scope ids are never empty strings, so ``coalesce(id, '')`` tells "none" apart).
* ``memories``: ``seq`` orders them (list order, ties in search); ``id`` is the public id,
  unique per store; ``(scope, content_hash)`` is unique among current memories, the dedup
  key: the 128-bit BLAKE2b digest of the stripped content
  (:func:`~agentrecall.stores.contentkeys.content_hash`), so concurrent adds of one content
  in one scope store it once, by ``ON CONFLICT``. ``terms`` is
  the content's terms as :func:`~agentrecall.retrieval.keywords.keyword_terms` reads them, with
  positions, under a GIN index; ``length`` is how many terms it has, for BM25.
* ``history``: the versions updates, deletes and expiry replaced.
* Ids and times are ``COLLATE "C"``: they sort by code point, as in SQLite and Python.
* ``vectors (seq, store, embedding real[])`` (migration 2): a memory's vector, deleted with
  it; see :mod:`~agentrecall.stores.postgres.vectors`.
* ``store_stats (store, shard, memories, terms)``: the count and total length of each store's
  memories, kept by statement triggers in 16 shards, so concurrent writers do not wait for
  one another's counter row. Since migration 3 a writing transaction takes a shard of its
  own (``write_shard()``: a try-lock per shard, held until it ends), so no two transactions
  ever update one counter row at once: no queue, no deadlock, whatever order they write in.
* ``term_stats (store, term, shard, memories)`` (migration 3): how many of a store's
  memories hold each term (its document frequency, for BM25), kept by the same triggers in
  the same shards; a term's count is the sum of its shards. Since migration 4 a bulk write
  counts its own terms (:mod:`~agentrecall.stores.postgres.termcounts`), and the trigger then
  counts only memories and lengths.
* ``add_memory(...)`` (migration 5): one durable add in one call, planned once per session,
  counting its own memory while ``agentrecall.counted_by_writer`` tells the trigger to count
  nothing (see :func:`agentrecall.stores.postgres.writes.add_alone`). Since migration 6 it
  also extends a held copy's expiry in its own transaction, and every function of the schema
  runs with ``search_path = pg_catalog, pg_temp``: the caller's search_path never decides
  which function or operator they call. They are ``SECURITY INVOKER``: a role that runs a
  store needs ``EXECUTE`` on them (PostgreSQL grants it to ``PUBLIC`` by default) and the
  same rights on the tables as the statements they run.
* Since migration 7 ``terms`` holds emoji and other pictographs too
  (:mod:`~agentrecall.stores.postgres.pictographs`).
* ``long_terms (content_hash, term, n)`` (migration 8): the term counts of long contents, by
  digest (:mod:`~agentrecall.stores.postgres.longterms`).
* Since migration 9 a memory has ``invalidated_at`` and ``superseded_by`` (set when a newer
  memory retires it; it stays in ``memories``) and ``valid_from``/``valid_until`` (world
  time); a version keeps those and the memory's ``created_at`` too. The dedup key covers
  current memories only (``WHERE invalidated_at IS NULL``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from psycopg import AsyncConnection, errors, sql

from agentrecall._internal.postgres_schema import lock_key
from agentrecall.errors import StorageError
from agentrecall.stores.postgres.longterms import long_term_counts
from agentrecall.stores.postgres.pictographs import pictograph_terms

Migration = str | Callable[[AsyncConnection[Any], str], Awaitable[None]]
"""SQL, or an async function of the connection and the quoted schema name."""

MIGRATIONS: list[Migration] = [
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
    # How many memories hold each term, for BM25, so a search reads a few rows instead of
    # counting posting lists. Kept by the same statement triggers as store_stats, in shards
    # that each belong to one writing transaction at a time (an advisory lock per shard,
    # taken with a try-lock at the transaction's first write): concurrent writers never
    # wait on one another's counter rows, so they can neither queue nor deadlock on them.
    # store_stats moves to the same shards. The counts of existing memories go into shard 0.
    # A smaller GIN pending list: every search scans all of it for each term (at the default
    # 4 MB that was 455 pages, 1.3 ms a term, after a bulk import); 256 kB measured the same
    # import speed and searches 1.5x as fast at 100,000 memories.
    """
    CREATE TABLE {schema}.term_stats (
        store integer NOT NULL,
        term text COLLATE "C" NOT NULL,
        shard integer NOT NULL,
        memories bigint NOT NULL,
        PRIMARY KEY (store, term, shard)
    );
    INSERT INTO {schema}.term_stats (store, term, shard, memories)
        SELECT m.store, t.term, 0, count(*)
        FROM {schema}.memories AS m
        CROSS JOIN LATERAL unnest(tsvector_to_array(m.terms)) AS t (term)
        GROUP BY m.store, t.term;
    ALTER INDEX {schema}.memories_terms SET (gin_pending_list_limit = 256);
    CREATE FUNCTION {schema}.write_shard() RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
        held text := current_setting('agentrecall.write_shard', true);
        first integer := pg_backend_pid() % 16;
    BEGIN
        IF held IS NOT NULL AND held <> '' THEN
            RETURN held::integer;
        END IF;
        -- The lowest free shard: a term has as many rows as writers ever wrote it at once.
        FOR candidate IN 0..15 LOOP
            IF pg_try_advisory_xact_lock(hashtext('agentrecall:write_shard'), candidate) THEN
                PERFORM set_config('agentrecall.write_shard', candidate::text, true);
                RETURN candidate;
            END IF;
        END LOOP;
        -- More than 16 writing transactions at once: wait for this backend's own shard.
        PERFORM pg_advisory_xact_lock(hashtext('agentrecall:write_shard'), first);
        PERFORM set_config('agentrecall.write_shard', first::text, true);
        RETURN first;
    END $$;
    CREATE FUNCTION {schema}.count_changes(integer, integer[], integer[], tsvector[], integer[])
        RETURNS void LANGUAGE sql AS $$
        WITH changes AS (
            SELECT * FROM unnest($2, $3, $4, $5) AS c (store, sign, terms, length)
        ),
        counted AS (
            INSERT INTO {schema}.store_stats AS s (store, shard, memories, terms)
            SELECT store, $1, sum(sign), sum(sign * length) FROM changes GROUP BY store
            HAVING sum(sign) <> 0 OR sum(sign * length) <> 0
            ON CONFLICT (store, shard) DO UPDATE
            SET memories = s.memories + excluded.memories, terms = s.terms + excluded.terms
        )
        INSERT INTO {schema}.term_stats AS s (store, term, shard, memories)
        SELECT c.store, t.term COLLATE "C", $1, sum(c.sign)
        FROM changes AS c CROSS JOIN LATERAL unnest(tsvector_to_array(c.terms)) AS t (term)
        GROUP BY 1, 2 HAVING sum(c.sign) <> 0 ORDER BY 1, 2
        ON CONFLICT (store, term, shard) DO UPDATE SET memories = s.memories + excluded.memories
    $$;
    CREATE OR REPLACE FUNCTION {schema}.count_memories() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        chosen integer := {schema}.write_shard();
    BEGIN
        -- An operation's statement may name only the transition tables it has.
        IF TG_OP = 'INSERT' THEN
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(1),
                array_agg(terms), array_agg(length)) FROM new_rows;
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(-1),
                array_agg(terms), array_agg(length)) FROM old_rows;
        ELSE
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(sign),
                array_agg(terms), array_agg(length)) FROM (
                SELECT store, 1 AS sign, terms, length FROM new_rows
                UNION ALL SELECT store, -1, terms, length FROM old_rows
            ) AS c;
        END IF;
        RETURN NULL;
    END $$;
    """,
    # A bulk write may count its new memories' terms itself, once for the whole write
    # (stores/postgres/termcounts.py): while its transaction sets agentrecall.terms_by_writer,
    # an insert's trigger counts only the memories and their lengths. Unnesting every row's
    # terms and upserting them per chunk was half of the server's work of an import.
    """
    CREATE OR REPLACE FUNCTION {schema}.count_memories() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        chosen integer := {schema}.write_shard();
        by_writer boolean := current_setting('agentrecall.terms_by_writer', true) = 'on';
    BEGIN
        -- An operation's statement may name only the transition tables it has.
        IF TG_OP = 'INSERT' AND by_writer THEN
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(1),
                array_agg(NULL::tsvector), array_agg(length)) FROM new_rows;
        ELSIF TG_OP = 'INSERT' THEN
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(1),
                array_agg(terms), array_agg(length)) FROM new_rows;
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(-1),
                array_agg(terms), array_agg(length)) FROM old_rows;
        ELSE
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(sign),
                array_agg(terms), array_agg(length)) FROM (
                SELECT store, 1 AS sign, terms, length FROM new_rows
                UNION ALL SELECT store, -1, terms, length FROM old_rows
            ) AS c;
        END IF;
        RETURN NULL;
    END $$;
    """,
    # One durable add in one call of a function whose statements the server plans once per
    # session: parsing and planning the client's one-statement add (the purge, the insert and
    # the read of a held copy, in CTEs) took a third of the server's CPU of an add. It adds
    # nothing while the store holds an expired memory (the client's statement then purges it
    # first, stores/postgres/writes.py) and returns only a holder that is live at the add's
    # time; NULL otherwise, and the client runs its full statement. It counts its memory
    # itself, in its transaction's shard, while agentrecall.counted_by_writer tells the
    # statement trigger to count nothing: the trigger's generic counting (arrays of the
    # transition table, a SQL function, grouping and sorting the terms) took another fifth.
    """
    CREATE OR REPLACE FUNCTION {schema}.count_memories() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        chosen integer;
        by_writer boolean := current_setting('agentrecall.terms_by_writer', true) = 'on';
    BEGIN
        IF current_setting('agentrecall.counted_by_writer', true) = 'on' THEN
            RETURN NULL;
        END IF;
        chosen := {schema}.write_shard();
        -- An operation's statement may name only the transition tables it has.
        IF TG_OP = 'INSERT' AND by_writer THEN
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(1),
                array_agg(NULL::tsvector), array_agg(length)) FROM new_rows;
        ELSIF TG_OP = 'INSERT' THEN
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(1),
                array_agg(terms), array_agg(length)) FROM new_rows;
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(-1),
                array_agg(terms), array_agg(length)) FROM old_rows;
        ELSE
            PERFORM {schema}.count_changes(chosen, array_agg(store), array_agg(sign),
                array_agg(terms), array_agg(length)) FROM (
                SELECT store, 1 AS sign, terms, length FROM new_rows
                UNION ALL SELECT store, -1, terms, length FROM old_rows
            ) AS c;
        END IF;
        RETURN NULL;
    END $$;
    CREATE FUNCTION {schema}.add_memory(
        a_store integer, a_scope bigint, a_id text, a_content text, a_hash bytea,
        a_metadata jsonb, a_created text, a_updated text, a_expires text, a_terms tsvector,
        a_length integer, a_now text
    ) RETURNS text LANGUAGE plpgsql
    -- A custom plan per call otherwise (planning took a sixth of the add): the generic plans
    -- of these statements are estimated dearer, yet each reads a few index entries, by
    -- plans that need no statistics, as a store not yet analyzed has.
    SET plan_cache_mode = force_generic_plan AS $$
    DECLARE
        held text;
        chosen integer;
        lexemes text[];
        known text[];
    BEGIN
        -- The earliest expiry, one entry of the expiry index whatever the planner knows:
        -- a generic plan of "expires_at <= now" may scan the table once the index is large.
        IF (
            SELECT min(m.expires_at) FROM {schema}.memories AS m
            WHERE m.store = a_store AND m.expires_at IS NOT NULL
        ) <= a_now THEN
            RETURN NULL;
        END IF;
        PERFORM set_config('agentrecall.counted_by_writer', 'on', true);
        INSERT INTO {schema}.memories AS m (store, scope, id, content, content_hash, metadata,
            created_at, updated_at, expires_at, terms, length)
        VALUES (a_store, a_scope, a_id, a_content, a_hash, a_metadata, a_created, a_updated,
            a_expires, a_terms, a_length)
        ON CONFLICT (scope, content_hash) DO NOTHING RETURNING m.id INTO held;
        PERFORM set_config('agentrecall.counted_by_writer', 'off', true);
        IF held IS NULL THEN
            SELECT m.id INTO held FROM {schema}.memories AS m
            WHERE m.scope = a_scope AND m.content_hash = a_hash
            AND (m.expires_at IS NULL OR m.expires_at > a_now);
            RETURN held;
        END IF;
        chosen := {schema}.write_shard();
        -- No other transaction writes the shard's rows meanwhile (write_shard), so an update
        -- then an insert of the rows it did not find is exact, and cheaper than an upsert,
        -- which locks each row it finds (a WAL record each) before updating it.
        UPDATE {schema}.store_stats AS s
        SET memories = s.memories + 1, terms = s.terms + a_length
        WHERE s.store = a_store AND s.shard = chosen;
        IF NOT FOUND THEN
            INSERT INTO {schema}.store_stats (store, shard, memories, terms)
            VALUES (a_store, chosen, 1, a_length);
        END IF;
        lexemes := tsvector_to_array(a_terms);  -- distinct, in byte order
        WITH counted AS (
            UPDATE {schema}.term_stats AS s SET memories = s.memories + 1
            WHERE s.store = a_store AND s.term = ANY (lexemes) AND s.shard = chosen
            RETURNING s.term
        )
        SELECT coalesce(array_agg(term), '{}') INTO known FROM counted;
        IF cardinality(known) < cardinality(lexemes) THEN
            -- Filtered by the array, not by a join with term_stats, whose generic plan could
            -- read every row of the shard while the table has no statistics.
            INSERT INTO {schema}.term_stats (store, term, shard, memories)
            SELECT a_store, t.term, chosen, 1 FROM unnest(lexemes) AS t (term)
            WHERE t.term <> ALL (known);
        END IF;
        RETURN held;
    END $$;
    """,
    # The functions resolve every name in pg_catalog whatever the caller's search_path (their
    # own tables are qualified): a schema put before pg_catalog could otherwise shadow a
    # function or operator they call. And add_memory extends a held copy's expiry itself, in
    # its own transaction: the client's later update could find the copy expired, and purged
    # by then, so the add was lost with it. NULL when the copy went meanwhile: the client's
    # full statement runs.
    """
    ALTER FUNCTION {schema}.write_shard() SET search_path = pg_catalog, pg_temp;
    ALTER FUNCTION {schema}.count_changes(integer, integer[], integer[], tsvector[], integer[])
        SET search_path = pg_catalog, pg_temp;
    ALTER FUNCTION {schema}.count_memories() SET search_path = pg_catalog, pg_temp;
    CREATE OR REPLACE FUNCTION {schema}.add_memory(
        a_store integer, a_scope bigint, a_id text, a_content text, a_hash bytea,
        a_metadata jsonb, a_created text, a_updated text, a_expires text, a_terms tsvector,
        a_length integer, a_now text
    ) RETURNS text LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan SET search_path = pg_catalog, pg_temp AS $$
    DECLARE
        held text;
        until text;
        chosen integer;
        lexemes text[];
        known text[];
    BEGIN
        IF (
            SELECT min(m.expires_at) FROM {schema}.memories AS m
            WHERE m.store = a_store AND m.expires_at IS NOT NULL
        ) <= a_now THEN
            RETURN NULL;
        END IF;
        PERFORM set_config('agentrecall.counted_by_writer', 'on', true);
        INSERT INTO {schema}.memories AS m (store, scope, id, content, content_hash, metadata,
            created_at, updated_at, expires_at, terms, length)
        VALUES (a_store, a_scope, a_id, a_content, a_hash, a_metadata, a_created, a_updated,
            a_expires, a_terms, a_length)
        ON CONFLICT (scope, content_hash) DO NOTHING RETURNING m.id INTO held;
        PERFORM set_config('agentrecall.counted_by_writer', 'off', true);
        IF held IS NULL THEN
            SELECT m.id, m.expires_at INTO held, until FROM {schema}.memories AS m
            WHERE m.scope = a_scope AND m.content_hash = a_hash
            AND (m.expires_at IS NULL OR m.expires_at > a_now);
            IF until IS NULL OR (a_expires IS NOT NULL AND a_expires <= until COLLATE "C") THEN
                RETURN held;  -- none, or it lives long enough: nothing to write
            END IF;
            -- The update reads the row's newest version (a concurrent add's extension, or
            -- its delete), and it changes no count, so the trigger counts nothing.
            PERFORM set_config('agentrecall.counted_by_writer', 'on', true);
            UPDATE {schema}.memories AS m
            SET expires_at = CASE WHEN m.expires_at IS NULL OR a_expires IS NULL THEN NULL
                ELSE greatest(m.expires_at, a_expires) END
            WHERE m.store = a_store AND m.id = held
            AND (m.expires_at IS NULL OR m.expires_at > a_now)
            RETURNING m.id INTO held;
            PERFORM set_config('agentrecall.counted_by_writer', 'off', true);
            RETURN held;
        END IF;
        chosen := {schema}.write_shard();
        UPDATE {schema}.store_stats AS s
        SET memories = s.memories + 1, terms = s.terms + a_length
        WHERE s.store = a_store AND s.shard = chosen;
        IF NOT FOUND THEN
            INSERT INTO {schema}.store_stats (store, shard, memories, terms)
            VALUES (a_store, chosen, 1, a_length);
        END IF;
        lexemes := tsvector_to_array(a_terms);
        WITH counted AS (
            UPDATE {schema}.term_stats AS s SET memories = s.memories + 1
            WHERE s.store = a_store AND s.term = ANY (lexemes) AND s.shard = chosen
            RETURNING s.term
        )
        SELECT coalesce(array_agg(term), '{}') INTO known FROM counted;
        IF cardinality(known) < cardinality(lexemes) THEN
            INSERT INTO {schema}.term_stats (store, term, shard, memories)
            SELECT a_store, t.term, chosen, 1 FROM unnest(lexemes) AS t (term)
            WHERE t.term <> ALL (known);
        END IF;
        RETURN held;
    END $$;
    """,
    # Emoji and other pictographs (``🍣``, ``★``) are terms: the memories holding one get
    # their terms and length again (stores/postgres/pictographs.py).
    pictograph_terms,
    # The term counts of long contents, kept so that ranking a long memory reads a few counts
    # instead of counting its text at every search (stores/postgres/longterms.py).
    long_term_counts,
    # Facts that change: a memory retired by a newer one (supersede) stays, with when and by
    # which; world time (valid_from, valid_until); each version keeps the row's new fields and
    # its created_at (filled from the memory where it still exists, for as_of reads). Dedup
    # is among current memories only, so the content of a retired memory may come back as a
    # new one: the key becomes partial, and add_memory names its predicate (and reads only a
    # current holder). The chain is followed by superseded_by both ways; as_of reads the
    # versions changed after a moment. Written to run again over its own columns (IF NOT
    # EXISTS), as a schema rebuilt by hand from an older release's tables may hold them.
    """
    ALTER TABLE {schema}.memories ADD COLUMN IF NOT EXISTS invalidated_at text COLLATE "C",
        ADD COLUMN IF NOT EXISTS superseded_by text COLLATE "C",
        ADD COLUMN IF NOT EXISTS valid_from text COLLATE "C",
        ADD COLUMN IF NOT EXISTS valid_until text COLLATE "C";
    ALTER TABLE {schema}.history ADD COLUMN IF NOT EXISTS created_at text COLLATE "C",
        ADD COLUMN IF NOT EXISTS invalidated_at text COLLATE "C",
        ADD COLUMN IF NOT EXISTS superseded_by text COLLATE "C",
        ADD COLUMN IF NOT EXISTS valid_from text COLLATE "C",
        ADD COLUMN IF NOT EXISTS valid_until text COLLATE "C";
    UPDATE {schema}.history AS h SET created_at = m.created_at FROM {schema}.memories AS m
        WHERE m.store = h.store AND m.id = h.id AND h.created_at IS NULL;
    DROP INDEX IF EXISTS {schema}.memories_dedup;
    CREATE UNIQUE INDEX memories_dedup ON {schema}.memories (scope, content_hash)
        WHERE invalidated_at IS NULL;
    CREATE INDEX IF NOT EXISTS memories_successor ON {schema}.memories (store, superseded_by)
        WHERE superseded_by IS NOT NULL;
    CREATE INDEX IF NOT EXISTS history_successor ON {schema}.history (store, superseded_by)
        WHERE superseded_by IS NOT NULL;
    CREATE INDEX IF NOT EXISTS history_changed ON {schema}.history (store, changed_at)
        WHERE change <> 'supersede';
    CREATE OR REPLACE FUNCTION {schema}.add_memory(
        a_store integer, a_scope bigint, a_id text, a_content text, a_hash bytea,
        a_metadata jsonb, a_created text, a_updated text, a_expires text, a_terms tsvector,
        a_length integer, a_now text
    ) RETURNS text LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan SET search_path = pg_catalog, pg_temp AS $$
    DECLARE
        held text;
        until text;
        chosen integer;
        lexemes text[];
        known text[];
    BEGIN
        IF (
            SELECT min(m.expires_at) FROM {schema}.memories AS m
            WHERE m.store = a_store AND m.expires_at IS NOT NULL
        ) <= a_now THEN
            RETURN NULL;
        END IF;
        PERFORM set_config('agentrecall.counted_by_writer', 'on', true);
        INSERT INTO {schema}.memories AS m (store, scope, id, content, content_hash, metadata,
            created_at, updated_at, expires_at, terms, length)
        VALUES (a_store, a_scope, a_id, a_content, a_hash, a_metadata, a_created, a_updated,
            a_expires, a_terms, a_length)
        ON CONFLICT (scope, content_hash) WHERE invalidated_at IS NULL DO NOTHING
        RETURNING m.id INTO held;
        PERFORM set_config('agentrecall.counted_by_writer', 'off', true);
        IF held IS NULL THEN
            SELECT m.id, m.expires_at INTO held, until FROM {schema}.memories AS m
            WHERE m.scope = a_scope AND m.content_hash = a_hash AND m.invalidated_at IS NULL
            AND (m.expires_at IS NULL OR m.expires_at > a_now);
            IF until IS NULL OR (a_expires IS NOT NULL AND a_expires <= until COLLATE "C") THEN
                RETURN held;
            END IF;
            PERFORM set_config('agentrecall.counted_by_writer', 'on', true);
            UPDATE {schema}.memories AS m
            SET expires_at = CASE WHEN m.expires_at IS NULL OR a_expires IS NULL THEN NULL
                ELSE greatest(m.expires_at, a_expires) END
            WHERE m.store = a_store AND m.id = held
            AND (m.expires_at IS NULL OR m.expires_at > a_now)
            RETURNING m.id INTO held;
            PERFORM set_config('agentrecall.counted_by_writer', 'off', true);
            RETURN held;
        END IF;
        chosen := {schema}.write_shard();
        UPDATE {schema}.store_stats AS s
        SET memories = s.memories + 1, terms = s.terms + a_length
        WHERE s.store = a_store AND s.shard = chosen;
        IF NOT FOUND THEN
            INSERT INTO {schema}.store_stats (store, shard, memories, terms)
            VALUES (a_store, chosen, 1, a_length);
        END IF;
        lexemes := tsvector_to_array(a_terms);
        WITH counted AS (
            UPDATE {schema}.term_stats AS s SET memories = s.memories + 1
            WHERE s.store = a_store AND s.term = ANY (lexemes) AND s.shard = chosen
            RETURNING s.term
        )
        SELECT coalesce(array_agg(term), '{}') INTO known FROM counted;
        IF cardinality(known) < cardinality(lexemes) THEN
            INSERT INTO {schema}.term_stats (store, term, shard, memories)
            SELECT a_store, t.term, chosen, 1 FROM unnest(lexemes) AS t (term)
            WHERE t.term <> ALL (known);
        END IF;
        RETURN held;
    END $$;
    """,
]


async def migrate(connection: AsyncConnection[Any], schema: str, what: str) -> int:
    """Bring ``schema`` to the newest version in one transaction; return how many migrations ran.

    Safe to call from many processes at once: an advisory lock keyed by the schema's name
    serialises them, and each migration runs once. It also holds the lock under which the
    other components of agentrecall create their tables in a schema
    (:func:`agentrecall._internal.postgres_schema.lock_key`), so a ``BufferMemory`` creating
    its table in this schema at the same moment waits rather than fails.

    A schema already at the newest version is only read, so a role with no right to create
    anything (an application's role, with the rights on the tables that its statements need,
    after an administrator's role ran :meth:`~agentrecall.PostgresStore.setup`) opens it.

    Raises:
        StorageError: a newer agentrecall migrated the schema (``what`` names the store), or
            the schema already holds a table of one of the store's names.
    """
    name = sql.Identifier(schema)
    async with connection.transaction():
        current = await stored_version(connection, schema)
        if current is not None and current >= len(MIGRATIONS):
            check_version(current, schema, what, writable=True)
            return 0
        await lock_schema(connection, schema)
        # The lock every other component of agentrecall (a BufferMemory's table) takes to
        # migrate in this schema: CREATE SCHEMA IF NOT EXISTS of two transactions at once
        # fails one of them on pg_namespace's unique key. Taken second, so no cycle forms.
        await connection.execute("SELECT pg_advisory_xact_lock(%s)", [lock_key(schema)])
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
        check_version(version, schema, what, writable=True)
        for number in range(version, len(MIGRATIONS)):
            migration = MIGRATIONS[number]
            quoted = name.as_string(connection)
            try:
                if isinstance(migration, str):
                    await connection.execute(migration.replace("{schema}", quoted).encode())
                else:
                    await migration(connection, quoted)
            except errors.DuplicateTable as error:
                # A buffer's table= (BufferMemory(dsn=...) defaults to this schema too), or
                # another program's table, took one of the store's names.
                raise StorageError(
                    f"{what}: schema '{schema}' already holds a table or index named as one "
                    f"of PostgresStore's ({error}); give the store another schema=, or move "
                    "that table"
                ) from error
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


async def stored_version(connection: AsyncConnection[Any], schema: str) -> int | None:
    """Return the version ``schema`` was migrated to, ``None`` when it holds no store tables."""
    name = sql.Identifier(schema)
    cursor = await connection.execute(
        "SELECT to_regclass(%s) IS NOT NULL", [f"{name.as_string(None)}.migrations"]
    )
    row = await cursor.fetchone()
    if not (row and row[0]):
        return None
    cursor = await connection.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {}.migrations").format(name)
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


def check_version(version: int, schema: str, what: str, *, writable: bool) -> None:
    """Refuse a schema this agentrecall cannot serve, as ``SQLiteStore`` refuses such a file.

    A newer agentrecall's schema may hold what this one would not keep up (its migrations
    are unknown here), so it is refused for reads and writes. An older one lacks tables that
    reads need; a writable store migrates it first, a read-only one never writes.

    Raises:
        StorageError: naming ``what`` (the store and its server), the schema and both versions.
    """
    latest = len(MIGRATIONS)
    if version > latest:
        raise StorageError(
            f"{what}: schema '{schema}' is at version {version}, newer than this agentrecall "
            f"knows ({latest}); upgrade agentrecall to open it"
        )
    if not writable and version < latest:
        raise StorageError(
            f"{what}: schema '{schema}' is at version {version}, older than this "
            f"agentrecall's ({latest}), and the store is read-only; open it once with "
            "writable=True (any write, or setup()) to upgrade it"
        )
