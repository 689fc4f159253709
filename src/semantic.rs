//! The embedding matcher at run time: which model the server uses, loading it off the request
//! path, embedding proposals (with a small cache), vectors for lessons that lack one
//! (back-fill), and the in-memory index that ranks other tasks' lessons for `include_related`.
//!
//! Without the `embedding` cargo feature, or when no model is configured or found, the
//! [`Semantic`] state is *off* and every caller falls back to the lexical matcher.
//!
//! Life cycle (issue 15): the server starts with the state *loading* when a model folder was
//! chosen, answers `initialize` and every call at once, and loads the weights on a thread of
//! its own ([`load_and_backfill`], started by `App::start_embedding`). A blacklist check arriving during the load waits for it (about a
//! second, once). Then the thread embeds, 32 at a time, every stored lesson without a vector
//! of this model, each batch in its own short write transaction.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::service::lessons::vectors::QuantizedIndex;
use crate::store::lesson_vectors::{self, VectorRow};
use crate::store::{Db, Store, StoreError};

/// Proposals kept embedded; the cache is emptied when it is full (a check's `prepare` step and
/// its run need the same text twice within one call).
const CACHE_ENTRIES: usize = 256;
/// Lessons embedded per back-fill transaction: 32 (the engine's batch size; at least 1). Each
/// batch holds the write transaction while it is stored, not while it is embedded. Source:
/// `EMBEDDING_THREADS` in `main.rs` (202 ms a batch on one thread).
const BACKFILL_BATCH: usize = 32;
/// Vectors read per catch-up query of the related-lessons index.
const CATCH_UP_ROWS: usize = 4096;

/// A loaded sentence-embedding model.
pub struct Model {
    #[cfg(feature = "embedding")]
    embedder: crate::embedding::Embedder,
    id: String,
    dimension: usize,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads the model folder `dir` (about a second and 90 MB for all-MiniLM-L6-v2).
    ///
    /// # Errors
    /// The engine's error, in words naming the file at fault; without the `embedding` feature,
    /// always (this binary has no engine).
    pub fn load(dir: &std::path::Path) -> Result<Model, String> {
        #[cfg(feature = "embedding")]
        {
            let embedder = crate::embedding::Embedder::load(dir).map_err(|e| e.to_string())?;
            Ok(Model {
                id: embedder.model_id().to_owned(),
                dimension: embedder.dimension(),
                embedder,
            })
        }
        #[cfg(not(feature = "embedding"))]
        {
            Err(format!(
                "cannot load {}: this binary was built without the embedding engine",
                dir.display()
            ))
        }
    }

    /// The model's id, stored beside every vector (the folder's name, e.g.
    /// `all-MiniLM-L6-v2`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Components per vector (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// One L2-normalised vector per text.
    ///
    /// # Errors
    /// The engine's error in words (not expected for any UTF-8 text).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        #[cfg(feature = "embedding")]
        {
            self.embedder.embed(texts).map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "embedding"))]
        {
            let _ = texts;
            Err("this binary was built without the embedding engine".into())
        }
    }
}

enum State {
    /// No model: the lexical matcher decides.
    Off,
    /// A model is being loaded; callers that need it wait.
    Loading,
    /// The model to use.
    Ready(Arc<Model>),
}

/// Requests to the `embedding` thread to embed the lessons that lack a vector of the model: a
/// check that met such lessons (logged by a server without the model, or imported by the
/// console) embeds them for itself, and asks here that they be stored, so that later checks
/// read them instead of embedding them again.
#[derive(Debug, Default)]
pub struct BackfillRequests {
    wanted: Mutex<bool>,
    wake: Condvar,
}

impl BackfillRequests {
    /// Asks for a back-fill; several requests before the thread wakes count as one.
    pub fn request(&self) {
        *self.wanted.lock() = true;
        self.wake.notify_one();
    }

    /// Waits up to `timeout` for a request; true (and the request taken) when there was one.
    pub fn wait(&self, timeout: std::time::Duration) -> bool {
        let mut wanted = self.wanted.lock();
        if !*wanted {
            self.wake.wait_for(&mut wanted, timeout);
        }
        std::mem::take(&mut *wanted)
    }
}

/// The server's embedding matcher state, shared by every call (see the module docs).
pub struct Semantic {
    state: Mutex<State>,
    loaded: Condvar,
    requests: Arc<BackfillRequests>,
    cache: Mutex<HashMap<String, Arc<[f32]>>>,
    related: Mutex<Option<Related>>,
}

impl std::fmt::Debug for Semantic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semantic").finish_non_exhaustive()
    }
}

impl Semantic {
    /// No model: every check uses the lexical matcher.
    pub fn off() -> Semantic {
        Semantic::with_state(State::Off)
    }

    /// A model is on its way: [`Semantic::model`] waits until [`Semantic::finish`].
    pub fn loading() -> Semantic {
        Semantic::with_state(State::Loading)
    }

