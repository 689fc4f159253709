-- The schema of a new database at user_version 20, one statement per object, as SQLite stores it
-- after migrations 1-20 (store/sqlite/create.rs; the unit test there proves it). Never edit: a change
-- to the schema is a new migration, which new files run after this.
CREATE TABLE meta_state (
    id                  INTEGER PRIMARY KEY CHECK (id = 1),
    lambda_s            REAL    NOT NULL,
    interaction_count   INTEGER NOT NULL,
    consecutive_low     INTEGER NOT NULL,
    alert_active        INTEGER NOT NULL,
    bayesian_failures   INTEGER NOT NULL,
    human_review        INTEGER NOT NULL,
    adjustment_count    INTEGER NOT NULL,
    last_adjustment_us  INTEGER,
    global_window       BLOB    NOT NULL,
    embedder_windows    BLOB    NOT NULL
) STRICT;
CREATE TABLE meta_events (
    id                INTEGER PRIMARY KEY,
    ts_us             INTEGER NOT NULL,
    event_type        TEXT    NOT NULL,
    domain            TEXT,
    embedder_index    INTEGER,
    prediction_error  REAL,
    lambda_s_before   REAL    NOT NULL,
    lambda_s_after    REAL    NOT NULL,
    accuracy_avg      REAL,
    escalated         INTEGER NOT NULL,
    detail            TEXT    NOT NULL
) STRICT;
CREATE INDEX meta_events_ts ON meta_events (ts_us);
CREATE INDEX meta_events_type_ts ON meta_events (event_type, ts_us);
CREATE INDEX meta_events_domain_ts ON meta_events (domain, ts_us);
CREATE INDEX meta_events_type_domain_ts ON meta_events (event_type, domain, ts_us);
CREATE TABLE meta_event_hours (
    hour  INTEGER PRIMARY KEY,
    n     INTEGER NOT NULL
) STRICT;
CREATE TABLE predictions (
    id               INTEGER PRIMARY KEY,
    ts_us            INTEGER NOT NULL,
    embedder_index   INTEGER,
    predicted        REAL    NOT NULL,
    actual           REAL    NOT NULL,
    delta_s          REAL,
    delta_c          REAL,
    domain           TEXT,
    ach_level        REAL    NOT NULL,
    source_id        TEXT
) STRICT;
CREATE INDEX predictions_domain ON predictions (domain, id);
CREATE TABLE open_predictions (
    id               TEXT    PRIMARY KEY,
    created_us       INTEGER NOT NULL,
    delta_s          REAL    NOT NULL,
    delta_c          REAL    NOT NULL,
    learning_score   REAL    NOT NULL,
    domain           TEXT,
    closed_us        INTEGER
) STRICT;
CREATE TABLE directive_history (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    task_id            TEXT,
    intervention_type  TEXT    NOT NULL
        CHECK (intervention_type IN ('MANUAL_FIX', 'FEEDBACK', 'OVERRIDE', 'ESCALATION')),
    description        TEXT    NOT NULL,
    actor              TEXT    NOT NULL,
    created_us         INTEGER NOT NULL
, task_key TEXT, project TEXT NOT NULL DEFAULT '') STRICT;
CREATE INDEX directive_history_created ON directive_history (created_us);
CREATE TABLE atc_observations (
    seq             INTEGER PRIMARY KEY,
    ts_us           INTEGER NOT NULL,
    embedder_id     INTEGER NOT NULL CHECK (embedder_id BETWEEN 1 AND 13),
    confidence      REAL    NOT NULL CHECK (confidence BETWEEN 0.0 AND 1.0),
    correct         INTEGER NOT NULL CHECK (correct IN (0, 1)),
    domain          TEXT    NOT NULL,
    threshold_name  TEXT,
    threshold_used  REAL
) STRICT;
CREATE INDEX atc_observations_embedder ON atc_observations (embedder_id, seq);
CREATE TABLE atc_thresholds (
    domain  TEXT NOT NULL,
    name    TEXT NOT NULL,
    value   REAL NOT NULL,
    PRIMARY KEY (domain, name)
) STRICT;
CREATE TABLE atc_temperatures (
    embedder_id  INTEGER PRIMARY KEY CHECK (embedder_id BETWEEN 1 AND 13),
    temperature  REAL    NOT NULL
) STRICT;
CREATE TABLE atc_bandit_arms (
    domain           TEXT    NOT NULL,
    candidate_index  INTEGER NOT NULL,
    candidate        REAL    NOT NULL,
    successes        INTEGER NOT NULL,
    failures         INTEGER NOT NULL,
    PRIMARY KEY (domain, candidate_index)
) STRICT;
CREATE TABLE atc_domains (
    domain              TEXT PRIMARY KEY,
    selected_threshold  REAL,
    last_level4_us      INTEGER
) STRICT;
CREATE TABLE atc_threshold_drift (
    domain    TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    alpha     REAL    NOT NULL,
    mean      REAL    NOT NULL,
    variance  REAL    NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (domain, name)
) STRICT;
CREATE TABLE atc_gap_drift (
    embedder_id  INTEGER PRIMARY KEY,
    alpha        REAL    NOT NULL,
    mean         REAL    NOT NULL,
    variance     REAL    NOT NULL,
    count        INTEGER NOT NULL
) STRICT;
CREATE VIRTUAL TABLE lessons_fts USING fts5(terms, tokenize = 'unicode61');
CREATE VIRTUAL TABLE lessons_fts_vocab USING fts5vocab(lessons_fts, 'row');
CREATE TABLE vertices (
    id           TEXT    PRIMARY KEY,
    seq          INTEGER NOT NULL UNIQUE,
    updated_us   INTEGER NOT NULL,
    e1           BLOB    NOT NULL,
    fingerprint  BLOB    NOT NULL
) STRICT;
CREATE TABLE vertex_versions (
    vertex_id    TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    created_us   INTEGER NOT NULL,
    fingerprint  BLOB    NOT NULL,
    PRIMARY KEY (vertex_id, version)
) STRICT;
CREATE TABLE surprise_histograms (
    embedder_index  INTEGER PRIMARY KEY CHECK (embedder_index BETWEEN 0 AND 12),
    counts          BLOB    NOT NULL
) STRICT;
CREATE TABLE meta_windows (
    window  INTEGER PRIMARY KEY CHECK (window BETWEEN 0 AND 13),
    vals    BLOB    NOT NULL
) STRICT;
CREATE TABLE request_keys (
    tool         TEXT    NOT NULL,
    request_key  TEXT    NOT NULL,
    arguments    TEXT    NOT NULL,
    answer       TEXT    NOT NULL,
    created_us   INTEGER NOT NULL,
    PRIMARY KEY (tool, request_key)
) STRICT;
CREATE INDEX request_keys_created ON request_keys (created_us);
CREATE TABLE "lessons" (
    seq                   INTEGER PRIMARY KEY,
    id                    TEXT    NOT NULL UNIQUE,
    project               TEXT    NOT NULL DEFAULT '',
    task_id               TEXT    NOT NULL,
    task_key              TEXT    NOT NULL,
    task_words            TEXT    NOT NULL DEFAULT '',
    strategy_description  TEXT    NOT NULL,
    normalised_strategy   TEXT    NOT NULL,
    strategy_spans        BLOB    NOT NULL DEFAULT x'',
    rca_summary           TEXT    NOT NULL,
    failure_type          TEXT    NOT NULL CHECK (failure_type IN ('ARCHITECTURAL_MISUNDERSTANDING',
                              'TOOL_MISUSE', 'DEPENDENCY_CONFLICT', 'LOGIC_ERROR', 'UNKNOWN')),
    source_agent          TEXT    NOT NULL,
    is_active             INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    created_us            INTEGER NOT NULL,
    embedding             BLOB,
    embedding_model       TEXT,
    embedding_dim         INTEGER,
    embedding_rev         INTEGER
) STRICT;
CREATE UNIQUE INDEX lessons_project_task_strategy
    ON lessons (project, task_key, normalised_strategy);
