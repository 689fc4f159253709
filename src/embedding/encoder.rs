//! [`Embedder`]: a sentence-transformers BERT model loaded on the CPU, turning texts into unit
//! vectors.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::BertModel;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::EmbeddingError;
use super::folder::{Layout, TOKENIZER, WEIGHTS};
use super::int8::{self, Int8Bert};
use super::pooling::{l2_normalize, mean_pool, sentence_vector};

/// Environment variable choosing the [`Precision`] of [`Embedder::load`]: `f32` or `int8`;
/// unset or `auto`, [`Precision::preferred`].
pub const PRECISION_ENV: &str = "META_UTL_EMBEDDING_PRECISION";

/// The arithmetic of the encoder's matrix products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::EnumString)]
#[strum(serialize_all = "lowercase")]
pub enum Precision {
    /// 32-bit floats through candle: the reference, equal to sentence-transformers to 1e-4
    /// per component. A one-sentence pass takes 10-30 ms on the machine of
    /// `docs/PERFORMANCE.md`.
    F32,
    /// 8-bit integer matrix products with dynamic quantisation (`int8.rs`), on CPUs with
    /// AVX-512 VNNI: each vector within a cosine of 0.99 of the f32 one, a pass in a fifth of
    /// the time.
    Int8,
}

impl Precision {
    /// [`Precision::Int8`] where the CPU runs it, else [`Precision::F32`]; always
    /// [`Precision::F32`] in a debug build, whose unoptimised int8 loops run tens of times
    /// slower than candle (which `Cargo.toml` optimises even in debug builds). Tests of the
    /// int8 engine ask for it with [`Embedder::load_with`].
    pub fn preferred() -> Precision {
        if !cfg!(debug_assertions) && int8::supported() {
            Precision::Int8
        } else {
            Precision::F32
        }
    }

    /// The precision [`PRECISION_ENV`] asks for, else [`Precision::preferred`].
    ///
    /// # Errors
    /// A message naming the variable and the values allowed, for a value that is none of
    /// `auto`, `f32`, `int8`, or `int8` on a CPU without AVX-512 VNNI.
    pub fn from_env() -> Result<Precision, String> {
        let Some(value) = std::env::var_os(PRECISION_ENV) else {
            return Ok(Precision::preferred());
        };
        let value = value.to_string_lossy();
        let value = value.trim();
        if value.is_empty() || value.eq_ignore_ascii_case("auto") {
            return Ok(Precision::preferred());
        }
        let precision: Precision = value.to_ascii_lowercase().parse().map_err(|_| {
            format!("{PRECISION_ENV}={value:?}: allowed values are auto, f32 and int8")
        })?;
        if precision == Precision::Int8 && !int8::supported() {
            return Err(format!(
                "{PRECISION_ENV}=int8: this CPU lacks AVX-512 VNNI; use auto or f32"
            ));
        }
        Ok(precision)
    }
}

/// The encoder that runs a forward pass.
enum Engine {
    /// candle's BERT over padded batches.
    F32(BertModel),
    /// Our int8 encoder, one text at a time.
    Int8(Int8Bert),
}

/// Texts per forward pass. Texts are sorted by length first, so a batch pads to similar
/// lengths; 32 is sentence-transformers' default `batch_size`, and bounds the attention
/// scores of one pass to 32 · heads · 256² f32 (about 100 MiB for 12 heads).
pub const BATCH_SIZE: usize = 32;

