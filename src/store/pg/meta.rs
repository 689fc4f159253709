//! PostgreSQL twin of `store/meta.rs`: the meta-learning state, the event log with its hourly
//! counts, recorded predictions and open predictions. Rows are decoded and checked by the
//! functions of `rows/meta.rs`, so both backends accept and refuse the same stored values.

use chrono::{DateTime, Utc};
use postgres::types::ToSql;
use uuid::Uuid;

use super::{Pg, columns, get};
use crate::service::meta::{Event, MetaState, Prediction, WINDOW};
use crate::service::vocab::Domain;
use crate::store::rows::meta::{
    CloseError, EventQuery, HOUR_US, OpenPrediction, RawEvent, RawOpen, RawPrediction, RawState,
    Windows, closable, count_between, encode_f64s, event_from_raw, prediction_from_raw,
    state_from_rows, windows_to_write,
};
use crate::store::{StoreError, to_us};

/// [`crate::store::meta::load`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure or an unreadable row.
pub fn load(pg: &Pg) -> Result<MetaState, StoreError> {
    let row = pg.query_opt(
        "SELECT lambda_s, interaction_count, consecutive_low, alert_active, bayesian_failures,
                human_review, adjustment_count, last_adjustment_us
         FROM meta_state WHERE id = 1",
        &[],
    )?;
    let Some(r) = row else {
        return Ok(MetaState::default());
    };
    let scalar = RawState::read(&r)?;
    let windows = pg
        .query(r#"SELECT "window", vals FROM meta_windows"#, &[])?
        .iter()
        .map(columns)
        .collect::<Result<Vec<_>, StoreError>>()?;
    state_from_rows(scalar, windows)
}

/// [`crate::store::meta::save`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn save(pg: &Pg, m: &MetaState, windows: Windows) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO meta_state (id, lambda_s, interaction_count, consecutive_low, alert_active,
             bayesian_failures, human_review, adjustment_count, last_adjustment_us)
         VALUES (1, $1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (id) DO UPDATE SET lambda_s = $1, interaction_count = $2,
             consecutive_low = $3, alert_active = $4, bayesian_failures = $5, human_review = $6,
             adjustment_count = $7, last_adjustment_us = $8",
        &[
            &m.lambdas.s(),
            &(m.interaction_count as i64),
            &i64::from(m.consecutive_low),
            &m.alert_active,
            &i64::from(m.bayesian_failures),
            &m.human_review_required,
            &(m.adjustment_count as i64),
            &m.last_adjustment_at.map(to_us),
        ],
    )?;
    for (id, w) in windows_to_write(m, windows) {
        pg.execute(
            r#"INSERT INTO meta_windows ("window", vals) VALUES ($1, $2)
               ON CONFLICT ("window") DO UPDATE SET vals = $2"#,
            &[&(id as i64), &encode_f64s(w.values())],
        )?;
    }
    Ok(())
}

/// [`crate::store::meta::insert_events`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn insert_events(pg: &Pg, events: &[Event]) -> Result<(), StoreError> {
    for e in events {
        pg.execute(
            "INSERT INTO meta_event_hours (hour, n) VALUES ($1, 1)
             ON CONFLICT (hour) DO UPDATE SET n = meta_event_hours.n + 1",
            &[&to_us(e.timestamp).div_euclid(HOUR_US)],
        )?;
        pg.execute(
            "INSERT INTO meta_events (ts_us, event_type, domain, embedder_index,
                 prediction_error, lambda_s_before, lambda_s_after, accuracy_avg, escalated,
                 detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                &to_us(e.timestamp),
                &e.event_type.as_str(),
                &e.domain.map(Domain::as_str),
                &e.embedder_index.map(i64::from),
                &e.prediction_error,
                &e.lambda_before.s(),
                &e.lambda_after.s(),
                &e.accuracy_avg,
                &e.escalated,
                &e.detail,
            ],
        )?;
    }
    Ok(())
}

/// [`crate::store::meta::import_events`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn import_events(pg: &Pg, events: &[Event]) -> Result<usize, StoreError> {
    let mut fresh = Vec::new();
    for e in events {
        let row = pg.query_one(
            "SELECT EXISTS (SELECT 1 FROM meta_events
                            WHERE event_type = $1 AND ts_us = $2 AND detail = $3)",
            &[&e.event_type.as_str(), &to_us(e.timestamp), &e.detail],
        )?;
        if !get::<bool>(&row, 0)? {
            fresh.push(e.clone());
        }
    }
    insert_events(pg, &fresh)?;
    Ok(fresh.len())
}

