"""SQLite store files as versions before numbered migrations made them, for the tests of
``shared.adapters.sqlite.migrations``: each schema is the earlier code's own text, frozen."""

# Before dead letters, attempt logs, superseded records, pauses on failures, quota slots,
# what was sent ahead and the search columns (the code before 934f3bd).
OLDEST_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    tenant TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    state_revision INTEGER NOT NULL,
    status TEXT NOT NULL,
    definition TEXT,
    name TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    next_ms INTEGER,
    accepted_ms INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    occurrence_count INTEGER NOT NULL DEFAULT 0,
    run_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_run_ms INTEGER,
    last_status TEXT,
    lease_owner TEXT,
    lease_until_ms INTEGER,
    PRIMARY KEY (tenant, schedule_id)
) WITHOUT ROWID;
-- The poller's claim reads only active schedules in time order: it costs what is due, not
-- what is stored.
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_ms) WHERE status = 'active';
-- The quota check of every create counts a tenant's live schedules: from this narrow index
-- alone, not from the (wide) rows; about six times faster.
CREATE INDEX IF NOT EXISTS schedules_by_tenant_status ON schedules (tenant, status);
CREATE TABLE IF NOT EXISTS executions (
    tenant TEXT NOT NULL,
    occurrence_id TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    scheduled_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    started_ms INTEGER,
    finished_ms INTEGER,
    http_status INTEGER,
    duration_ms REAL,
    lateness_ms REAL,
    error TEXT,
    next_attempt_ms INTEGER,
    lease_owner TEXT,
    lease_until_ms INTEGER,
    manual INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, occurrence_id)
) WITHOUT ROWID;
-- Retention: what purge_expired deletes, oldest first.
CREATE INDEX IF NOT EXISTS executions_finished ON executions (finished_ms)
    WHERE status IN ('succeeded', 'failed', 'skipped');
CREATE INDEX IF NOT EXISTS schedules_finished ON schedules (updated_ms)
    WHERE status IN ('completed', 'deleted');
CREATE INDEX IF NOT EXISTS executions_by_schedule
    ON executions (tenant, schedule_id, scheduled_ms DESC, occurrence_id DESC);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    next_ms INTEGER,
    timezone TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_ms);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) WITHOUT ROWID;
"""

# The last version before migrations were numbered (06ded05): every table and column of
# migration 1, and no ``store_migrations``.
PREVIOUS_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    tenant TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    state_revision INTEGER NOT NULL,
    status TEXT NOT NULL,
    definition TEXT,
    name TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    next_ms INTEGER,
    accepted_ms INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    occurrence_count INTEGER NOT NULL DEFAULT 0,
    run_count INTEGER NOT NULL DEFAULT 0,
    superseded_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_run_ms INTEGER,
    last_status TEXT,
    lease_owner TEXT,
    lease_until_ms INTEGER,
    pause_after_failures INTEGER,
    paused_by TEXT,
    paused_ms INTEGER,
    -- For search and order (shared.schedule_listing): the payload URL's host, unsealed, and
    -- the name case folded.
    target TEXT NOT NULL DEFAULT '',
    name_key TEXT NOT NULL DEFAULT '',
    sent_ahead TEXT,
    PRIMARY KEY (tenant, schedule_id)
) WITHOUT ROWID;
-- The poller's claim reads only active schedules in time order: it costs what is due, not
-- what is stored.
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_ms) WHERE status = 'active';
-- The quota check of every create counts a tenant's live schedules: from this narrow index
-- alone, not from the (wide) rows; about six times faster.
CREATE INDEX IF NOT EXISTS schedules_by_tenant_status ON schedules (tenant, status);
-- A tenant's listing by creation, a page at a time (by name: SEARCH_SCHEMA). By next time
-- it is sorted instead: next_ms changes at every advance, which an index would make dearer.
CREATE INDEX IF NOT EXISTS schedules_by_creation ON schedules (tenant, created_ms, schedule_id);
CREATE TABLE IF NOT EXISTS executions (
    tenant TEXT NOT NULL,
    occurrence_id TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    scheduled_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    started_ms INTEGER,
    finished_ms INTEGER,
    http_status INTEGER,
    duration_ms REAL,
    lateness_ms REAL,
    error TEXT,
    next_attempt_ms INTEGER,
    lease_owner TEXT,
    lease_until_ms INTEGER,
    manual INTEGER NOT NULL DEFAULT 0,
    discarded_ms INTEGER,
    attempt_log TEXT,
    superseded INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, occurrence_id)
) WITHOUT ROWID;
-- Retention: what purge_expired deletes, oldest first.
CREATE INDEX IF NOT EXISTS executions_finished ON executions (finished_ms)
    WHERE status IN ('succeeded', 'failed', 'skipped');
CREATE INDEX IF NOT EXISTS schedules_finished ON schedules (updated_ms)
    WHERE status IN ('completed', 'deleted');
CREATE INDEX IF NOT EXISTS executions_by_schedule
    ON executions (tenant, schedule_id, scheduled_ms DESC, occurrence_id DESC);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    next_ms INTEGER,
    timezone TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_ms);
-- Quota reservations: creates accepted and not yet applied (shared.ports.SlotReservation).
CREATE TABLE IF NOT EXISTS schedule_slots (
    tenant TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, schedule_id, revision)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS executions_dead_letters
    ON executions (tenant, finished_ms DESC, occurrence_id DESC)
    WHERE status = 'failed' AND discarded_ms IS NULL;
CREATE INDEX IF NOT EXISTS executions_by_status
    ON executions (tenant, schedule_id, status, scheduled_ms DESC, occurrence_id DESC);
CREATE INDEX IF NOT EXISTS schedules_by_name_key ON schedules (tenant, name_key, schedule_id);
"""