    /// A model already loaded (tests, benches).
    pub fn ready(model: Model) -> Semantic {
        Semantic::with_state(State::Ready(Arc::new(model)))
    }

    fn with_state(state: State) -> Semantic {
        Semantic {
            state: Mutex::new(state),
            loaded: Condvar::new(),
            requests: Arc::default(),
            cache: Mutex::new(HashMap::new()),
            related: Mutex::new(None),
        }
    }

    /// Ends a load: the model, or `None` to fall back to the lexical matcher. Wakes every
    /// waiting caller.
    pub fn finish(&self, model: Option<Model>) {
        let mut state = self.state.lock();
        *state = match model {
            Some(m) => State::Ready(Arc::new(m)),
            None => State::Off,
        };
        self.loaded.notify_all();
    }

    /// The model to match with, waiting for a load in progress; `None` when there is none.
    pub fn model(&self) -> Option<Arc<Model>> {
        let mut state = self.state.lock();
        loop {
            match &*state {
                State::Off => return None,
                State::Ready(m) => return Some(m.clone()),
                State::Loading => self.loaded.wait(&mut state),
            }
        }
    }

    /// The back-fill requests the `embedding` thread waits on.
    pub fn backfill_requests(&self) -> Arc<BackfillRequests> {
        self.requests.clone()
    }

    /// Asks the `embedding` thread to store vectors for the lessons that lack one.
    pub fn request_backfill(&self) {
        self.requests.request();
    }

    /// `text`'s vector under `model`, from the cache or embedded now.
    ///
    /// # Errors
    /// The engine's error in words.
    pub fn embed(&self, model: &Model, text: &str) -> Result<Arc<[f32]>, String> {
        if let Some(v) = self.cache.lock().get(text)
            && v.len() == model.dimension()
        {
            return Ok(v.clone());
        }
        let v: Arc<[f32]> = model
            .embed(&[text])?
            .pop()
            .ok_or("the engine returned no vector")?
            .into();
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(text.to_owned(), v.clone());
        Ok(v)
    }

    /// Embeds `text` into the cache ahead of a call that will need it, outside any
    /// transaction; does nothing without a model. Failures are left for the call to meet.
    pub fn warm(&self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        if let Some(model) = self.model() {
            let _ = self.embed(&model, text);
        }
    }

    /// Up to `k` lessons of tasks other than `exclude_task` (a task key) whose vectors are
    /// most similar to `query`, by the quantised scan of [`QuantizedIndex`]: `(row key,
    /// approximate cosine)`, best first. Inactive lessons are not filtered here (the caller
    /// reads each lesson and skips them). The index first catches up with the vectors stored
    /// since it last looked (one indexed query when nothing changed).
    ///
    /// # Errors
    /// [`StoreError`] reading the new vectors.
    pub fn nearest(
        &self,
        db: &Db<'_>,
        model: &Model,
        query: &[f32],
        exclude_task: &str,
        k: usize,
    ) -> Result<Vec<(i64, f64)>, StoreError> {
        let mut related = self.related.lock();
        let index = match &mut *related {
            Some(r) if r.model == model.id() => r,
            slot => slot.insert(Related {
                model: model.id().to_owned(),
                rev: 0,
                index: QuantizedIndex::new(model.dimension()),
            }),
        };
        loop {
            let rows = lesson_vectors::vectors_since(db, &index.model, index.rev, CATCH_UP_ROWS)?;
            let done = rows.len() < CATCH_UP_ROWS;
            for VectorRow {
                seq,
                task_key,
                rev,
                vector,
            } in rows
            {
                index.index.push(seq, &task_key, &vector);
                index.rev = rev;
            }
            if done {
                break;
            }
        }
        Ok(index.index.top_k(query, k, exclude_task))
    }
}

/// The related-lessons index of one model and the last vector revision it holds.
struct Related {
    model: String,
    rev: i64,
    index: QuantizedIndex,
}

/// Where the server's model comes from (`--embedding-model`, the environment, or the default
/// folder), as decided at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    /// No model: the lexical matcher. `reason` says why, for the one warning line (empty when
    /// the user switched it off and wants no warning).
    Off {
        /// Why, for the warning line; empty for none.
        reason: String,
    },
    /// Load this folder.
    Folder(PathBuf),
}

/// The value of `--embedding-model` / `META_UTL_EMBEDDING_MODEL` that switches the model off.
pub const OFF: &str = "off";

