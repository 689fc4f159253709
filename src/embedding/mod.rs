//! Local sentence embeddings: a BERT encoder in the sentence-transformers folder layout run on
//! the CPU with candle, mean pooling and L2 normalisation.
//!
//! This module reads model files, so it sits beside [`crate::service`] (which
//! does no I/O), not inside it. It never touches the network.
//!
//! - [`Embedder`] (`encoder.rs`): load a model folder, embed texts to unit vectors.
//! - `pooling.rs`: mean pooling over the attention mask, L2 normalisation.
//! - `folder.rs`: the layout's files and configuration checks.
//! - [`EmbeddingError`] (`error.rs`): every failure, naming the path at fault.
//!
//! The default model is all-MiniLM-L6-v2 (384 dimensions, inputs cut at 256 tokens, 90 MB
//! of f32 weights, Apache-2.0). Its vectors match Python sentence-transformers' to 1e-4
//! (`tests/embedding.rs` against `tests/data/embedding_reference.json`).

mod encoder;
mod error;
mod folder;
pub mod pooling;

pub use encoder::{BATCH_SIZE, Embedder};
pub use error::EmbeddingError;

/// Environment variable naming a model folder; the tests that need real weights read it.
pub const MODEL_ENV: &str = "META_UTL_EMBEDDING_MODEL";
