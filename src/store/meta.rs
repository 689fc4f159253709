//! Meta-learning persistence: the state row, the event log, recorded predictions (the replay
//! window) and open predictions issued by `gwt_compute_delta_sc`.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, params};
use uuid::Uuid;

use super::{Db, StoreError, count as stored_count, from_us, in_range, to_us};
use super::{pg, sqlite_or};
use crate::service::meta::{Event, EventType, MetaState, Prediction, ResetScope, WINDOW, Window};
use crate::service::vocab::{Domain, Lambdas, NUM_EMBEDDERS};
use crate::store::directives::{self, Directive, InterventionType};

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

/// Which accuracy windows a [`save`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Windows {
    /// All 14 (after a reset, or when unsure).
    All,
    /// None: the windows did not change (recalibration, escalation handling).
    None,
    /// The global window and, if given, one embedder's: what one recorded prediction changes.
    Prediction(Option<u8>),
}

/// How long an open prediction may wait for its outcome.
pub const OPEN_PREDICTION_TTL_DAYS: i64 = 7;

pub(crate) fn encode_f64s(values: impl ExactSizeIterator<Item = f64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * values.len());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

pub(crate) fn decode_f64s(bytes: &[u8]) -> Result<Vec<f64>, StoreError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(StoreError::Corrupt(format!(
            "a window blob of {} bytes is not a list of f64",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("chunks of 8")))
        .collect())
}

pub(crate) fn parse_domain(s: Option<String>) -> Result<Option<Domain>, StoreError> {
    s.map(|s| Domain::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("unknown domain {s:?}"))))
        .transpose()
}

/// Load the meta-learning state; the default state when none is stored yet.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn load(db: &Db<'_>) -> Result<MetaState, StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::load(pg));
    let row = conn
        .query_row(
            "SELECT lambda_s, interaction_count, consecutive_low, alert_active, bayesian_failures,
                    human_review, adjustment_count, last_adjustment_us, global_window, embedder_windows
             FROM meta_state WHERE id = 1",
            [],
            |r| <(f64, i64, i64, bool, i64, bool, i64, Option<i64>, Vec<u8>, Vec<u8>)>::try_from(r),
        )
        .optional()?;
    let Some((lambda_s, count, low, alert, failures, human, adjustments, last, _, _)) = row else {
        return Ok(MetaState::default());
    };
    let mut stmt = conn.prepare_cached("SELECT window, vals FROM meta_windows")?;
    let windows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    state_from_rows(
        (
            lambda_s,
            count,
            low,
            alert,
            failures,
            human,
            adjustments,
            last,
        ),
        windows,
    )
}

/// The scalar `meta_state` row as read: λ_s, interaction count, consecutive low, alert,
/// Bayesian failures, human review, adjustment count, last adjustment.
pub(crate) type RawState = (f64, i64, i64, bool, i64, bool, i64, Option<i64>);

/// The meta-learning state from its scalar row and its `(window, vals)` rows, every stored
/// value checked.
pub(crate) fn state_from_rows(
    scalar: RawState,
    windows: Vec<(i64, Vec<u8>)>,
) -> Result<MetaState, StoreError> {
    let (lambda_s, count, low, alert, failures, human, adjustments, last) = scalar;
    let mut global = Window::default();
    let mut embedders: [Window; NUM_EMBEDDERS] = Default::default();
    for (id, vals) in windows {
        let vals = decode_f64s(&vals)?;
        for &v in &vals {
            in_range("stored accuracy", v, 0.0, 1.0)?;
        }
        let w = Window::from_values(vals);
        match usize::try_from(id) {
            Ok(0) => global = w,
            Ok(i) if i <= NUM_EMBEDDERS => embedders[i - 1] = w,
            _ => return Err(StoreError::Corrupt(format!("unknown accuracy window {id}"))),
        }
    }
    Ok(MetaState {
        lambdas: stored_lambdas(lambda_s)?,
        interaction_count: stored_count("interaction count", count)?,
        global,
        embedders,
        consecutive_low: stored_count("consecutive low count", low)?,
        alert_active: alert,
        bayesian_failures: stored_count("Bayesian failure count", failures)?,
        human_review_required: human,
        adjustment_count: stored_count("adjustment count", adjustments)?,
        last_adjustment_at: last.map(from_us).transpose()?,
    })
}