/// A sentence-embedding model (BERT encoder + mean pooling + L2 normalisation) held in memory.
///
/// Loaded once with [`Embedder::load`] (about 90 MB of f32 weights for all-MiniLM-L6-v2, or
/// 11 MB of int8 linear weights beside the 47 MB f32 embedding tables) and then shared:
/// [`Embedder::embed`] takes `&self` and the type is `Send + Sync`, so several threads may
/// embed at once. CPU only. In [`Precision::F32`] candle spreads one forward pass over
/// `RAYON_NUM_THREADS` threads (default: all cores); [`Precision::Int8`] runs each text on the
/// calling thread.
///
/// Source: Reimers & Gurevych, "Sentence-BERT: Sentence Embeddings using Siamese
/// BERT-Networks", EMNLP 2019; the model is `sentence-transformers/all-MiniLM-L6-v2`
/// (Apache-2.0), a 6-layer MiniLM (Wang et al., NeurIPS 2020) fine-tuned on 1 billion sentence
/// pairs.
pub struct Embedder {
    engine: Engine,
    tokenizer: Tokenizer,
    device: Device,
    model_id: String,
    dimension: usize,
    max_seq_length: usize,
    lowercase: bool,
    pad_id: u32,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &self.model_id)
            .field("dimension", &self.dimension)
            .field("max_seq_length", &self.max_seq_length)
            .field("precision", &self.precision())
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the model in the sentence-transformers folder `dir`, with the precision of
    /// [`Precision::from_env`] ([`Precision::Int8`] on a CPU with AVX-512 VNNI unless
    /// [`PRECISION_ENV`] says `f32`); see [`Embedder::load_with`].
    ///
    /// # Errors
    /// As [`Embedder::load_with`]; an invalid [`PRECISION_ENV`] is
    /// [`EmbeddingError::BadConfig`] naming the variable.
    pub fn load(dir: &Path) -> Result<Embedder, EmbeddingError> {
        let precision =
            Precision::from_env().map_err(|reason| EmbeddingError::config(dir, &reason))?;
        Embedder::load_with(dir, precision)
    }

    /// Loads the model in the sentence-transformers folder `dir`, its matrix products in
    /// `precision`.
    ///
    /// Reads `config.json`, `1_Pooling/config.json` (or the pooling folder `modules.json`
    /// names), `sentence_bert_config.json` when present (for `max_seq_length`; else the
    /// model's `max_position_embeddings`), `tokenizer.json` and `model.safetensors`. The
    /// tokenizer's own padding and truncation settings are replaced: inputs are cut to
    /// `max_seq_length` tokens (special tokens included) and padded per batch, as
    /// sentence-transformers does.
    ///
    /// [`Embedder::model_id`] is the folder's name.
    ///
    /// # Errors
    /// [`EmbeddingError::NoModelDir`] (no such folder), [`EmbeddingError::MissingFile`] (a
    /// required file is absent), [`EmbeddingError::BadConfig`] or
    /// [`EmbeddingError::UnsupportedPooling`] (a configuration this crate would not reproduce
    /// faithfully), [`EmbeddingError::Tokenizer`], [`EmbeddingError::Weights`] (tensors missing
    /// or of the wrong shape), [`EmbeddingError::Io`]. Each names the file at fault.
    /// [`Precision::Int8`] on a CPU without AVX-512 VNNI is [`EmbeddingError::BadConfig`].
    pub fn load_with(dir: &Path, precision: Precision) -> Result<Embedder, EmbeddingError> {
        if precision == Precision::Int8 && !int8::supported() {
            return Err(EmbeddingError::config(
                dir,
                "int8 precision needs a CPU with AVX-512 VNNI; use f32",
            ));
        }
        let layout = Layout::read(dir)?;
        let device = Device::Cpu;

        let tokenizer_path = dir.join(TOKENIZER);
        let tokenizer_error = |reason: String| EmbeddingError::Tokenizer {
            path: tokenizer_path.clone(),
            reason,
        };
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| tokenizer_error(e.to_string()))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: layout.max_seq_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| tokenizer_error(e.to_string()))?;

        let weights_path = dir.join(WEIGHTS);
        let bytes =
            std::fs::read(&weights_path).map_err(|e| EmbeddingError::io(&weights_path, e))?;
        let weights_error = |source| EmbeddingError::Weights {
            path: weights_path.clone(),
            source,
        };
        let tensors =
            candle_core::safetensors::load_buffer(&bytes, &device).map_err(weights_error)?;
        drop(bytes);
        let engine = match precision {
            // Packs the weights itself: candle's transposed copies would only be copied back.
            Precision::Int8 => {
                Engine::Int8(Int8Bert::load(&tensors, &layout.bert).map_err(weights_error)?)
            }
            Precision::F32 => {
                let tensors =
                    with_linear_weights_transposed(tensors, &device).map_err(weights_error)?;
                let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
                Engine::F32(BertModel::load(vb, &layout.bert).map_err(weights_error)?)
            }
        };

        let pad_id = u32::try_from(layout.bert.pad_token_id).map_err(|_| {
            EmbeddingError::config(dir.join(super::folder::CONFIG), "pad_token_id is too large")
        })?;
        Ok(Embedder {
            engine,
            tokenizer,
            device,
            model_id: model_id_of(dir),
            dimension: layout.dimension,
            max_seq_length: layout.max_seq_length,
            lowercase: layout.lowercase,
            pad_id,
        })
    }

    /// The arithmetic of this embedder's matrix products.
    pub fn precision(&self) -> Precision {
        match self.engine {
            Engine::F32(_) => Precision::F32,
            Engine::Int8(_) => Precision::Int8,
        }
    }

    /// The model's name: the name of the folder it was loaded from, e.g. `"all-MiniLM-L6-v2"`.
    ///
    /// Store it beside every vector: vectors of different models are not comparable.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Length of every vector [`Embedder::embed`] returns (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The longest input in tokens, `[CLS]` and `[SEP]` included (256 for all-MiniLM-L6-v2);
    /// the rest of a longer text is ignored.
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// How many tokens `text` becomes before truncation, `[CLS]` and `[SEP]` included.
    /// For diagnostics and tests: it copies the tokenizer (its 30,522-word vocabulary) per call.
    ///
    /// # Errors
    /// [`EmbeddingError::Tokenize`] when the tokenizer fails.
    pub fn token_count(&self, text: &str) -> Result<usize, EmbeddingError> {
        let text = self.prepare(text);
        let mut tokenizer = self.tokenizer.clone();
        tokenizer.with_truncation(None).map_err(tokenize_error)?;
        Ok(tokenizer
            .encode(text.as_ref(), true)
            .map_err(tokenize_error)?
            .len())
    }

    /// One unit vector per text, in the order given.
    ///
    /// For each text: tokenise (WordPiece, `[CLS] … [SEP]`, cut to
    /// [`Embedder::max_seq_length`] tokens), run the BERT encoder, take the mean of the last
    /// hidden states over the real tokens, and divide by its L2 norm:
    ///
    /// ```text
    /// h = BERT(tokens)                 [tokens, dim]
    /// e = Σ_t h_t / n_tokens           [dim]
    /// u = e / max(‖e‖₂, 1e-12)         [dim], ‖u‖₂ = 1
    /// ```
    ///
    /// Returns `texts.len()` vectors of [`Embedder::dimension`] f32 each; the cosine similarity
    /// of two texts is the dot product of their vectors, in [-1, 1]. Texts are processed in
    /// batches of [`BATCH_SIZE`], grouped by length to limit padding; a text's vector does not
    /// depend on the other texts of the call (up to f32 rounding, ~1e-7). An empty slice gives
    /// an empty result; an empty string is a valid input (`[CLS] [SEP]`).
    ///
    /// # Errors
    /// [`EmbeddingError::Tokenize`] when the tokenizer fails, [`EmbeddingError::Inference`]
    /// when the forward pass does (neither is expected for any UTF-8 input).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let prepared: Vec<_> = texts.iter().map(|t| self.prepare(t)).collect();
        let inputs: Vec<&str> = prepared.iter().map(AsRef::as_ref).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(tokenize_error)?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        let model = match &self.engine {
            // One text at a time: no padding, and the integer kernel is fast on few rows.
            Engine::Int8(model) => {
                return ids
                    .iter()
                    .map(|ids| {
                        let states = model.last_hidden_state(ids)?;
                        Ok(sentence_vector(states, ids.len(), model.hidden_size())?)
                    })
                    .collect();
            }
            Engine::F32(model) => model,
        };

        // Longest first, as sentence-transformers orders its batches.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));

        let mut out = vec![Vec::new(); ids.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| ids[i]).collect();
            let vectors = self.forward(model, &batch)?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Encoder, pooling and normalisation for one padded batch of token ids.
    fn forward(
        &self,
        model: &BertModel,
        batch: &[&[u32]],
    ) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        let rows = batch.len();
        let width = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut input = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for ids in batch {
            input.extend_from_slice(ids);
            input.extend(std::iter::repeat_n(self.pad_id, width - ids.len()));
            mask.extend(std::iter::repeat_n(1u32, ids.len()));
            mask.extend(std::iter::repeat_n(0u32, width - ids.len()));
        }
        let input = Tensor::from_vec(input, (rows, width), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, width), &self.device)?;
        let token_types = input.zeros_like()?;
        let hidden = model.forward(&input, &token_types, Some(&mask))?;
        let pooled = mean_pool(&hidden, &mask)?;
        Ok(l2_normalize(&pooled)?.to_vec2::<f32>()?)
    }

    /// The text as sentence-transformers hands it to the tokenizer.
    fn prepare<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.lowercase {
            text.to_lowercase().into()
        } else {
            text.into()
        }
    }
}

