//! The SQLite side of [`crate::store::meta`]: its SQL, the family's migrations and their
//! data steps.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use uuid::Uuid;

use crate::service::meta::{Event, MetaState, Prediction, WINDOW};
use crate::service::vocab::{Domain, NUM_EMBEDDERS};
use crate::store::rows::meta::{
    CloseError, EventQuery, HOUR_US, OpenPrediction, RawEvent, RawOpen, RawPrediction, RawState,
    Windows, closable, count_between, decode_f64s, encode_f64s, event_from_raw,
    prediction_from_raw, state_from_rows, windows_to_write,
};
use crate::store::{StoreError, to_us};

/// Schema of the meta-learning family (migration 1).
pub const MIGRATION: &str = "
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

-- Events per hour (hour = ts_us / 3,600,000,000), kept with meta_events in the same
-- transactions, so that 'events in the last 24 h' counts at most one hour of rows.
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
";

/// Migration 7: accuracy windows move out of the `meta_state` row into one row per window.
///
/// A prediction changes two windows (global and its embedder's), so it now rewrites two rows
/// of at most 800 bytes instead of the 11 KB state row with all 14 windows (which spanned four
/// database pages, each copied whole into the WAL on every commit). The old blob columns stay
/// in `meta_state` (SQLite cannot drop them cheaply) and are written empty from now on;
/// [`split_windows`] moves their content over.
pub const MIGRATION_WINDOWS: &str = "
CREATE TABLE meta_windows (
    window  INTEGER PRIMARY KEY CHECK (window BETWEEN 0 AND 13),
    vals    BLOB    NOT NULL
) STRICT;
";

/// [`crate::store::meta::load`] on SQLite.
pub(crate) fn load(conn: &Connection) -> Result<MetaState, StoreError> {
    let row = conn
        .query_row(
            "SELECT lambda_s, interaction_count, consecutive_low, alert_active, bayesian_failures,
                    human_review, adjustment_count, last_adjustment_us, global_window, embedder_windows
             FROM meta_state WHERE id = 1",
            [],
            |r| {
                let scalar = RawState::read(r)?;
                // The legacy window blobs are read (and must be blobs) but not used: the
                // windows live in `meta_windows`.
                let _: (Vec<u8>, Vec<u8>) = (r.get(8)?, r.get(9)?);
                Ok(scalar)
            },
        )
        .optional()?;
    let Some(scalar) = row else {
        return Ok(MetaState::default());
    };
    let mut stmt = conn.prepare_cached("SELECT window, vals FROM meta_windows")?;
    let windows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    state_from_rows(scalar, windows)
}

/// [`crate::store::meta::save`] on SQLite.
pub(crate) fn save(conn: &Connection, m: &MetaState, windows: Windows) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO meta_state (id, lambda_s, interaction_count, consecutive_low,
             alert_active, bayesian_failures, human_review, adjustment_count, last_adjustment_us,
             global_window, embedder_windows)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, X'', X'')
         ON CONFLICT (id) DO UPDATE SET lambda_s = ?1, interaction_count = ?2,
             consecutive_low = ?3, alert_active = ?4, bayesian_failures = ?5, human_review = ?6,
             adjustment_count = ?7, last_adjustment_us = ?8",
    )?
    .execute(params![
        m.lambdas.s(),
        m.interaction_count as i64,
        i64::from(m.consecutive_low),
        m.alert_active,
        i64::from(m.bayesian_failures),
        m.human_review_required,
        m.adjustment_count as i64,
        m.last_adjustment_at.map(to_us),
    ])?;
    let mut put = conn.prepare_cached(
        "INSERT INTO meta_windows (window, vals) VALUES (?1, ?2)
         ON CONFLICT (window) DO UPDATE SET vals = ?2",
    )?;
    for (id, w) in windows_to_write(m, windows) {
        put.execute(params![id as i64, encode_f64s(w.values())])?;
    }
    Ok(())
}