/// Store the meta-learning state: the scalar row, and the accuracy windows `windows` names
/// (one row each in `meta_windows`).
///
/// Writing fewer windows than changed would lose data: pass [`Windows::All`] unless the
/// change is exactly one recorded prediction ([`Windows::Prediction`]) or left the windows
/// alone ([`Windows::None`]).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn save(db: &Db<'_>, m: &MetaState, windows: Windows) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::save(pg, m, windows));
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

/// The accuracy windows [`save`] writes for `windows`, with their `meta_windows` ids (0 the
/// global window, 1–13 the embedders').
pub(crate) fn windows_to_write(m: &MetaState, windows: Windows) -> Vec<(usize, &Window)> {
    match windows {
        Windows::None => Vec::new(),
        Windows::All => std::iter::once((0, &m.global))
            .chain(m.embedders.iter().enumerate().map(|(i, w)| (i + 1, w)))
            .collect(),
        Windows::Prediction(embedder) => {
            let mut out = vec![(0, &m.global)];
            if let Some(i) = embedder.map(usize::from).filter(|&i| i < NUM_EMBEDDERS) {
                out.push((i + 1, &m.embedders[i]));
            }
            out
        }
    }
}

/// The operator's reset of `scope` (`reset_meta_learning`, and `escalations ack` of the
/// console): [`MetaState::reset`], an `OVERRIDE` directive-history entry by `actor` naming the
/// scope and `rationale`, the state saved (with every accuracy window when the scope
/// [empties them](ResetScope::empties_windows)), and the `self_healing` event appended.
/// Returns the event and the entry. Call inside a write transaction and bump
/// the `Meta` family, as the tool does.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure (then `m` is ahead of the store: mark it stale).
pub fn reset_recorded(
    db: &Db<'_>,
    m: &mut MetaState,
    scope: ResetScope,
    rationale: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<(Event, Directive), StoreError> {
    let event = m.reset(scope, rationale, now);
    let directive = Directive::new(
        None,
        InterventionType::Override,
        format!("reset_meta_learning ({}): {rationale}", scope.as_str()),
        actor,
        now,
    );
    directives::insert(db, &directive)?;
    let windows = if scope.empties_windows() {
        Windows::All
    } else {
        Windows::None
    };
    save(db, m, windows)?;
    insert_events(db, std::slice::from_ref(&event))?;
    Ok((event, directive))
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

/// Append events to the log.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn insert_events(db: &Db<'_>, events: &[Event]) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::insert_events(pg, events));
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

/// Append the events not yet in the log (an event is present when one of the same time, type
/// and detail is), as [`insert_events`] does; returns how many were appended. Used to import
/// another database's log, so that importing it twice appends nothing.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn import_events(db: &Db<'_>, events: &[Event]) -> Result<usize, StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::import_events(pg, events));
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
    insert_events(db, &fresh)?;
    Ok(fresh.len())
}

/// Every event of the log, oldest first.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn all_events(db: &Db<'_>) -> Result<Vec<Event>, StoreError> {
    let (mut events, _) = query_events(
        db,
        &EventQuery {
            limit: i64::MAX as usize,
            ..EventQuery::default()
        },
    )?;
    events.reverse();
    Ok(events)
}

/// Filters of an event-log query. All bounds inclusive.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    /// Events at or after this time.
    pub start: Option<DateTime<Utc>>,
    /// Events at or before this time.
    pub end: Option<DateTime<Utc>>,
    /// Only this kind of event.
    pub event_type: Option<EventType>,
    /// Only events of this domain.
    pub domain: Option<Domain>,
    /// Page size.
    pub limit: usize,
    /// Events skipped (newest first).
    pub offset: usize,
}

/// One page of events, newest first, and the total number matching the filters.
///
/// Runs in SQL on the `(event_type|domain, ts)` indexes; nothing beyond the page is loaded.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn query_events(db: &Db<'_>, q: &EventQuery) -> Result<(Vec<Event>, usize), StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::query_events(pg, q));
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
        count_events_between(db, q.start, q.end)? as i64
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

pub(crate) type RawEvent = (
    i64,
    String,
    Option<String>,
    Option<u8>,
    Option<f64>,
    f64,
    f64,
    Option<f64>,
    bool,
    String,
);

