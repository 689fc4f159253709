//! The backend-neutral half of each store family: named row shapes, the decoders that turn
//! them into domain values (with their range checks), and query text both backends run as is.
//! `sqlite/` and `pg/` import from here and never from each other.

pub(crate) mod admin;
pub(crate) mod atc;
pub(crate) mod attempts;
pub(crate) mod beliefs;
pub(crate) mod directives;
pub(crate) mod lesson_vectors;
pub(crate) mod lessons;
pub(crate) mod meta;
pub(crate) mod projects;
pub(crate) mod request_keys;
pub(crate) mod vertices;
