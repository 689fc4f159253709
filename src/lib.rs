//! meta-utl-mcp: a stdio MCP server that gives coding agents a memory that corrects itself.
//!
//! Modules in reading order:
//! - [`server`]: the stdio loop (read line → decode → dispatch → write one line); the only
//!   writer of stdout.
//! - [`protocol`]: JSON-RPC 2.0 framing and the MCP lifecycle messages.
//! - [`tools`]: the tool registry, argument parsing, and one file per tool family.
//! - [`ops`]: the operations tools and the console share (load, decide, persist); policy
//!   such as "a lifted lesson is recorded as an `OVERRIDE`" lives here once.
//! - [`project`]: which project (git remote, repository or folder) the server's rows belong to.
//! - [`files`]: replacing a file whole (the console's outputs) and resolving a path as `--db` is.
//! - [`service`]: the `MetaLearningService` facade and the numerics (no I/O, no JSON, no SQL).
//! - [`store`]: persistence in SQLite (one machine) or PostgreSQL (a team); the only module
//!   with SQL.
//! - [`semantic`]: the embedding matcher at run time (model loading, back-fill, the
//!   related-lessons index); off without a model.
//! - [`console`]: the operator's console (`status`, `lessons`, `export`, `report`, …), the
//!   subcommands a person runs; reads and writes through the same transactions as the tools.
//! - `embedding` (feature `embedding`): local sentence embeddings (BERT on the CPU) and installing the model; reads
//!   model files, and downloads only for `model install` from the Hugging Face hub (the
//!   server never downloads).

pub mod console;
#[cfg(feature = "embedding")]
pub mod embedding;
pub mod files;
pub mod ops;
pub mod project;
pub mod protocol;
pub mod semantic;
pub mod server;
pub mod service;
pub mod store;
pub mod tools;