fn raw_event(r: &Row<'_>) -> rusqlite::Result<RawEvent> {
    RawEvent::try_from(r)
}

pub(crate) fn event_from_raw(raw: RawEvent) -> Result<Event, StoreError> {
    let (ts, kind, domain, embedder, err, before, after, acc, escalated, detail) = raw;
    Ok(Event {
        timestamp: from_us(ts)?,
        event_type: EventType::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown event type {kind:?}")))?,
        prediction_error: err,
        lambda_before: stored_lambdas(before)?,
        lambda_after: stored_lambdas(after)?,
        accuracy_avg: acc
            .map(|a| in_range("stored accuracy", a, 0.0, 1.0))
            .transpose()?,
        escalated,
        domain: parse_domain(domain)?,
        embedder_index: embedder,
        detail,
    })
}

/// One hour in microseconds, the width of a `meta_event_hours` bucket.
pub(crate) const HOUR_US: i64 = 3_600_000_000;

/// Number of events at or after `since`.
///
/// Whole hours come from the hourly counts; only the first, partial hour is counted row by
/// row, so the cost does not grow with the number of events in the window.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn count_events_since(db: &Db<'_>, since: DateTime<Utc>) -> Result<usize, StoreError> {
    count_events_between(db, Some(since), None)
}

/// Number of events with `start <= timestamp <= end` (either bound optional), from the hourly
/// counts plus a row count of at most the two partial hours at the edges.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn count_events_between(
    db: &Db<'_>,
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
) -> Result<usize, StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::count_events_between(pg, start, end));
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

/// [`count_events_between`] in terms of its two queries, for both backends: `rows_between(a,
/// b)` counts the events with `a <= ts_us <= b`, `hours_between(first, last)` sums the hourly
/// counts of hours `first..=last`.
pub(crate) fn count_between(
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
    rows_between: impl Fn(i64, i64) -> Result<i64, StoreError>,
    hours_between: impl Fn(i64, i64) -> Result<i64, StoreError>,
) -> Result<usize, StoreError> {
    let lo = start.map(to_us);
    let hi = end.map(to_us);
    let hours_between = |first: i64, last: i64| -> Result<i64, StoreError> {
        if first > last {
            return Ok(0);
        }
        hours_between(first, last)
    };
    let (lo_hour, hi_hour) = (
        lo.map(|t| t.div_euclid(HOUR_US)),
        hi.map(|t| t.div_euclid(HOUR_US)),
    );
    if let (Some(l), Some(h)) = (lo, hi) {
        if l > h {
            return Ok(0);
        }
        if lo_hour == hi_hour {
            return Ok(rows_between(l, h)? as usize);
        }
    }
    // Partial first hour [lo, end of its hour], whole hours between, partial last hour.
    let mut total = 0;
    let first_whole = match (lo, lo_hour) {
        (Some(l), Some(lh)) => {
            total += rows_between(l, (lh + 1) * HOUR_US - 1)?;
            lh + 1
        }
        _ => i64::MIN,
    };
    let last_whole = match (hi, hi_hour) {
        (Some(h), Some(hh)) => {
            total += rows_between(hh * HOUR_US, h)?;
            hh - 1
        }
        _ => i64::MAX,
    };
    total += hours_between(first_whole, last_whole)?;
    Ok(total as usize)
}

/// Delete events strictly older than `cutoff`; returns how many.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn delete_events_before(db: &Db<'_>, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::delete_events_before(pg, cutoff));
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

/// Append a recorded prediction (the replay window is the newest [`WINDOW`] of these).
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn insert_prediction(
    db: &Db<'_>,
    p: &Prediction,
    source: Option<Uuid>,
) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::insert_prediction(pg, p, source));
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

/// The replay window: the newest [`WINDOW`] recorded predictions (of `domain` when given),
/// oldest first.
///
/// # Errors
/// [`StoreError`] on SQL failure or an unreadable row.
pub fn replay_window(db: &Db<'_>, domain: Option<Domain>) -> Result<Vec<Prediction>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::replay_window(pg, domain));
    let mut stmt = conn.prepare_cached(
        "SELECT ts_us, embedder_index, predicted, actual, delta_s, delta_c, domain, ach_level
         FROM predictions WHERE (?1 IS NULL OR domain = ?1)
         ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![domain.map(Domain::as_str), WINDOW as i64], |r| {
        RawPrediction::try_from(r)
    })?;
    let mut out = Vec::new();
    for row in rows {
        out.push(prediction_from_raw(row?)?);
    }
    out.reverse();
    Ok(out)
}

