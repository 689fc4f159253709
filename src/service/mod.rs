//! The service layer: the [`MetaLearningService`] facade and the numeric components of every
//! tool family. Nothing here does I/O, speaks JSON or touches SQL: callers pass time and data in
//! and persist what comes back (see `store`).

pub mod atc;
pub mod delta_sc;
pub mod epistemic;
pub mod gp;
pub mod lessons;
pub mod meta;
pub mod outcomes;
pub mod redact;
pub mod vocab;

/// A family of state that the service caches in memory and other processes may change; each
/// has a version counter in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::VariantArray)]
pub enum CachedFamily {
    /// Meta-learning: λ, lifecycle, accuracy windows, escalation counters.
    Meta,
    /// Adaptive threshold calibration: thresholds, temperatures, bandits, drift, windows.
    Atc,
    /// Vertex store: the E1 index and the running distance distributions of `delta_sc`.
    DeltaSc,
}

impl CachedFamily {
    /// Every cached family.
    pub const ALL: [CachedFamily; 3] = vocab::variants();
}

/// The store version of each cached family, in [`CachedFamily::ALL`] order.
pub type Versions = [i64; CachedFamily::ALL.len()];

/// The in-memory state shared by all tool calls of one process, behind one
/// `Arc<parking_lot::RwLock<_>>` (see `tools::App`).
///
/// It is a cache of the store: each family of cached state remembers the store version it was
/// loaded at (`loaded_versions`), and `store::sync` reloads a family when another process has
/// moved its version.
#[derive(Debug)]
pub struct MetaLearningService {
    /// Meta-learning state (λ, windows, escalation).
    pub meta: meta::MetaState,
    /// The vertex family's cache (E1 index, distance distributions).
    pub delta_sc: delta_sc::VertexCache,
    /// Adaptive threshold calibration state (thresholds, temperatures, bandits, windows).
    pub atc: atc::AtcState,
    /// Store version each cached family was loaded at, in [`CachedFamily::ALL`] order; `-1` = stale.
    pub loaded_versions: Versions,
}

impl MetaLearningService {
    /// A service with default state, marked stale so the first access loads from the store.
    pub fn new() -> Self {
        MetaLearningService {
            meta: meta::MetaState::default(),
            delta_sc: delta_sc::VertexCache::default(),
            atc: atc::AtcState::new(),
            loaded_versions: [-1; CachedFamily::ALL.len()],
        }
    }

    /// Mark every family stale (after a failed write whose in-memory changes were rolled back
    /// in the store).
    pub fn mark_stale(&mut self) {
        self.loaded_versions = [-1; CachedFamily::ALL.len()];
    }
}

impl Default for MetaLearningService {
    fn default() -> Self {
        Self::new()
    }
}
