//! The backend-neutral half of the request keys ([`crate::store::request_keys`]).

/// Days a request key is kept: a retry later than this writes again.
pub const KEEP_DAYS: i64 = 7;

/// What the first call with a key stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The first call's arguments, as canonical JSON (keys sorted), without the key itself.
    pub arguments: String,
    /// Its `structuredContent` (a successful answer: failures are not stored), as JSON.
    pub answer: String,
}

/// The oldest `created_us` kept at `now_us`.
pub(crate) fn cutoff(now_us: i64) -> i64 {
    now_us - KEEP_DAYS * 86_400_000_000
}