/// A `predictions` row as read: time, embedder, predicted, actual, ΔS, ΔC, domain, ACh level.
pub(crate) type RawPrediction = (
    i64,
    Option<u8>,
    f64,
    f64,
    Option<f64>,
    Option<f64>,
    Option<String>,
    f64,
);

/// A recorded prediction from its row, every stored value checked.
pub(crate) fn prediction_from_raw(raw: RawPrediction) -> Result<Prediction, StoreError> {
    let (ts, embedder_index, predicted, actual, delta_s, delta_c, domain, ach_level) = raw;
    Ok(Prediction {
        timestamp: from_us(ts)?,
        embedder_index,
        predicted: in_range("stored prediction", predicted, 0.0, 1.0)?,
        actual: in_range("stored outcome", actual, 0.0, 1.0)?,
        delta_s: delta_s.map(|v| finite("stored ΔS", v)).transpose()?,
        delta_c: delta_c.map(|v| finite("stored ΔC", v)).transpose()?,
        domain: parse_domain(domain)?,
        ach_level,
    })
}

/// A prediction issued by `gwt_compute_delta_sc`, waiting for its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenPrediction {
    /// The `prediction_id` the tool answered.
    pub id: Uuid,
    /// When it was issued (UTC); it expires after 7 days.
    pub created: DateTime<Utc>,
    /// Surprise ΔS of the update, in [0, 1].
    pub delta_s: f64,
    /// Coherence ΔC of the update, in [0, 1].
    pub delta_c: f64,
    /// The learning score L predicted at issue time.
    pub learning_score: f64,
    /// Knowledge domain, when given.
    pub domain: Option<Domain>,
}

/// Why an open prediction cannot be closed.
#[derive(Debug, Clone, PartialEq)]
pub enum CloseError {
    /// No prediction with that id was ever issued.
    Unknown,
    /// It was closed before.
    AlreadyClosed,
    /// It was issued more than [`OPEN_PREDICTION_TTL_DAYS`] days ago.
    Expired,
}

