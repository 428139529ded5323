"""The tables of ``SQLiteStore``, as append-only migrations (component ``"store"``).

Migration N brings the store's tables from version N to N + 1; a released migration is never
edited. Migrations may call ``agentrecall_content_hash(text)`` and
``agentrecall_content_key(text)``, which the store registers on its connection
(:func:`~agentrecall.stores.contentkeys.content_hash` and ``content_key``). ``memories.seq`` is
the row id the full-text index points at; ``id`` is the public id. From migration 2 on, the
store itself inserts the index rows. From migration 5 on, a memory's ``scope`` is the number of
its row in ``memory_scopes`` (0 for memories written outside any scope). From migration 6 on,
a memory is either in the full-text index or listed in ``memories_unindexed``, never both.
From migration 7 on, a memory's ``content_hash`` is its integer content key, or its 128-bit
digest when another content of its scope holds that key (:mod:`agentrecall.stores.sqlite.dedup`).
From migration 8 on, ``memory_tags`` holds the metadata values of exactly the memories in the
full-text index.
From migration 9 on, a memory may have a vector in ``memory_vectors`` (see
:mod:`agentrecall.stores.sqlite.vector_sql`), which goes with it when it is deleted or its content
changes. From migration 10 on, the index stems words and reads CJK runs as pairs
(:mod:`agentrecall.stores.sqlite.stemming`). From migration 11 on, it reads accented and
compatibility text by its folded words, as the ranking does (:mod:`.folding`). From migration
12 on, it reads emoji and other pictographs as words (:mod:`.pictographs`). From migration 13 on,
``memory_term_counts`` holds the term counts of long memories (:mod:`.longterms`), which
migrations may compute with ``agentrecall_term_counts(text)``. From migration 14 on, a memory
retired by ``supersede`` stays in ``memories`` with ``invalidated_at`` and ``superseded_by`` set
(and in both indexes), dedup holds among current memories only, and every history row records
the memory's whole row as it was (:mod:`.superseding`, :mod:`.moments`).
"""

from __future__ import annotations

from agentrecall._internal.sqlite import Migration
from agentrecall.stores.sqlite.folding import folded_index
from agentrecall.stores.sqlite.longterms import long_term_counts
from agentrecall.stores.sqlite.pictographs import pictograph_index
from agentrecall.stores.sqlite.stemming import stemmed_index

COMPONENT = "store"

