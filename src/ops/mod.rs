//! The operations: one function per use case that takes a transaction (a read one for the
//! blacklist check, else a write one), decides with the pure `service` (and matches with
//! `semantic`), persists through the `store`, and returns domain results. Tool handlers and
//! console commands both call these and only translate to and from their surface (JSON
//! arguments and answers; flags and tables), so a policy such as "every lift of a lesson is
//! recorded as an `OVERRIDE`" lives once, here, not in the store and not twice above it.
//!
//! Floor: above `store`, `service` and `semantic`, below `tools` and `console`
//! (`tests/architecture.rs`).

pub mod beliefs;
pub mod lessons;
pub mod meta;
pub mod outcomes;
pub mod projects;