/// Data step of migration 7: move the accuracy windows of a `meta_state` row written by
/// schema 6 (a global blob, and 13 length-prefixed windows in one blob) into `meta_windows`,
/// and empty the old columns.
///
/// # Errors
/// SQL failure, or an unreadable blob (reported as a conversion failure).
pub fn split_windows(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let row: Option<(Vec<u8>, Vec<u8>)> = conn
        .query_row(
            "SELECT global_window, embedder_windows FROM meta_state WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((global, per)) = row else {
        return Ok(());
    };
    let corrupt = |what: String| {
        rusqlite::Error::FromSqlConversionFailure(
            0,
            rusqlite::types::Type::Blob,
            Box::new(StoreError::Corrupt(what)),
        )
    };
    let global = decode_f64s(&global).map_err(|e| corrupt(e.to_string()))?;
    let per = decode_f64s(&per).map_err(|e| corrupt(e.to_string()))?;
    let mut windows = vec![global];
    // 13 × (length, values…) flattened; an empty blob means empty windows.
    let mut i = 0usize;
    for _ in 0..NUM_EMBEDDERS {
        let Some(&len) = per.get(i) else {
            windows.push(Vec::new());
            continue;
        };
        let values = per
            .get(i + 1..i + 1 + len as usize)
            .ok_or_else(|| corrupt("embedder windows truncated".into()))?;
        windows.push(values.to_vec());
        i += 1 + len as usize;
    }
    for (id, values) in windows.into_iter().enumerate() {
        conn.execute(
            "INSERT INTO meta_windows (window, vals) VALUES (?1, ?2)",
            params![id as i64, encode_f64s(values.into_iter())],
        )?;
    }
    conn.execute(
        "UPDATE meta_state SET global_window = X'', embedder_windows = X'' WHERE id = 1",
        [],
    )?;
    Ok(())
}

/// [`crate::store::meta::insert_events`] on SQLite.
pub(crate) fn insert_events(conn: &Connection, events: &[Event]) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO meta_events (ts_us, event_type, domain, embedder_index, prediction_error,
             lambda_s_before, lambda_s_after, accuracy_avg, escalated, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    let mut hours = conn.prepare_cached(
        "INSERT INTO meta_event_hours (hour, n) VALUES (?1, 1)
         ON CONFLICT (hour) DO UPDATE SET n = n + 1",
    )?;
    for e in events {
        hours.execute([to_us(e.timestamp).div_euclid(HOUR_US)])?;
        stmt.execute(params![
            to_us(e.timestamp),
            e.event_type.as_str(),
            e.domain.map(Domain::as_str),
            e.embedder_index,
            e.prediction_error,
            e.lambda_before.s(),
            e.lambda_after.s(),
            e.accuracy_avg,
            e.escalated,
            e.detail,
        ])?;
    }
    Ok(())
}

/// [`crate::store::meta::import_events`] on SQLite.
pub(crate) fn import_events(conn: &Connection, events: &[Event]) -> Result<usize, StoreError> {
    let mut present = conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM meta_events
                        WHERE event_type = ?1 AND ts_us = ?2 AND detail = ?3)",
    )?;
    let mut fresh = Vec::new();
    for e in events {
        let found: bool = present.query_row(
            params![e.event_type.as_str(), to_us(e.timestamp), e.detail],
            |r| r.get(0),
        )?;
        if !found {
            fresh.push(e.clone());
        }
    }
    insert_events(conn, &fresh)?;
    Ok(fresh.len())
}

/// [`crate::store::meta::query_events`] on SQLite.
pub(crate) fn query_events(
    conn: &Connection,
    q: &EventQuery,
) -> Result<(Vec<Event>, usize), StoreError> {
    // Only the filters in use appear in the SQL, so SQLite can pick the index that matches
    // them; `(?n IS NULL OR col = ?n)` would defeat the indexes and scan the table.
    let mut clauses: Vec<&str> = Vec::new();
    let mut values: Vec<rusqlite::types::Value> = Vec::new();
    if let Some(start) = q.start {
        clauses.push("ts_us >= ?");
        values.push(to_us(start).into());
    }
    if let Some(end) = q.end {
        clauses.push("ts_us <= ?");
        values.push(to_us(end).into());
    }
    if let Some(t) = q.event_type {
        clauses.push("event_type = ?");
        values.push(t.as_str().to_string().into());
    }
    if let Some(d) = q.domain {
        clauses.push("domain = ?");
        values.push(d.as_str().to_string().into());
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let total: i64 = if q.event_type.is_none() && q.domain.is_none() {
        // Time filters only: the hourly counts give the total without counting every row
        // (9 ms for 1,000,000 events otherwise).
        count_events_between(conn, q.start, q.end)? as i64
    } else {
        conn.prepare_cached(&format!("SELECT count(*) FROM meta_events {filter}"))?
            .query_row(rusqlite::params_from_iter(values.iter()), |r| r.get(0))?
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT ts_us, event_type, domain, embedder_index, prediction_error, lambda_s_before,
                lambda_s_after, accuracy_avg, escalated, detail
         FROM meta_events {filter}
         ORDER BY ts_us DESC, id DESC LIMIT ? OFFSET ?"
    ))?;
    values.push((q.limit as i64).into());
    values.push((q.offset.min(i64::MAX as usize) as i64).into());
    let rows = stmt.query_map(rusqlite::params_from_iter(values.iter()), raw_event)?;
    let mut events = Vec::new();
    for row in rows {
        events.push(event_from_raw(row?)?);
    }
    Ok((events, total as usize))
}

