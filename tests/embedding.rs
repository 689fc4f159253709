//! The embedding engine: vectors against Python sentence-transformers (needs the real weights,
//! found through `META_UTL_EMBEDDING_MODEL`), the pipeline's invariants on a tiny random BERT
//! built here, and load errors.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::bert::{BertModel, Config};
use meta_utl_mcp::embedding::{Embedder, EmbeddingError, MODEL_ENV};
use serde_json::{Value, json};

/// Largest difference allowed between a component of our vector and the reference's.
const MAX_COMPONENT_DIFF: f32 = 1e-4;
/// Smallest cosine similarity allowed between our vector and the reference's.
const MIN_COSINE: f32 = 0.9999;
/// How far apart the same text's vector may be across batches (f32 summation order only).
const BATCH_TOLERANCE: f32 = 1e-5;

/// The real model folder, or `None` after saying on the test's stderr that the test is skipped.
/// Written to the stderr handle itself, so the line shows even when the test passes.
fn real_model(test: &str) -> Option<PathBuf> {
    match std::env::var_os(MODEL_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "{test}: skipped: no embedding model (set {MODEL_ENV}, see scripts/fetch_model.sh)"
            );
            None
        }
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f32]) -> f32 {
    dot(a, a).sqrt()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

// ---------------------------------------------------------------------------------------------
// Against the reference implementation

#[test]
fn vectors_match_sentence_transformers() {
    let Some(dir) = real_model("vectors_match_sentence_transformers") else {
        return;
    };
    let fixture: Value = serde_json::from_str(include_str!("data/embedding_reference.json"))
        .expect("fixture is JSON");
    let embedder = Embedder::load(&dir).expect("the model in META_UTL_EMBEDDING_MODEL loads");
    assert_eq!(
        embedder.dimension(),
        fixture["dimension"].as_u64().unwrap() as usize
    );
    assert_eq!(
        embedder.max_seq_length(),
        fixture["max_seq_length"].as_u64().unwrap() as usize
    );

    let entries = fixture["sentences"].as_array().unwrap();
    let texts: Vec<&str> = entries
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let got = embedder.embed(&texts).expect("embed");
    assert_eq!(got.len(), texts.len());

    let mut truncated = 0;
    let (mut worst_cosine, mut worst_diff) = (1.0f32, 0.0f32);
    for (entry, vector) in entries.iter().zip(&got) {
        let text = entry["text"].as_str().unwrap();
        let want: Vec<f32> = entry["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let tokens = entry["tokens"].as_u64().unwrap() as usize;
        assert_eq!(
            embedder.token_count(text).unwrap(),
            tokens,
            "token count of {text:?}"
        );
        if tokens > embedder.max_seq_length() {
            truncated += 1;
        }
        let cosine = dot(vector, &want) / (norm(vector) * norm(&want));
        let diff = max_diff(vector, &want);
        worst_cosine = worst_cosine.min(cosine);
        worst_diff = worst_diff.max(diff);
        assert!(
            cosine >= MIN_COSINE && diff <= MAX_COMPONENT_DIFF,
            "{text:?}: cosine {cosine}, largest component difference {diff}"
        );
    }
    assert!(truncated > 0, "the fixture must exercise truncation");
    let _ = writeln!(
        std::io::stderr(),
        "vectors_match_sentence_transformers: {} vectors, lowest cosine {worst_cosine}, \
         largest component difference {worst_diff:e}",
        got.len()
    );

    // One at a time gives the same vectors as the batch.
    for (text, batched) in texts.iter().zip(&got).take(4) {
        let alone = embedder.embed(&[text]).unwrap().remove(0);
        assert!(max_diff(&alone, batched) <= BATCH_TOLERANCE, "{text:?}");
    }
}

#[test]
fn real_model_id_and_dimension() {
    let Some(dir) = real_model("real_model_id_and_dimension") else {
        return;
    };
    let embedder = Embedder::load(&dir).unwrap();
    assert_eq!(embedder.dimension(), 384);
    assert_eq!(embedder.max_seq_length(), 256);
    let name = std::fs::canonicalize(&dir).unwrap();
    assert_eq!(
        embedder.model_id(),
        name.file_name().unwrap().to_string_lossy()
    );
    assert!(embedder.embed(&[]).unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// A tiny random BERT with a word-level vocabulary: the pipeline without the real weights

const VOCAB: &[&str] = &[
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "parse", "html", "with",
    "regex", "mock", "database", "layer", ".", ",",
];

/// Longest input of the tiny model, special tokens included.
const TINY_MAX_SEQ: usize = 8;

fn tiny_config() -> Config {
    serde_json::from_value(config_json()).expect("candle reads the tiny config")
}

fn tokenizer_json() -> Value {
    let vocab: HashMap<&str, usize> = VOCAB.iter().enumerate().map(|(i, w)| (*w, i)).collect();
    let special = |id: usize| {
        json!({"id": id, "content": VOCAB[id], "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    let cls = json!({"SpecialToken": {"id": "[CLS]", "type_id": 0}});
    let sep = json!({"SpecialToken": {"id": "[SEP]", "type_id": 0}});
    json!({
        "version": "1.0",
        // Deliberately odd settings, which Embedder::load must replace.
        "truncation": {"direction": "Right", "max_length": 3, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 12}, "direction": "Right", "pad_to_multiple_of": null,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": [special(0), special(1), special(2), special(3)],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep],
            "pair": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep,
                     {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab}
    })
}

fn mean_pooling_json(dim: usize) -> Value {
    json!({"word_embedding_dimension": dim, "pooling_mode_cls_token": false,
           "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
           "pooling_mode_mean_sqrt_len_tokens": false})
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// A complete sentence-transformers folder `parent/name` holding a randomly initialised
/// two-layer BERT of dimension 8.
fn tiny_model(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    let config = tiny_config();
    write_json(&dir.join("config.json"), &config_json());
    write_json(&dir.join("tokenizer.json"), &tokenizer_json());
    write_json(&dir.join("1_Pooling/config.json"), &mean_pooling_json(8));
    write_json(
        &dir.join("sentence_bert_config.json"),
        &json!({"max_seq_length": TINY_MAX_SEQ, "do_lower_case": false}),
    );
    write_json(
        &dir.join("modules.json"),
        &json!([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
        ]),
    );
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    BertModel::load(vb, &config).expect("tiny BERT initialises");
    varmap.save(dir.join("model.safetensors")).unwrap();
    dir
}

/// `config.json` of the tiny model, as a Hugging Face config would spell it.
fn config_json() -> Value {
    json!({
        "architectures": ["BertModel"], "vocab_size": VOCAB.len(), "hidden_size": 8,
        "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 16,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 16, "type_vocab_size": 2, "initializer_range": 0.02,
        "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute",
        "model_type": "bert"
    })
}

#[test]
fn tiny_model_gives_unit_vectors_in_input_order() {
    let tmp = tempfile::tempdir().unwrap();
    let embedder = Embedder::load(&tiny_model(tmp.path(), "tiny")).unwrap();
    assert_eq!(embedder.model_id(), "tiny");
    assert_eq!(embedder.dimension(), 8);
    assert_eq!(embedder.max_seq_length(), TINY_MAX_SEQ);

    let texts = [
        "the cat sat",
        "",
        "parse html with regex",
        "The Cat Sat",
        "zebra",
    ];
    let got = embedder.embed(&texts).unwrap();
    assert_eq!(got.len(), texts.len());
    for (text, v) in texts.iter().zip(&got) {
        assert_eq!(v.len(), 8);
        assert!((norm(v) - 1.0).abs() < 1e-5, "{text:?}: norm {}", norm(v));
    }
    // The tokenizer lower-cases, so case does not matter; order is the caller's.
    assert!(max_diff(&got[0], &got[3]) <= BATCH_TOLERANCE);
    assert!(max_diff(&got[0], &got[2]) > 1e-3);
}

#[test]
fn tiny_model_vector_does_not_depend_on_the_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let embedder = Embedder::load(&tiny_model(tmp.path(), "tiny")).unwrap();
    let alone = embedder.embed(&["the cat"]).unwrap().remove(0);
    // Padded next to a longer text, and in a call of more than one batch.
    let mut texts = vec!["mock the database layer , the mat"; 40];
    texts[37] = "the cat";
    let batched = embedder.embed(&texts).unwrap();
    assert!(max_diff(&alone, &batched[37]) <= BATCH_TOLERANCE);
    assert!(max_diff(&batched[0], &batched[39]) <= BATCH_TOLERANCE);
}

#[test]
fn tiny_model_cuts_inputs_at_max_seq_length() {
    let tmp = tempfile::tempdir().unwrap();
    let embedder = Embedder::load(&tiny_model(tmp.path(), "tiny")).unwrap();
    // [CLS] + 6 words + [SEP] = 8 tokens: everything after the sixth word is cut.
    let six = "the cat sat on the mat";
    let longer = "the cat sat on the mat with regex parse html";
    assert_eq!(embedder.token_count(six).unwrap(), TINY_MAX_SEQ);
    assert_eq!(embedder.token_count(longer).unwrap(), TINY_MAX_SEQ + 4);
    let got = embedder.embed(&[six, longer]).unwrap();
    assert!(max_diff(&got[0], &got[1]) <= BATCH_TOLERANCE);
}

// ---------------------------------------------------------------------------------------------
// Load errors

#[test]
fn load_refuses_a_missing_folder_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere");
    let err = Embedder::load(&missing).unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::NoModelDir { path } if path == &missing),
        "{err:?}"
    );
    assert!(err.to_string().contains("nowhere"), "{err}");
}

#[test]
fn load_names_each_missing_file() {
    for file in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "1_Pooling/config.json",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tiny_model(tmp.path(), "tiny");
        std::fs::remove_file(dir.join(file)).unwrap();
        let err = Embedder::load(&dir).unwrap_err();
        match &err {
            EmbeddingError::MissingFile { path, .. } => assert_eq!(path, &dir.join(file)),
            other => panic!("{file}: expected MissingFile, got {other:?}"),
        }
        assert!(err.to_string().contains(file), "{err}");
    }
}

#[test]
fn load_refuses_pooling_other_than_mean() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tiny_model(tmp.path(), "tiny");
    let pooling = dir.join("1_Pooling/config.json");
    write_json(
        &pooling,
        &json!({"word_embedding_dimension": 8, "pooling_mode_cls_token": true,
                "pooling_mode_mean_tokens": false}),
    );
    let err = Embedder::load(&dir).unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::UnsupportedPooling { path, found }
            if path == &pooling && found == "cls_token"),
        "{err:?}"
    );
    assert!(err.to_string().contains("only mean pooling"), "{err}");
}