CREATE INDEX lessons_active_by_key ON lessons (project, task_key, is_active, seq);
CREATE INDEX lessons_project_active ON lessons (project, is_active, seq);
CREATE INDEX lessons_task_words ON lessons (project, task_words, is_active);
CREATE INDEX lessons_embedding_rev ON lessons (embedding_rev) WHERE embedding_rev IS NOT NULL;
CREATE TABLE "beliefs" (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    project            TEXT    NOT NULL DEFAULT '',
    normalised_target  TEXT    NOT NULL,
    target             TEXT    NOT NULL,
    status             TEXT    NOT NULL
        CHECK (status IN ('active', 'hypothetical', 'verified', 'denied', 'retracted')),
    confidence         REAL    NOT NULL CHECK (confidence BETWEEN 0.0 AND 1.0),
    entropy            REAL    NOT NULL,
    rationale          TEXT    NOT NULL,
    uncertainty_type   TEXT
        CHECK (uncertainty_type IS NULL OR uncertainty_type IN ('epistemic', 'aleatory', 'mixed')),
    source_nodes       TEXT    NOT NULL,
    created_us         INTEGER NOT NULL,
    updated_us         INTEGER NOT NULL,
    UNIQUE (project, normalised_target)
) STRICT;
CREATE TABLE "belief_events" (
    seq                INTEGER PRIMARY KEY,
    belief_seq         INTEGER NOT NULL REFERENCES "beliefs" (seq),
    action             TEXT    NOT NULL,
    input_confidence   REAL    NOT NULL,
    status_before      TEXT,
    status_after       TEXT    NOT NULL,
    confidence_before  REAL,
    confidence_after   REAL    NOT NULL,
    rationale          TEXT    NOT NULL,
    at_us              INTEGER NOT NULL
) STRICT;
CREATE INDEX beliefs_status ON beliefs (project, status);
CREATE INDEX belief_events_belief ON belief_events (belief_seq, seq);
CREATE INDEX directive_history_task_key ON directive_history (project, task_key, created_us);
CREATE INDEX directive_history_project ON directive_history (project, created_us);
CREATE TABLE attempts (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    project      TEXT    NOT NULL,
    session_id   TEXT    NOT NULL,
    tool         TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    exit_status  INTEGER,
    error_head   TEXT    NOT NULL,
    created_us   INTEGER NOT NULL,
    lesson_id    TEXT,
    reminded_us  INTEGER
) STRICT;
CREATE INDEX attempts_open ON attempts (project, lesson_id, created_us);
CREATE INDEX attempts_session ON attempts (project, session_id);
CREATE TABLE lesson_recurrences (
    seq                   INTEGER PRIMARY KEY,
    id                    TEXT    NOT NULL UNIQUE,
    project               TEXT    NOT NULL,
    lesson_id             TEXT    NOT NULL,
    task_id               TEXT    NOT NULL,
    strategy_description  TEXT    NOT NULL,
    rca_summary           TEXT    NOT NULL,
    failure_type          TEXT    NOT NULL,
    source_agent          TEXT    NOT NULL,
    match_type            TEXT    NOT NULL
        CHECK (match_type IN ('contains', 'contained_in', 'similar')),
    score                 REAL    NOT NULL CHECK (score BETWEEN 0.0 AND 1.0),
    recorded_us           INTEGER NOT NULL
) STRICT;
CREATE INDEX lesson_recurrences_lesson ON lesson_recurrences (project, lesson_id, seq);
CREATE TABLE check_predictions (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    project      TEXT    NOT NULL,
    task_id      TEXT    NOT NULL,
    lesson_id    TEXT    NOT NULL,
    strategy     TEXT    NOT NULL,
    raw          REAL    NOT NULL,
    probability  REAL    NOT NULL,
    blacklisted  INTEGER NOT NULL,
    created_us   INTEGER NOT NULL,
    closed_us    INTEGER,
    actual       INTEGER,
    closed_by    TEXT
) STRICT;
CREATE INDEX check_predictions_open ON check_predictions (project, strategy, created_us);
CREATE TABLE outcome_temperatures (
    project      TEXT    NOT NULL,
    source       TEXT    NOT NULL,
    temperature  REAL    NOT NULL,
    outcomes     INTEGER NOT NULL,
    fitted_us    INTEGER NOT NULL,
    PRIMARY KEY (project, source)
) STRICT;
CREATE INDEX check_predictions_closed ON check_predictions (project, closed_us, created_us);
