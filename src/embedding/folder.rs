//! The sentence-transformers folder layout: which files a model needs, and what its
//! configuration files say, read and checked without touching the weights.
//!
//! ```text
//! all-MiniLM-L6-v2/
//!   config.json                  BERT hyper-parameters (hidden_size, layers, heads, …)
//!   tokenizer.json               the Hugging Face tokenizers pipeline (WordPiece for BERT)
//!   model.safetensors            the weights (f32)
//!   1_Pooling/config.json        pooling_mode_* switches and word_embedding_dimension
//!   modules.json                 optional: Transformer → Pooling (→ Normalize) pipeline
//!   sentence_bert_config.json    optional: max_seq_length (256 for all-MiniLM-L6-v2)
//! ```

use std::path::Path;

use candle_transformers::models::bert;
use serde_json::Value;

use super::EmbeddingError;

/// The BERT configuration file.
pub(crate) const CONFIG: &str = "config.json";
/// The tokenizer file.
pub(crate) const TOKENIZER: &str = "tokenizer.json";
/// The weights file.
pub(crate) const WEIGHTS: &str = "model.safetensors";
/// The pooling configuration when `modules.json` does not say otherwise.
pub(crate) const POOLING_CONFIG: &str = "1_Pooling/config.json";
/// The module pipeline.
pub(crate) const MODULES: &str = "modules.json";
/// The sentence-transformers settings (`max_seq_length`, `do_lower_case`).
pub(crate) const SBERT_CONFIG: &str = "sentence_bert_config.json";

/// Files a model folder must have, relative to it, with what each is for.
pub(crate) const REQUIRED: &[(&str, &str)] = &[
    (CONFIG, "the BERT configuration"),
    (TOKENIZER, "the tokenizer"),
    (WEIGHTS, "the weights"),
    (POOLING_CONFIG, "the pooling configuration"),
];

/// Files of the layout that are copied on install when present, and otherwise ignored.
pub(crate) const OPTIONAL: &[&str] = &[
    MODULES,
    SBERT_CONFIG,
    "config_sentence_transformers.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "vocab.txt",
];

/// The module types of `modules.json` this crate reproduces. A pipeline with any other
/// module (a `Dense` projection, say) would give different vectors, so it is refused.
const TRANSFORMER: &str = "sentence_transformers.models.Transformer";
const POOLING: &str = "sentence_transformers.models.Pooling";
const NORMALIZE: &str = "sentence_transformers.models.Normalize";

/// A model folder whose configuration files have been read and checked.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// `config.json`.
    pub bert: bert::Config,
    /// The longest input in tokens, `[CLS]` and `[SEP]` included; longer inputs are cut.
    pub max_seq_length: usize,
    /// Whether sentence-transformers lower-cases the text before tokenising
    /// (`do_lower_case`; false for all-MiniLM-L6-v2, whose tokenizer lower-cases itself).
    pub lowercase: bool,
    /// The embedding dimension (`hidden_size`, equal to the pooling's
    /// `word_embedding_dimension`).
    pub dimension: usize,
}

impl Layout {
    /// Reads and checks the configuration of the model folder `dir`.
    ///
    /// # Errors
    /// [`EmbeddingError::NoModelDir`] when `dir` is not a folder,
    /// [`EmbeddingError::MissingFile`] naming the first required file that is absent,
    /// [`EmbeddingError::BadConfig`] for unreadable JSON, a missing field, an unsupported module
    /// or inconsistent sizes, [`EmbeddingError::UnsupportedPooling`] for anything but mean
    /// pooling.
    pub fn read(dir: &Path) -> Result<Layout, EmbeddingError> {
        if !dir.is_dir() {
            return Err(EmbeddingError::NoModelDir {
                path: dir.to_path_buf(),
            });
        }
        let modules = match read_optional(&dir.join(MODULES))? {
            Some(text) => Some(parse_modules(&dir.join(MODULES), &text)?),
            None => None,
        };
        let pooling_rel = match &modules {
            Some(m) => format!("{}/config.json", m.pooling_path),
            None => POOLING_CONFIG.to_string(),
        };
        for (rel, what) in REQUIRED {
            let rel = if *rel == POOLING_CONFIG {
                pooling_rel.as_str()
            } else {
                rel
            };
            let path = dir.join(rel);
            if !path.is_file() {
                return Err(EmbeddingError::MissingFile { path, what });
            }
        }
        let config_path = dir.join(CONFIG);
        let bert = parse_bert_config(&config_path, &read(&config_path)?)?;
        let pooling_path = dir.join(&pooling_rel);
        let pooled_dim = parse_pooling(&pooling_path, &read(&pooling_path)?)?;
        if pooled_dim != bert.hidden_size {
            return Err(EmbeddingError::config(
                pooling_path,
                format!(
                    "word_embedding_dimension is {pooled_dim} but {CONFIG} has hidden_size {}",
                    bert.hidden_size
                ),
            ));
        }
        let sbert_path = dir.join(SBERT_CONFIG);
        let sbert = match read_optional(&sbert_path)? {
            Some(text) => parse_sbert_config(&sbert_path, &text)?,
            None => SbertConfig::default(),
        };
        let max_seq_length = sbert.max_seq_length.unwrap_or(bert.max_position_embeddings);
        if max_seq_length < 2 || max_seq_length > bert.max_position_embeddings {
            return Err(EmbeddingError::config(
                sbert_path,
                format!(
                    "max_seq_length {max_seq_length} is outside 2..={} (max_position_embeddings)",
                    bert.max_position_embeddings
                ),
            ));
        }
        Ok(Layout {
            dimension: bert.hidden_size,
            bert,
            max_seq_length,
            lowercase: sbert.do_lower_case,
        })
    }
}