/// Every tensor as f32, with each linear layer's weight stored transposed.
///
/// A linear layer computes `x · Wᵀ` with `W` of shape `[out, in]` as safetensors stores it.
/// Handed `Wᵀ` as a strided view, the matrix multiplication gathers it element by element into
/// its panels on every call (44 % of a forward pass of a dozen tokens under perf). Here `W`
/// becomes a view of a contiguous `[in, out]` copy, so `Wᵀ` is contiguous: one
/// `[12, 384] × [384, 1536]` product takes 256 µs instead of 355 µs, and a whole forward pass
/// about 6 % less (`docs/PERFORMANCE.md`). Same values and shapes; results differ only by f32
/// rounding order (~1e-7).
///
/// A linear weight is a rank-2 tensor named `….{query,key,value,dense}.weight` (BERT's
/// attention projections and feed-forward layers); the embedding tables, also rank 2, stay as
/// they are, since they are read by row.
fn with_linear_weights_transposed(
    tensors: std::collections::HashMap<String, Tensor>,
    device: &Device,
) -> candle_core::Result<std::collections::HashMap<String, Tensor>> {
    tensors
        .into_iter()
        .map(|(name, tensor)| {
            let tensor = tensor.to_dtype(DType::F32)?.to_device(device)?;
            let linear = tensor.rank() == 2
                && name
                    .strip_suffix(".weight")
                    .and_then(|layer| layer.rsplit('.').next())
                    .is_some_and(|last| matches!(last, "query" | "key" | "value" | "dense"));
            let tensor = if linear {
                tensor.t()?.contiguous()?.t()?
            } else {
                tensor
            };
            Ok((name, tensor))
        })
        .collect()
}

fn tokenize_error(e: tokenizers::Error) -> EmbeddingError {
    EmbeddingError::Tokenize {
        reason: e.to_string(),
    }
}

/// The folder's own name (after resolving `.` and symbolic links), or `"unnamed-model"`.
fn model_id_of(dir: &Path) -> String {
    let resolved = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unnamed-model".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedder_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Embedder>();
    }

    #[test]
    fn model_id_is_the_folder_name() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("all-MiniLM-L6-v2");
        std::fs::create_dir(&model).unwrap();
        assert_eq!(model_id_of(&model), "all-MiniLM-L6-v2");
        assert_eq!(model_id_of(&model.join(".")), "all-MiniLM-L6-v2");
    }
}