fn raw_event(r: &Row<'_>) -> rusqlite::Result<RawEvent> {
    RawEvent::read(r)
}

/// [`crate::store::meta::count_events_between`] on SQLite.
pub(crate) fn count_events_between(
    conn: &Connection,
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
) -> Result<usize, StoreError> {
    count_between(
        start,
        end,
        |a, b| {
            Ok(conn
                .prepare_cached(
                    "SELECT count(*) FROM meta_events WHERE ts_us >= ?1 AND ts_us <= ?2",
                )?
                .query_row(params![a, b], |r| r.get(0))?)
        },
        |first, last| {
            Ok(conn
                .prepare_cached(
                    "SELECT total(n) FROM meta_event_hours WHERE hour >= ?1 AND hour <= ?2",
                )?
                .query_row([first, last], |r| r.get::<_, f64>(0))? as i64)
        },
    )
}

/// [`crate::store::meta::delete_events_before`] on SQLite.
pub(crate) fn delete_events_before(
    conn: &Connection,
    cutoff: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let cutoff = to_us(cutoff);
    let deleted = conn.execute("DELETE FROM meta_events WHERE ts_us < ?1", [cutoff])?;
    if deleted > 0 {
        // Whole hours before the cutoff are gone; the cutoff's own hour is recounted.
        let hour = cutoff.div_euclid(HOUR_US);
        conn.execute("DELETE FROM meta_event_hours WHERE hour <= ?1", [hour])?;
        conn.execute(
            "INSERT INTO meta_event_hours (hour, n)
             SELECT ?1, count(*) FROM meta_events WHERE ts_us >= ?2 AND ts_us < ?3
             HAVING count(*) > 0",
            params![hour, hour * HOUR_US, (hour + 1) * HOUR_US],
        )?;
    }
    Ok(deleted)
}

/// [`crate::store::meta::insert_prediction`] on SQLite.
pub(crate) fn insert_prediction(
    conn: &Connection,
    p: &Prediction,
    source: Option<Uuid>,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO predictions (ts_us, embedder_index, predicted, actual, delta_s, delta_c,
                 domain, ach_level, source_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        to_us(p.timestamp),
        p.embedder_index,
        p.predicted,
        p.actual,
        p.delta_s,
        p.delta_c,
        p.domain.map(Domain::as_str),
        p.ach_level,
        source.map(|u| u.to_string()),
    ])?;
    Ok(())
}

/// [`crate::store::meta::replay_window`] on SQLite.
pub(crate) fn replay_window(
    conn: &Connection,
    domain: Option<Domain>,
) -> Result<Vec<Prediction>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT ts_us, embedder_index, predicted, actual, delta_s, delta_c, domain, ach_level
         FROM predictions WHERE (?1 IS NULL OR domain = ?1)
         ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![domain.map(Domain::as_str), WINDOW as i64], |r| {
        RawPrediction::read(r)
    })?;
    let mut out = Vec::new();
    for row in rows {
        out.push(prediction_from_raw(row?)?);
    }
    out.reverse();
    Ok(out)
}

/// [`crate::store::meta::open_prediction`] on SQLite.
pub(crate) fn open_prediction(conn: &Connection, p: &OpenPrediction) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO open_predictions (id, created_us, delta_s, delta_c, learning_score, domain)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            p.id.to_string(),
            to_us(p.created),
            p.delta_s,
            p.delta_c,
            p.learning_score,
            p.domain.map(Domain::as_str),
        ],
    )?;
    Ok(())
}

/// [`crate::store::meta::close_prediction`] on SQLite.
pub(crate) fn close_prediction(
    conn: &Connection,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Result<OpenPrediction, CloseError>, StoreError> {
    let row = conn
        .query_row(
            "SELECT created_us, delta_s, delta_c, learning_score, domain, closed_us
             FROM open_predictions WHERE id = ?1",
            [id.to_string()],
            |r| RawOpen::read(r),
        )
        .optional()?;
    let open = match closable(id, row, now)? {
        Ok(open) => open,
        Err(e) => return Ok(Err(e)),
    };
    conn.execute(
        "UPDATE open_predictions SET closed_us = ?2 WHERE id = ?1",
        params![id.to_string(), to_us(now)],
    )?;
    Ok(Ok(open))
}