/// The text of a file that must exist.
fn read(path: &Path) -> Result<String, EmbeddingError> {
    std::fs::read_to_string(path).map_err(|e| EmbeddingError::io(path, e))
}

/// The text of a file that may be absent.
fn read_optional(path: &Path) -> Result<Option<String>, EmbeddingError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EmbeddingError::io(path, e)),
    }
}

fn parse_json(path: &Path, text: &str) -> Result<Value, EmbeddingError> {
    serde_json::from_str(text).map_err(|e| EmbeddingError::config(path, e.to_string()))
}

/// `config.json` as candle's BERT configuration; only `model_type` `"bert"` (or none) is
/// accepted, since the weights are loaded as a BERT encoder.
fn parse_bert_config(path: &Path, text: &str) -> Result<bert::Config, EmbeddingError> {
    let config: bert::Config =
        serde_json::from_str(text).map_err(|e| EmbeddingError::config(path, e.to_string()))?;
    if let Some(kind) = config.model_type.as_deref()
        && kind != "bert"
    {
        return Err(EmbeddingError::config(
            path,
            format!("model_type is {kind:?}; only BERT encoders are supported"),
        ));
    }
    if config.hidden_size == 0
        || config.num_attention_heads == 0
        || !config
            .hidden_size
            .is_multiple_of(config.num_attention_heads)
    {
        return Err(EmbeddingError::config(
            path,
            format!(
                "hidden_size {} is not a positive multiple of num_attention_heads {}",
                config.hidden_size, config.num_attention_heads
            ),
        ));
    }
    Ok(config)
}

/// The pooling configuration: returns `word_embedding_dimension` when mean pooling is the one
/// mode switched on.
///
/// Every `pooling_mode_*` key set to `true` counts as a mode (`cls_token`, `mean_tokens`,
/// `max_tokens`, `mean_sqrt_len_tokens`, `weightedmean_tokens`, `lasttoken`, …), so a mode
/// added by a later sentence-transformers version is refused rather than ignored.
pub(crate) fn parse_pooling(path: &Path, text: &str) -> Result<usize, EmbeddingError> {
    let value = parse_json(path, text)?;
    let Some(object) = value.as_object() else {
        return Err(EmbeddingError::config(path, "not a JSON object"));
    };
    let mut modes: Vec<&str> = object
        .iter()
        .filter(|(_, v)| v.as_bool() == Some(true))
        .filter_map(|(k, _)| k.strip_prefix("pooling_mode_"))
        .collect();
    modes.sort_unstable();
    if modes != ["mean_tokens"] {
        let found = if modes.is_empty() {
            "no".to_string()
        } else {
            modes.join(" + ")
        };
        return Err(EmbeddingError::UnsupportedPooling {
            path: path.to_path_buf(),
            found,
        });
    }
    object
        .get("word_embedding_dimension")
        .and_then(Value::as_u64)
        .and_then(|d| usize::try_from(d).ok())
        .filter(|&d| d > 0)
        .ok_or_else(|| {
            EmbeddingError::config(path, "word_embedding_dimension is missing or not positive")
        })
}

/// What `modules.json` tells: where the pooling configuration lives.
#[derive(Debug, PartialEq)]
pub(crate) struct Modules {
    /// The pooling module's folder, relative to the model folder (`1_Pooling`).
    pub pooling_path: String,
}

