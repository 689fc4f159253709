//! The backend-neutral half of each store family: named row shapes, the decoders that turn
//! them into domain values (with their range checks), and query text both backends run as is.
//! `sqlite/` and `pg/` import from here and never from each other.

pub(crate) mod admin;
pub(crate) mod atc;
pub(crate) mod attempts;
pub(crate) mod beliefs;
pub(crate) mod delta_sc;
pub(crate) mod directives;
pub(crate) mod lesson_vectors;
pub(crate) mod lessons;
pub(crate) mod meta;
pub(crate) mod outcomes;
pub(crate) mod projects;
pub(crate) mod recurrences;
pub(crate) mod request_keys;

/// One stored row as a backend reads it, column by index (0-based): what the named `Raw*`
/// shapes are built from, so that each shape's column order is written once, next to the
/// shape, for both backends. `sqlite/` implements it for `rusqlite::Row`, `pg/` for
/// `postgres::Row`; a column that does not convert is the backend's own error.
pub(crate) trait StoredRow {
    /// The backend's error for a column that is missing or does not convert.
    type Error;
    /// Column `i` as an integer.
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    /// Column `i` as an integer or NULL.
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Self::Error>;
    /// Column `i` as a float.
    fn real(&self, i: usize) -> Result<f64, Self::Error>;
    /// Column `i` as a float or NULL.
    fn opt_real(&self, i: usize) -> Result<Option<f64>, Self::Error>;
    /// Column `i` as text.
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    /// Column `i` as text or NULL.
    fn opt_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    /// Column `i` as a boolean.
    fn flag(&self, i: usize) -> Result<bool, Self::Error>;
    /// Column `i`, a small integer (0–255) or NULL, as `u8`; `what` names it in the error of
    /// a backend that reports the range itself.
    fn opt_small(&self, i: usize, what: &str) -> Result<Option<u8>, Self::Error>;
}
