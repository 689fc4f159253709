//! `backup DEST` and `check`: work on the database file itself, without serving it and without
//! ever writing to it ([`crate::store::admin`]).

use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

use super::ConsoleError;
use super::out::{Out, Paint, bytes, progress};
use crate::store::DbPath;
use crate::store::admin;

/// `backup DEST`: a consistent copy made while servers run, with a progress bar on stderr when
/// it is a terminal.
///
/// # Errors
/// [`ConsoleError::Store`]: the source refused (not ours, damaged copy) or DEST exists or
/// cannot be written.
pub fn backup(src: &DbPath, dest: &Path, out: &mut Out) -> Result<(), ConsoleError> {
    // Name the missing folder itself, before the copy's temporary file inside it is tried.
    if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(ConsoleError::Usage(format!(
            "cannot back up to {}: the folder {} does not exist; create it first \
             (mkdir -p {}) or give another DEST",
            dest.display(),
            dir.display(),
            dir.display()
        )));
    }
    let bar = progress(0, "backup");
    let report = admin::backup(src, dest, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    let restarts = match report.restarts {
        0 => String::new(),
        n => format!(", restarted {n} times as servers wrote"),
    };
    out.line(&format!(
        "Backed up {} to {} ({}, {} pages{restarts}); the copy passed its integrity check.",
        src.display(),
        report.dest.display(),
        bytes(report.bytes),
        report.pages
    ))
}

/// The `check --json` object.
#[derive(Debug, Serialize)]
struct CheckJson<'a> {
    path: String,
    bytes: u64,
    schema_version: i64,
    healthy: bool,
    integrity: &'a [String],
    values_checked: bool,
    values: &'a [String],
}

/// `check`: exit 0 healthy, 1 damaged (with what was found); errors (not ours, missing) are
/// exit 2 through the caller.
///
/// # Errors
/// [`ConsoleError::Store`] when the file cannot be checked at all.
pub fn check(path: &DbPath, json: bool, out: &mut Out) -> Result<ExitCode, ConsoleError> {
    let r = admin::check(path)?;
    let code = if r.healthy() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    if json {
        out.json(&CheckJson {
            path: r.path.display().to_string(),
            bytes: r.bytes,
            schema_version: r.schema_version,
            healthy: r.healthy(),
            integrity: &r.integrity,
            values_checked: r.values_checked,
            values: &r.values,
        })?;
        return Ok(code);
    }
    out.field(
        "Database",
        &format!(
            "{} ({}, SQLite schema version {})",
            r.path.display(),
            bytes(r.bytes),
            r.schema_version
        ),
    )?;
    if r.integrity.is_empty() {
        out.field("Integrity", &out.paint(Paint::Good, "ok"))?;
    } else {
        out.field("Integrity", &out.paint(Paint::Bad, "DAMAGED"))?;
        for line in &r.integrity {
            out.line(&format!("  {line}"))?;
        }
    }
    if !r.values_checked {
        let why = if r.integrity.is_empty() {
            "not checked: the schema is older than this binary's (a server migrates it on start)"
        } else {
            "not checked: the file is damaged"
        };
        out.field("Values", why)?;
    } else if r.values.is_empty() {
        out.field("Values", &out.paint(Paint::Good, "all in range"))?;
    } else {
        out.field("Values", &out.paint(Paint::Bad, "OUT OF RANGE"))?;
        for line in &r.values {
            out.line(&format!("  {line}"))?;
        }
    }
    if !r.healthy() {
        out.line(
            "Nothing was written to the file. Stop every meta-utl-mcp using it, then restore \
             a backup, or salvage what is readable with `sqlite3 FILE .recover`.",
        )?;
    }
    Ok(code)
}