/// Record a new open prediction.
///
/// # Errors
/// [`StoreError::Sqlite`] on SQL failure.
pub fn open_prediction(db: &Db<'_>, p: &OpenPrediction) -> Result<(), StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::open_prediction(pg, p));
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

/// Close an open prediction at `now`, returning it; it can be closed once.
///
/// # Errors
/// `Ok(Err(CloseError))` when unknown, closed or expired; [`StoreError`] on SQL failure.
pub fn close_prediction(
    db: &Db<'_>,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Result<OpenPrediction, CloseError>, StoreError> {
    let conn = sqlite_or!(db, pg => pg::meta::close_prediction(pg, id, now));
    let row = conn
        .query_row(
            "SELECT created_us, delta_s, delta_c, learning_score, domain, closed_us
             FROM open_predictions WHERE id = ?1",
            [id.to_string()],
            |r| RawOpen::try_from(r),
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

/// An `open_predictions` row as read: created, ΔS, ΔC, L, domain, closed.
pub(crate) type RawOpen = (i64, f64, f64, f64, Option<String>, Option<i64>);

/// Whether the open prediction `id` (its row, if any) can be closed at `now`, and it if so.
pub(crate) fn closable(
    id: Uuid,
    row: Option<RawOpen>,
    now: DateTime<Utc>,
) -> Result<Result<OpenPrediction, CloseError>, StoreError> {
    let Some((created, delta_s, delta_c, learning_score, domain, closed)) = row else {
        return Ok(Err(CloseError::Unknown));
    };
    if closed.is_some() {
        return Ok(Err(CloseError::AlreadyClosed));
    }
    let created = from_us(created)?;
    if now - created > chrono::Duration::days(OPEN_PREDICTION_TTL_DAYS) {
        return Ok(Err(CloseError::Expired));
    }
    Ok(Ok(OpenPrediction {
        id,
        created,
        delta_s,
        delta_c,
        learning_score,
        domain: parse_domain(domain)?,
    }))
}

/// A stored float that must be finite (NaN and ±∞ mean the file is damaged).
fn finite(what: &str, v: f64) -> Result<f64, StoreError> {
    in_range(what, v, f64::MIN, f64::MAX)
}

/// λ from its stored λ_s; a value outside [0.1, 0.9] means the file is damaged.
pub(crate) fn stored_lambdas(s: f64) -> Result<Lambdas, StoreError> {
    Lambdas::new(s).map_err(|e| StoreError::Corrupt(format!("stored {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::meta::ResetScope;
    use crate::store::{DbPath, Store};

    fn event_at(t: DateTime<Utc>) -> Event {
        let l = Lambdas::pair(0.5, 0.5);
        Event {
            timestamp: t,
            event_type: EventType::LambdaAdjustment,
            prediction_error: None,
            lambda_before: l,
            lambda_after: l,
            accuracy_avg: None,
            escalated: false,
            domain: None,
            embedder_index: None,
            detail: String::new(),
        }
    }

    fn brute_count(db: &Db<'_>, since: DateTime<Utc>) -> usize {
        db.conn()
            .query_row(
                "SELECT count(*) FROM meta_events WHERE ts_us >= ?1",
                [to_us(since)],
                |r| r.get::<_, i64>(0),
            )
            .unwrap() as usize
    }

    /// Predictions over every embedder and none, with varied outcomes.
    fn predictions(n: usize) -> Vec<Prediction> {
        let t = DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        (0..n)
            .map(|k| Prediction {
                timestamp: t + chrono::Duration::seconds(k as i64),
                embedder_index: (k % 14 != 13).then_some((k % 14) as u8),
                predicted: (k % 10) as f64 / 10.0,
                actual: (k % 7) as f64 / 7.0,
                delta_s: Some(0.5),
                delta_c: Some(0.25),
                domain: None,
                ach_level: 0.001,
            })
            .collect()
    }

    /// `m` as stored: only λ_s is kept, and λ_c is read back as 1 − λ_s (which can differ from
    /// a computed λ_c in the last bit).
    fn as_stored(m: &MetaState) -> MetaState {
        let mut m = m.clone();
        m.lambdas = Lambdas::new(m.lambdas.s()).unwrap();
        m
    }

    #[test]
    fn state_saved_one_prediction_at_a_time_loads_back_exactly() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let mut m = MetaState::default();
        // 350 predictions: every window fills past its 100 values and wraps.
        for (k, p) in predictions(350).iter().enumerate() {
            m.record_prediction(p, p.timestamp);
            store
                .write(|db| save(db, &m, Windows::Prediction(p.embedder_index)))
                .unwrap();
            if k % 97 == 0 || k == 349 {
                assert_eq!(store.read(load).unwrap(), as_stored(&m), "after {k}");
            }
        }
        // A reset empties every window; Windows::All writes them all.
        m.reset(ResetScope::All, "test", Utc::now());
        store.write(|db| save(db, &m, Windows::All)).unwrap();
        assert_eq!(store.read(load).unwrap(), as_stored(&m));
    }

    #[test]
    fn every_reset_scope_leaves_the_stored_state_equal_to_the_state_in_memory() {
        for scope in ResetScope::ALL {
            let store = Store::open(&DbPath::Memory).unwrap();
            let mut m = MetaState::default();
            for p in predictions(150) {
                m.record_prediction(&p, p.timestamp);
                store
                    .write(|db| save(db, &m, Windows::Prediction(p.embedder_index)))
                    .unwrap();
            }
            let before = m.global.len();
            store
                .write(|db| reset_recorded(db, &mut m, scope, "test", "operator", Utc::now()))
                .unwrap();
            // Only `all` empties the windows; the others keep them, stored as they were.
            assert_eq!(m.global.is_empty(), scope == ResetScope::All, "{scope:?}");
            assert!(before > 0);
            assert_eq!(store.read(load).unwrap(), as_stored(&m), "{scope:?}");
        }
    }

    #[test]
    fn migration_7_moves_schema_6_windows_into_their_own_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v6.db");
        let mut m = MetaState::default();
        for p in predictions(250) {
            m.record_prediction(&p, p.timestamp);
        }
        {
            // A database as schema 6 wrote it: windows as blobs in the state row.
            let conn = rusqlite::Connection::open(&path).unwrap();
            for sql in &crate::store::sqlite::migrate::MIGRATIONS[..6] {
                conn.execute_batch(sql.sql).unwrap();
            }
            conn.execute_batch("PRAGMA user_version = 6").unwrap();
            let per: Vec<f64> = m
                .embedders
                .iter()
                .flat_map(|w| std::iter::once(w.len() as f64).chain(w.values()))
                .collect();
            conn.execute(
                "INSERT INTO meta_state VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    m.lambdas.s(),
                    m.interaction_count as i64,
                    i64::from(m.consecutive_low),
                    m.alert_active,
                    i64::from(m.bayesian_failures),
                    m.human_review_required,
                    m.adjustment_count as i64,
                    m.last_adjustment_at.map(to_us),
                    encode_f64s(m.global.values()),
                    encode_f64s(per.into_iter()),
                ],
            )
            .unwrap();
        }
        let store = Store::open(&DbPath::File(path)).unwrap();
        assert_eq!(store.read(load).unwrap(), as_stored(&m));
        let emptied: i64 = store
            .read(|db| {
                Ok::<_, StoreError>(db.conn().query_row(
                    "SELECT length(global_window) + length(embedder_windows) FROM meta_state",
                    [],
                    |r| r.get(0),
                )?)
            })
            .unwrap();
        assert_eq!(emptied, 0, "the old columns are emptied");
    }

    #[test]
    fn time_range_counts_agree_with_a_row_count() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let base = DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        // Events every 13 minutes over 30 hours, some on exact hour edges, some doubled.
        let events: Vec<Event> = (0..140)
            .flat_map(|k| {
                let t = base + chrono::Duration::minutes(13 * k);
                std::iter::repeat_n(event_at(t), 1 + (k as usize % 2))
            })
            .collect();
        store.write(|db| insert_events(db, &events)).unwrap();
        let at = |m: i64| Some(base + chrono::Duration::minutes(m));
        let edges = [
            None,
            at(-5),
            at(0),
            at(1),
            at(59),
            at(60),
            at(65),
            at(13 * 37),
            at(600),
            at(1819),
            at(5000),
        ];
        store
            .read(|db| {
                for start in edges {
                    for end in edges {
                        let brute: i64 = db.conn().query_row(
                            "SELECT count(*) FROM meta_events WHERE ts_us >= ?1 AND ts_us <= ?2",
                            params![start.map_or(i64::MIN, to_us), end.map_or(i64::MAX, to_us)],
                            |r| r.get(0),
                        )?;
                        assert_eq!(
                            count_events_between(db, start, end)? as i64,
                            brute,
                            "{start:?}..={end:?}"
                        );
                    }
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
    }

    #[test]
    fn hourly_counts_agree_with_a_row_count_before_and_after_retention() {
        let store = Store::open(&DbPath::Memory).unwrap();
        let base = DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        // 7 events every 17 minutes over 40 hours, some on exact hour edges.
        let events: Vec<Event> = (0..141)
            .flat_map(|k| {
                let t = base + chrono::Duration::minutes(17 * k);
                std::iter::repeat_n(event_at(t), 1 + (k as usize % 7))
            })
            .collect();
        store.write(|db| insert_events(db, &events)).unwrap();
        store
            .read(|db| {
                for minutes in [0, 1, 59, 60, 61, 17 * 40, 24 * 60, 30 * 60 + 7, 41 * 60] {
                    let since = base + chrono::Duration::minutes(minutes);
                    assert_eq!(
                        count_events_since(db, since)?,
                        brute_count(db, since),
                        "{since}"
                    );
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
        let cutoff = base + chrono::Duration::minutes(17 * 60 + 5);
        store.write(|db| delete_events_before(db, cutoff)).unwrap();
        store
            .read(|db| {
                for minutes in [0, 17 * 60, 17 * 60 + 5, 18 * 60, 30 * 60] {
                    let since = base + chrono::Duration::minutes(minutes);
                    assert_eq!(
                        count_events_since(db, since)?,
                        brute_count(db, since),
                        "{since}"
                    );
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
    }
}
