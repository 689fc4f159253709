//! meta-utl-mcp: a stdio MCP server that gives coding agents a memory that corrects itself.
//!
//! Modules from the top floor down (the layer order `tests/architecture.rs` holds: a module
//! never names one above it; ARCHITECTURE.md is the map):
//! - [`hooks`]: the Claude Code plugin's hooks (`meta-utl-mcp hook EVENT`): recall at the
//!   moment of action and failed attempts recorded.
//! - [`console`]: the operator's subcommands (`status`, `lessons`, `export`, `report`, …);
//!   reads and writes through the tools' own transactions.
//! - [`server`]: the stdio loop (read a line → decode → schedule → answer → write and flush),
//!   the write executor (group commit), the memory budget, signals; the only writer of stdout.
//! - [`tools`]: the tool traits, the registry and profiles, the dispatcher `App`, the wire
//!   types, and one file or folder per tool family.
//! - [`ops`]: the operations tools and the console share (load, decide, persist); policy
//!   such as "a lifted lesson is recorded as an `OVERRIDE`" lives here once.
//! - [`semantic`]: the embedding matcher at run time (model loading, back-fill, the
//!   related-lessons index); off without a model.
//! - `embedding` (feature `embedding`): local sentence embeddings (BERT on the CPU) and
//!   installing the model; reads model files, and downloads only for `model install`.
//! - [`store`]: persistence in SQLite (one machine) or PostgreSQL (a team); the only module
//!   with SQL.
//! - [`project`]: which project (git remote, repository or folder) the server's rows belong
//!   to.
//! - [`files`]: replacing a file whole (the console's outputs) and resolving a path as `--db`
//!   is.
//! - [`service`]: the `MetaLearningService` facade and the numerics (no I/O, no JSON, no SQL).
//! - [`protocol`]: JSON-RPC 2.0 framing and the MCP lifecycle messages.

pub mod console;
#[cfg(feature = "embedding")]
pub mod embedding;
pub mod files;
pub mod hooks;
pub mod ops;
pub mod project;
pub mod protocol;
pub mod semantic;
pub mod server;
pub mod service;
pub mod store;
pub mod tools;