#[test]
fn load_refuses_a_pooling_dimension_unlike_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tiny_model(tmp.path(), "tiny");
    write_json(&dir.join("1_Pooling/config.json"), &mean_pooling_json(384));
    let err = Embedder::load(&dir).unwrap_err();
    assert!(matches!(err, EmbeddingError::BadConfig { .. }), "{err:?}");
    assert!(err.to_string().contains("hidden_size 8"), "{err}");
}

#[test]
fn load_reports_truncated_weights_and_bad_tokenizer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tiny_model(tmp.path(), "tiny");
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    let err = Embedder::load(&dir).unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::Weights { path, .. } if path == &weights),
        "{err:?}"
    );

    std::fs::write(dir.join("tokenizer.json"), "{\"not\": \"a tokenizer\"}").unwrap();
    let err = Embedder::load(&dir).unwrap_err();
    assert!(matches!(err, EmbeddingError::Tokenizer { .. }), "{err:?}");
}

#[test]
fn load_refuses_a_bad_config_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tiny_model(tmp.path(), "tiny");
    std::fs::write(dir.join("config.json"), "{\"hidden_size\": 8}").unwrap();
    let err = Embedder::load(&dir).unwrap_err();
    assert!(matches!(err, EmbeddingError::BadConfig { .. }), "{err:?}");
    assert!(err.to_string().contains("config.json"), "{err}");
}