/// Decides which model the server uses: `explicit` (`--embedding-model` or
/// `META_UTL_EMBEDDING_MODEL`; [`OFF`] switches it off), else the default folder when it
/// exists (`default`, e.g. `$XDG_DATA_HOME/meta-utl-mcp/models/all-MiniLM-L6-v2`).
///
/// # Errors
/// An explicit folder that is missing or not a model this binary can load, or any explicit
/// folder in a binary without the engine: the message names the path and the fix (the caller
/// exits with status 2). With a model on, a `META_UTL_EMBEDDING_PRECISION` other than `auto`,
/// `f32` or `int8` (or `int8` on a CPU without AVX-512 VNNI), naming the variable.
pub fn choose(explicit: Option<&str>, default: Option<PathBuf>) -> Result<ModelChoice, String> {
    let explicit = explicit.filter(|s| !s.is_empty());
    #[cfg(feature = "embedding")]
    if explicit != Some(OFF) {
        crate::embedding::Precision::from_env()?;
    }
    match explicit {
        Some(OFF) => Ok(ModelChoice::Off {
            reason: String::new(),
        }),
        Some(path) => {
            let dir = PathBuf::from(path);
            check_folder(&dir).map_err(|reason| {
                format!(
                    "--embedding-model {}: {reason}. Give a folder made by `meta-utl-mcp model \
                     install --from PATH --to DIR`, or `off` for the lexical matcher",
                    dir.display()
                )
            })?;
            Ok(ModelChoice::Folder(dir))
        }
        None => match default {
            Some(dir) if dir.exists() => match check_folder(&dir) {
                Ok(()) => Ok(ModelChoice::Folder(dir)),
                Err(reason) => Ok(ModelChoice::Off {
                    reason: format!(
                        "the embedding model in {} cannot be used ({reason}); the strategy \
                         blacklist uses the lexical matcher. Reinstall it with `meta-utl-mcp \
                         model install` (from the Hugging Face hub) or `model install --from \
                         PATH`",
                        dir.display()
                    ),
                }),
            },
            _ => Ok(ModelChoice::Off {
                reason: format!(
                    "no embedding model installed{}; the strategy blacklist uses the lexical \
                     matcher (install one with `meta-utl-mcp model install` from the Hugging \
                     Face hub, or `model install --from PATH`; see the README)",
                    default
                        .map(|d| format!(" in {}", d.display()))
                        .unwrap_or_default()
                ),
            }),
        },
    }
}

fn check_folder(dir: &std::path::Path) -> Result<(), String> {
    #[cfg(feature = "embedding")]
    {
        crate::embedding::check_model_dir(dir).map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "embedding"))]
    {
        let _ = dir;
        Err(
            "this binary was built without the embedding engine (rebuild with \
             `--features embedding`)"
                .into(),
        )
    }
}

/// Loads the model in `dir`, hands it to `semantic` (which must be [`Semantic::loading`]),
/// then back-fills the vectors of the lessons in `store` (when there is one yet) that have
/// none of this model. Blocks:
/// the server runs it on a thread of its own (`App::start_embedding`), which then stays to
/// serve [`BackfillRequests`]. A load that fails logs
/// the reason and leaves the lexical matcher on.
pub fn load_and_backfill(semantic: &Semantic, store: Option<&Store>, dir: &std::path::Path) {
    let started = std::time::Instant::now();
    match Model::load(dir) {
        Ok(model) => {
            tracing::info!(
                model = model.id(),
                dimension = model.dimension(),
                ms = started.elapsed().as_millis() as u64,
                "embedding model loaded"
            );
            semantic.finish(Some(model));
        }
        Err(e) => {
            tracing::warn!(
                "the embedding model could not be loaded ({e}); the strategy blacklist uses the \
                 lexical matcher"
            );
            semantic.finish(None);
            return;
        }
    }
    if let Some(store) = store {
        backfill_logged(semantic, store);
    }
}

/// [`backfill`] with the semantic state's model (nothing without one), logging what it did.
pub fn backfill_logged(semantic: &Semantic, store: &Store) {
    if let Some(model) = semantic.model() {
        match backfill(store, &model) {
            Ok(0) => {}
            Ok(n) => tracing::info!(lessons = n, model = model.id(), "lessons embedded"),
            Err(e) => tracing::warn!(error = %e, "embedding the stored lessons stopped"),
        }
    }
}

/// Gives every lesson in `store` without a vector of `model` one, 32 lessons
/// per write transaction (embedded before the transaction begins). Returns how many it
/// embedded. Another process back-filling at the same time only repeats work.
///
/// # Errors
/// [`StoreError`] of a read or write, or the engine's error.
pub fn backfill(store: &Store, model: &Model) -> Result<usize, String> {
    let mut done = 0;
    let mut last_seen = None;
    loop {
        let batch = store
            .read(|db| lesson_vectors::without_vector(db, model.id(), BACKFILL_BATCH))
            .map_err(|e| e.to_string())?;
        if batch.is_empty() {
            return Ok(done);
        }
        // A batch that comes back unchanged after it was written means the writes do not
        // stick (another process races us with another model): stop rather than spin.
        let first = batch.first().map(|(seq, _)| *seq);
        if last_seen == first {
            return Ok(done);
        }
        last_seen = first;
        let texts: Vec<&str> = batch.iter().map(|(_, s)| s.as_str()).collect();
        let vectors = model.embed(&texts)?;
        store
            .write(|db| -> Result<(), StoreError> {
                for ((seq, _), v) in batch.iter().zip(&vectors) {
                    lesson_vectors::set_vector(db, *seq, model.id(), v)?;
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        done += batch.len();
    }
}