MIGRATIONS: list[Migration] = [
    """
    CREATE TABLE memories (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        session_id TEXT,
        content TEXT NOT NULL,
        content_key TEXT NOT NULL,
        metadata TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT,
        expires_at TEXT
    );
    CREATE UNIQUE INDEX memories_dedup ON memories (scope, content_key);
    CREATE INDEX memories_user ON memories (user_id, agent_id, session_id);
    CREATE INDEX memories_agent ON memories (agent_id, session_id);
    CREATE INDEX memories_session ON memories (session_id);
    CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE memory_history (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        session_id TEXT,
        content TEXT NOT NULL,
        metadata TEXT,
        changed_at TEXT NOT NULL,
        change TEXT NOT NULL,
        reason TEXT
    );
    CREATE INDEX memory_history_id ON memory_history (id, seq);
    CREATE TABLE memory_stats (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT INTO memory_stats (key, value) VALUES ('rows', 0);
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content, content='memories', content_rowid='seq',
        tokenize='unicode61 remove_diacritics 2'
    );
    CREATE VIRTUAL TABLE memories_vocab USING fts5vocab (memories_fts, 'row');
    CREATE TRIGGER memories_added AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
        UPDATE memory_stats SET value = value + 1 WHERE key = 'rows';
    END;
    CREATE TRIGGER memories_removed AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content)
            VALUES ('delete', old.seq, old.content);
        UPDATE memory_stats SET value = value - 1 WHERE key = 'rows';
    END;
    CREATE TRIGGER memories_rewritten AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content)
            VALUES ('delete', old.seq, old.content);
        INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
    END;
    """,
    # Feeding the index through an AFTER INSERT trigger made bulk adds 3-4 times slower than
    # inserting the index rows in the same transaction (benchmarks/results/keyword-engines.md).
    """
    DROP TRIGGER memories_added;
    """,
    # Dedup on a 16-byte digest of the stripped content instead of a second copy of the text
    # (half the file, faster inserts); scope indexes only hold rows that have that id, so
    # unscoped memories cost them nothing; the unused vocabulary table goes.
    """
    ALTER TABLE memories ADD COLUMN content_hash BLOB;
    UPDATE memories SET content_hash = agentrecall_content_hash(content);
    DROP INDEX memories_dedup;
    DROP INDEX memories_user;
    DROP INDEX memories_agent;
    DROP INDEX memories_session;
    ALTER TABLE memories DROP COLUMN content_key;
    CREATE UNIQUE INDEX memories_dedup ON memories (scope, content_hash);
    CREATE INDEX memories_user ON memories (user_id, agent_id, session_id)
        WHERE user_id IS NOT NULL;
    CREATE INDEX memories_agent ON memories (agent_id, session_id) WHERE agent_id IS NOT NULL;
    CREATE INDEX memories_session ON memories (session_id) WHERE session_id IS NOT NULL;
    DROP TABLE memories_vocab;
    """,
    # Search reads the number of memories from the full-text index's own averages record, so
    # the row counter kept beside it is dropped, and deletes stop updating it.
    """
    DROP TRIGGER memories_removed;
    CREATE TRIGGER memories_removed AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content)
            VALUES ('delete', old.seq, old.content);
    END;
    DROP TABLE memory_stats;
    """,
    # Scopes move to their own small table and memories point at them by number: the dedup index
    # shrinks from about 40 to about 24 bytes an entry and the three partial scope indexes go,
    # which made bulk imports about 15% faster at a million memories; a scoped read selects
    # ``scope IN (...)``, served by the dedup index. The full-text index also indexes each
    # memory's scope number, so a scoped search narrows its postings inside the index instead
    # of looking up every posting's memory; it drops its per-row token counts
    # (``columnsize=0``), which search never reads: BM25 is recomputed from the text. It merges
    # its segments 8 at a time instead of 4: bulk imports 12% faster at a million memories,
    # searches as fast.
    """
    CREATE TABLE memory_scopes (
        scope INTEGER PRIMARY KEY,
        user_id TEXT,
        agent_id TEXT,
        session_id TEXT
    );
    CREATE UNIQUE INDEX memory_scopes_ids ON memory_scopes
        (coalesce(user_id, ''), coalesce(agent_id, ''), coalesce(session_id, ''));
    CREATE INDEX memory_scopes_user ON memory_scopes (user_id, agent_id, session_id)
        WHERE user_id IS NOT NULL;
    CREATE INDEX memory_scopes_agent ON memory_scopes (agent_id, session_id)
        WHERE agent_id IS NOT NULL;
    CREATE INDEX memory_scopes_session ON memory_scopes (session_id) WHERE session_id IS NOT NULL;
    INSERT INTO memory_scopes (scope) VALUES (0);
    INSERT OR IGNORE INTO memory_scopes (user_id, agent_id, session_id)
        SELECT user_id, agent_id, session_id FROM memories
        UNION SELECT user_id, agent_id, session_id FROM memory_history;
    CREATE TABLE memories_v5 (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope INTEGER NOT NULL,
        content TEXT NOT NULL,
        content_hash BLOB NOT NULL,
        metadata TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT,
        expires_at TEXT
    );
    INSERT INTO memories_v5
        SELECT m.seq, m.id, s.scope, m.content, m.content_hash, m.metadata, m.created_at,
            m.updated_at, m.expires_at
        FROM memories AS m JOIN memory_scopes AS s
            ON coalesce(s.user_id, '') = coalesce(m.user_id, '')
            AND coalesce(s.agent_id, '') = coalesce(m.agent_id, '')
            AND coalesce(s.session_id, '') = coalesce(m.session_id, '');
    CREATE TABLE memory_history_v5 (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        scope INTEGER NOT NULL,
        content TEXT NOT NULL,
        metadata TEXT,
        changed_at TEXT NOT NULL,
        change TEXT NOT NULL,
        reason TEXT
    );
    INSERT INTO memory_history_v5
        SELECT h.seq, h.id, s.scope, h.content, h.metadata, h.changed_at, h.change, h.reason
        FROM memory_history AS h JOIN memory_scopes AS s
            ON coalesce(s.user_id, '') = coalesce(h.user_id, '')
            AND coalesce(s.agent_id, '') = coalesce(h.agent_id, '')
            AND coalesce(s.session_id, '') = coalesce(h.session_id, '');
    DROP TRIGGER memories_removed;
    DROP TRIGGER memories_rewritten;
    DROP TABLE memories_fts;
    DROP TABLE memories;
    DROP TABLE memory_history;
    ALTER TABLE memories_v5 RENAME TO memories;
    ALTER TABLE memory_history_v5 RENAME TO memory_history;
    CREATE UNIQUE INDEX memories_dedup ON memories (scope, content_hash);
    CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
    CREATE INDEX memory_history_id ON memory_history (id, seq);
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content, scope, content='memories', content_rowid='seq',
        tokenize='unicode61 remove_diacritics 2', columnsize=0
    );
    INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
    INSERT INTO memories_fts (memories_fts, rank) VALUES ('automerge', 8);
    CREATE TRIGGER memories_removed AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, scope)
            VALUES ('delete', old.seq, old.content, old.scope);
    END;
    CREATE TRIGGER memories_rewritten AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, scope)
            VALUES ('delete', old.seq, old.content, old.scope);
        INSERT INTO memories_fts (rowid, content, scope) VALUES (new.seq, new.content, new.scope);
    END;
    """,
    # A single add no longer indexes its memory in its own transaction: that made each durable
    # add write and fsync the index's pages too (about 0.4 ms of a 1 ms add). Small writes list
    # their rows in ``memories_unindexed``; a later, non-durable transaction indexes them (the
    # index is derived data: a lost index transaction leaves the rows listed, and they are
    # indexed again). Search reads the listed rows directly meanwhile. Deleting or rewriting a
    # listed row touches only the list, never the index, which does not hold it.
    """
    CREATE TABLE memories_unindexed (seq INTEGER PRIMARY KEY);
    DROP TRIGGER memories_removed;
    DROP TRIGGER memories_rewritten;
    CREATE TRIGGER memories_removed AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, scope)
            SELECT 'delete', old.seq, old.content, old.scope
            WHERE NOT EXISTS (SELECT 1 FROM memories_unindexed WHERE seq = old.seq);
        DELETE FROM memories_unindexed WHERE seq = old.seq;
    END;
    CREATE TRIGGER memories_rewritten AFTER UPDATE OF content ON memories
        WHEN NOT EXISTS (SELECT 1 FROM memories_unindexed WHERE seq = old.seq) BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, scope)
            VALUES ('delete', old.seq, old.content, old.scope);
        INSERT INTO memories_fts (rowid, content, scope) VALUES (new.seq, new.content, new.scope);
    END;
    """,
    # Dedup keys become 64-bit integers: imports of a million memories 5-15% faster than with
    # 16-byte digests (a smaller index, cheaper comparisons). A memory whose integer another
    # memory of its scope already holds keeps its 128-bit digest, a blob; the partial index
    # finds the scopes that hold one (practically none), where every insert is checked.
    """
    DROP INDEX memories_dedup;
    UPDATE memories SET content_hash = agentrecall_content_key(content);
    UPDATE memories SET content_hash = agentrecall_content_hash(content)
        WHERE seq IN (
            SELECT seq FROM (
                SELECT seq, row_number() OVER (PARTITION BY scope, content_hash ORDER BY seq) AS n
                FROM memories
            ) WHERE n > 1
        );
    CREATE UNIQUE INDEX memories_dedup ON memories (scope, content_hash);
    CREATE INDEX memories_collided ON memories (scope) WHERE typeof(content_hash) = 'blob';
    """,
    # Filters and time bounds narrow a search inside the index instead of checking each posting's
    # memory (a selective metadata filter made searches of a million memories ten times slower).
    # ``memory_tags`` lists each top-level scalar metadata value of the memories in the full-text
    # index (the waiting ones are read directly), keyed for lookups by key and value: strings and
    # numbers as themselves, null, false and true as the blobs x'00', x'01', x'02', which equal
    # no string or number. Keys and strings longer than 256 characters are left out. The view
    # says which entries a memory has; the store inserts them as it indexes memories
    # (:mod:`agentrecall.stores.sqlite.tags`), the triggers drop and renew them. Time bounds
    # use the index on ``created_at``.
    """
    CREATE TABLE memory_tags (
        key TEXT NOT NULL,
        value,
        seq INTEGER NOT NULL,
        PRIMARY KEY (key, value, seq)
    ) WITHOUT ROWID;
    CREATE VIEW memory_tag_entries AS
        SELECT j.key AS key,
            CASE j.type WHEN 'null' THEN x'00' WHEN 'false' THEN x'01' WHEN 'true' THEN x'02'
                ELSE j.atom END AS value,
            m.seq AS seq
        FROM memories AS m, json_each(m.metadata) AS j
        WHERE j.type NOT IN ('object', 'array') AND length(j.key) <= 256
            AND (j.type <> 'text' OR length(j.atom) <= 256);
    INSERT OR IGNORE INTO memory_tags (key, value, seq)
        SELECT key, value, seq FROM memory_tag_entries
        WHERE seq NOT IN (SELECT seq FROM memories_unindexed)
        ORDER BY key, value, seq;
    CREATE TRIGGER memories_untagged BEFORE DELETE ON memories BEGIN
        DELETE FROM memory_tags WHERE (key, value, seq) IN
            (SELECT key, value, seq FROM memory_tag_entries WHERE seq = old.seq);
    END;
    CREATE TRIGGER memories_retagged BEFORE UPDATE OF metadata ON memories BEGIN
        DELETE FROM memory_tags WHERE (key, value, seq) IN
            (SELECT key, value, seq FROM memory_tag_entries WHERE seq = old.seq);
    END;
    CREATE TRIGGER memories_tagged AFTER UPDATE OF metadata ON memories
        WHEN NOT EXISTS (SELECT 1 FROM memories_unindexed WHERE seq = new.seq) BEGIN
        INSERT OR IGNORE INTO memory_tags (key, value, seq)
            SELECT key, value, seq FROM memory_tag_entries WHERE seq = new.seq;
    END;
    CREATE INDEX memories_created ON memories (created_at);
    """,
    # Vectors for search by meaning, one per memory, in a table of their own: int8 values, one
    # byte per dimension (``vector_sql``). ``memory_settings`` records the model that made them
    # and a generation that changes whenever they are all replaced. Deleting a memory or
    # changing its content removes its vector; either, and any vector written below the
    # newest, is logged in ``memory_vector_log`` so that the vectors other processes hold in
    # memory follow without reading them all again. Its numbers only grow since the newest
    # entries are always kept; AUTOINCREMENT would make every delete statement write SQLite's
    # sequence table, whether or not it deleted anything.
    """
    CREATE TABLE memory_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE memory_vectors (seq INTEGER PRIMARY KEY, vector BLOB NOT NULL);
    CREATE TABLE memory_vector_log (n INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
    CREATE TRIGGER memories_vector_removed AFTER DELETE ON memories
        WHEN EXISTS (SELECT 1 FROM memory_vectors WHERE seq = old.seq) BEGIN
        DELETE FROM memory_vectors WHERE seq = old.seq;
        INSERT INTO memory_vector_log (seq) VALUES (old.seq);
    END;
    CREATE TRIGGER memories_vector_rewritten AFTER UPDATE OF content ON memories
        WHEN old.content IS NOT new.content BEGIN
        DELETE FROM memory_vectors WHERE seq = old.seq;
        INSERT INTO memory_vector_log (seq) VALUES (old.seq);
    END;
    """,
    # Porter stemming (``seats`` finds ``seat``) and CJK runs read as characters and pairs
    # (``座位`` finds ``用户喜欢靠过道的座位``): every memory is indexed again, once.
    stemmed_index,
    # Accented and compatibility text (``Ελλάδα``, ``ﬁnance``) read by the index as the ranking
    # reads it, so that it is found by the same words once indexed: its index text is set.
    folded_index,
    # Emoji and other pictographs (``🍣``, ``★``) are terms: the memories holding one are given
    # index text that holds them as words.
    pictograph_index,
    # The term counts of long memories, kept so that ranking one reads a few counts instead of
    # counting its text at every search (a 4 MB memory took half a second).
    long_term_counts,
    # Facts that change: a memory retired by a newer one keeps its row (its index entries and
    # vector stay, so reads of the past find it with no extra work) and is marked by
    # ``invalidated_at`` and ``superseded_by``; ``valid_from`` and ``valid_until`` are world
    # time, as the writer gave it. Each history row records the whole row it replaced, its
    # ``created_at`` filled from the memory where it still exists (older versions of deleted
    # memories keep none: reads of the past take them as created before any moment). Dedup
    # holds among current memories only, so content added again after its memory was retired
    # is a new memory; a scope's retired memories have an index of their own, which reads that
    # include them use beside the dedup index. Reads of the past find the memories updated,
    # deleted or expired after a moment by time (a retirement leaves the row as it was: those
    # versions need no such lookup), and the chain of a memory through ``superseded_by``
    # either way.
    """
    ALTER TABLE memories ADD COLUMN invalidated_at TEXT;
    ALTER TABLE memories ADD COLUMN superseded_by TEXT;
    ALTER TABLE memories ADD COLUMN valid_from TEXT;
    ALTER TABLE memories ADD COLUMN valid_until TEXT;
    ALTER TABLE memory_history ADD COLUMN created_at TEXT;
    ALTER TABLE memory_history ADD COLUMN invalidated_at TEXT;
    ALTER TABLE memory_history ADD COLUMN superseded_by TEXT;
    ALTER TABLE memory_history ADD COLUMN valid_from TEXT;
    ALTER TABLE memory_history ADD COLUMN valid_until TEXT;
    UPDATE memory_history SET created_at =
        (SELECT m.created_at FROM memories AS m WHERE m.id = memory_history.id);
    DROP INDEX memories_dedup;
    CREATE UNIQUE INDEX memories_dedup ON memories (scope, content_hash)
        WHERE invalidated_at IS NULL;
    CREATE INDEX memories_successor ON memories (superseded_by) WHERE superseded_by IS NOT NULL;
    CREATE INDEX memories_retired ON memories (scope) WHERE invalidated_at IS NOT NULL;
    CREATE INDEX memory_history_changed ON memory_history (changed_at)
        WHERE change IN ('update', 'delete', 'expire');
    CREATE INDEX memory_history_time ON memory_history (id, changed_at);
    CREATE INDEX memory_history_successor ON memory_history (superseded_by)
        WHERE superseded_by IS NOT NULL;
    """,
]