/// `modules.json`: exactly a Transformer at the root, then a Pooling, then optionally a
/// Normalize (which this crate always applies).
pub(crate) fn parse_modules(path: &Path, text: &str) -> Result<Modules, EmbeddingError> {
    let value = parse_json(path, text)?;
    let Some(list) = value.as_array() else {
        return Err(EmbeddingError::config(path, "not a JSON array"));
    };
    let mut kinds = Vec::with_capacity(list.len());
    let mut pooling_path = None;
    for module in list {
        let kind = module.get("type").and_then(Value::as_str).unwrap_or("");
        let module_path = module.get("path").and_then(Value::as_str).unwrap_or("");
        match kind {
            TRANSFORMER if !module_path.is_empty() => {
                return Err(EmbeddingError::config(
                    path,
                    format!("the Transformer module is in {module_path:?}; only \"\" is supported"),
                ));
            }
            POOLING => {
                if module_path.is_empty()
                    || module_path.contains("..")
                    || Path::new(module_path).is_absolute()
                {
                    return Err(EmbeddingError::config(
                        path,
                        format!("the Pooling module path {module_path:?} is not a subfolder"),
                    ));
                }
                pooling_path = Some(module_path.to_string());
            }
            TRANSFORMER | NORMALIZE => {}
            other => {
                return Err(EmbeddingError::config(
                    path,
                    format!(
                        "module type {other:?} is not supported (only Transformer, Pooling, \
                         Normalize)"
                    ),
                ));
            }
        }
        kinds.push(kind);
    }
    let pipeline_ok = matches!(
        kinds.as_slice(),
        [TRANSFORMER, POOLING] | [TRANSFORMER, POOLING, NORMALIZE]
    );
    match pooling_path {
        Some(pooling_path) if pipeline_ok => Ok(Modules { pooling_path }),
        _ => Err(EmbeddingError::config(
            path,
            "the pipeline must be Transformer, Pooling and optionally Normalize, in that order",
        )),
    }
}

/// The fields of `sentence_bert_config.json` that change the vectors.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct SbertConfig {
    /// Inputs are cut to this many tokens, special tokens included.
    pub max_seq_length: Option<usize>,
    /// Lower-case the text before tokenising.
    pub do_lower_case: bool,
}

pub(crate) fn parse_sbert_config(path: &Path, text: &str) -> Result<SbertConfig, EmbeddingError> {
    let value = parse_json(path, text)?;
    let max_seq_length = match value.get("max_seq_length") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    EmbeddingError::config(path, "max_seq_length is not a whole number")
                })?,
        ),
    };
    let do_lower_case = value
        .get("do_lower_case")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(SbertConfig {
        max_seq_length,
        do_lower_case,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("m/1_Pooling/config.json")
    }

    #[test]
    fn mean_pooling_is_accepted_with_its_dimension() {
        let text = r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": false,
            "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
            "pooling_mode_mean_sqrt_len_tokens": false}"#;
        assert_eq!(parse_pooling(p(), text).unwrap(), 384);
    }

    #[test]
    fn other_pooling_modes_are_refused_by_name() {
        for (text, want) in [
            (
                r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": true,
                    "pooling_mode_mean_tokens": false}"#,
                "cls_token",
            ),
            (
                r#"{"word_embedding_dimension": 384, "pooling_mode_max_tokens": true,
                    "pooling_mode_mean_tokens": true}"#,
                "max_tokens + mean_tokens",
            ),
            (r#"{"word_embedding_dimension": 384}"#, "no"),
        ] {
            match parse_pooling(p(), text) {
                Err(EmbeddingError::UnsupportedPooling { found, path }) => {
                    assert_eq!(found, want);
                    assert_eq!(path, p());
                }
                other => panic!("{text}: expected UnsupportedPooling, got {other:?}"),
            }
        }
    }

    #[test]
    fn pooling_without_a_dimension_is_a_config_error() {
        let err = parse_pooling(p(), r#"{"pooling_mode_mean_tokens": true}"#).unwrap_err();
        assert!(
            err.to_string().contains("word_embedding_dimension"),
            "{err}"
        );
        let err = parse_pooling(p(), "[1").unwrap_err();
        assert!(matches!(err, EmbeddingError::BadConfig { .. }), "{err:?}");
    }

    #[test]
    fn modules_give_the_pooling_folder_and_refuse_extra_layers() {
        let path = Path::new("m/modules.json");
        let ok = r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
            {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
            {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]"#;
        assert_eq!(
            parse_modules(path, ok).unwrap(),
            Modules {
                pooling_path: "1_Pooling".into()
            }
        );
        let dense = r#"[{"path":"","type":"sentence_transformers.models.Transformer"},
            {"path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
            {"path":"2_Dense","type":"sentence_transformers.models.Dense"}]"#;
        let err = parse_modules(path, dense).unwrap_err();
        assert!(err.to_string().contains("models.Dense"), "{err}");
        let escape = r#"[{"path":"","type":"sentence_transformers.models.Transformer"},
            {"path":"../x","type":"sentence_transformers.models.Pooling"}]"#;
        assert!(parse_modules(path, escape).is_err());
        let no_pooling = r#"[{"path":"","type":"sentence_transformers.models.Transformer"}]"#;
        assert!(parse_modules(path, no_pooling).is_err());
    }

    #[test]
    fn sbert_config_reads_length_and_case() {
        let path = Path::new("m/sentence_bert_config.json");
        assert_eq!(
            parse_sbert_config(path, r#"{"max_seq_length": 256, "do_lower_case": false}"#).unwrap(),
            SbertConfig {
                max_seq_length: Some(256),
                do_lower_case: false
            }
        );
        assert_eq!(
            parse_sbert_config(path, "{}").unwrap(),
            SbertConfig::default()
        );
        assert!(parse_sbert_config(path, r#"{"max_seq_length": -3}"#).is_err());
    }
}