/// [`crate::store::meta::query_events`] on PostgreSQL: only the filters in use appear in the
/// SQL, so the planner picks the matching index.
///
/// # Errors
/// [`StoreError`] on failure or an unreadable row.
pub fn query_events(pg: &Pg, q: &EventQuery) -> Result<(Vec<Event>, usize), StoreError> {
    let mut clauses: Vec<String> = Vec::new();
    let mut values: Vec<Box<dyn ToSql + Sync>> = Vec::new();
    let mut add = |clause: &str, v: Box<dyn ToSql + Sync>| {
        values.push(v);
        clauses.push(format!("{clause} ${}", values.len()));
    };
    if let Some(start) = q.start {
        add("ts_us >=", Box::new(to_us(start)));
    }
    if let Some(end) = q.end {
        add("ts_us <=", Box::new(to_us(end)));
    }
    if let Some(t) = q.event_type {
        add("event_type =", Box::new(t.as_str()));
    }
    if let Some(d) = q.domain {
        add("domain =", Box::new(d.as_str()));
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|b| b.as_ref()).collect();
    let total: i64 = if q.event_type.is_none() && q.domain.is_none() {
        count_events_between(pg, q.start, q.end)? as i64
    } else {
        let rows = pg.query_built(
            &format!("SELECT count(*) FROM meta_events {filter}"),
            &params,
        )?;
        get(&rows[0], 0)?
    };
    let (limit, offset) = (
        q.limit.min(i64::MAX as usize) as i64,
        q.offset.min(i64::MAX as usize) as i64,
    );
    let n = params.len();
    let mut params = params;
    params.push(&limit);
    params.push(&offset);
    let rows = pg.query_built(
        &format!(
            "SELECT ts_us, event_type, domain, embedder_index, prediction_error, lambda_s_before,
                    lambda_s_after, accuracy_avg, escalated, detail
             FROM meta_events {filter}
             ORDER BY ts_us DESC, id DESC LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        ),
        &params,
    )?;
    let events = rows
        .iter()
        .map(|r| event_from_raw(RawEvent::read(r)?))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((events, total as usize))
}

/// [`crate::store::meta::count_events_between`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn count_events_between(
    pg: &Pg,
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
) -> Result<usize, StoreError> {
    count_between(
        start,
        end,
        |a, b| {
            let row = pg.query_one(
                "SELECT count(*) FROM meta_events WHERE ts_us >= $1 AND ts_us <= $2",
                &[&a, &b],
            )?;
            get(&row, 0)
        },
        |first, last| {
            let row = pg.query_one(
                "SELECT coalesce(sum(n), 0)::BIGINT FROM meta_event_hours
                 WHERE hour >= $1 AND hour <= $2",
                &[&first, &last],
            )?;
            get(&row, 0)
        },
    )
}

/// [`crate::store::meta::delete_events_before`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn delete_events_before(pg: &Pg, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
    let cutoff = to_us(cutoff);
    let deleted = pg.execute("DELETE FROM meta_events WHERE ts_us < $1", &[&cutoff])?;
    if deleted > 0 {
        // Whole hours before the cutoff are gone; the cutoff's own hour is recounted.
        let hour = cutoff.div_euclid(HOUR_US);
        pg.execute("DELETE FROM meta_event_hours WHERE hour <= $1", &[&hour])?;
        pg.execute(
            "INSERT INTO meta_event_hours (hour, n)
             SELECT $1, count(*) FROM meta_events WHERE ts_us >= $2 AND ts_us < $3
             HAVING count(*) > 0",
            &[&hour, &(hour * HOUR_US), &((hour + 1) * HOUR_US)],
        )?;
    }
    Ok(deleted as usize)
}

/// [`crate::store::meta::insert_prediction`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn insert_prediction(pg: &Pg, p: &Prediction, source: Option<Uuid>) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO predictions (ts_us, embedder_index, predicted, actual, delta_s, delta_c,
             domain, ach_level, source_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &to_us(p.timestamp),
            &p.embedder_index.map(i64::from),
            &p.predicted,
            &p.actual,
            &p.delta_s,
            &p.delta_c,
            &p.domain.map(Domain::as_str),
            &p.ach_level,
            &source.map(|u| u.to_string()),
        ],
    )?;
    Ok(())
}

/// [`crate::store::meta::replay_window`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure or an unreadable row.
pub fn replay_window(pg: &Pg, domain: Option<Domain>) -> Result<Vec<Prediction>, StoreError> {
    let rows = pg.query(
        "SELECT ts_us, embedder_index, predicted, actual, delta_s, delta_c, domain, ach_level
         FROM predictions WHERE ($1::TEXT IS NULL OR domain = $1)
         ORDER BY id DESC LIMIT $2",
        &[&domain.map(Domain::as_str), &(WINDOW as i64)],
    )?;
    let mut out = rows
        .iter()
        .map(|r| prediction_from_raw(RawPrediction::read(r)?))
        .collect::<Result<Vec<_>, _>>()?;
    out.reverse();
    Ok(out)
}

/// [`crate::store::meta::open_prediction`] on PostgreSQL.
///
/// # Errors
/// [`StoreError`] on failure.
pub fn open_prediction(pg: &Pg, p: &OpenPrediction) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO open_predictions (id, created_us, delta_s, delta_c, learning_score, domain)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &p.id.to_string(),
            &to_us(p.created),
            &p.delta_s,
            &p.delta_c,
            &p.learning_score,
            &p.domain.map(Domain::as_str),
        ],
    )?;
    Ok(())
}

/// [`crate::store::meta::close_prediction`] on PostgreSQL.
///
/// # Errors
/// `Ok(Err(CloseError))` when unknown, closed or expired; [`StoreError`] on failure.
pub fn close_prediction(
    pg: &Pg,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Result<OpenPrediction, CloseError>, StoreError> {
    let row = pg.query_opt(
        "SELECT created_us, delta_s, delta_c, learning_score, domain, closed_us
         FROM open_predictions WHERE id = $1",
        &[&id.to_string()],
    )?;
    let raw = row.as_ref().map(RawOpen::read).transpose()?;
    let open = match closable(id, raw, now)? {
        Ok(open) => open,
        Err(e) => return Ok(Err(e)),
    };
    pg.execute(
        "UPDATE open_predictions SET closed_us = $2 WHERE id = $1",
        &[&id.to_string(), &to_us(now)],
    )?;
    Ok(Ok(open))
}
