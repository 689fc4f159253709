//! Unicode text normalisation, word tokens and character-counted field limits shared by the
//! belief workspace and the lesson store.
//!
//! Everything here counts **characters** (Unicode scalar values, `chars().count()`), never bytes,
//! and never slices a string at a byte offset, so multi-byte text (Chinese, emoji, combining marks)
//! cannot split a code point.

use caseless::Caseless;
use thiserror::Error;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// A field that failed a length, range or enum check. `field` is the argument name as it appears
/// in the tool's input schema, so the wire error can name it.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FieldError {
    /// The field is empty, or contains only whitespace (or, for strategies, only punctuation).
    #[error("`{field}` must not be empty")]
    Empty {
        /// Argument name.
        field: &'static str,
    },
    /// The field has more characters than allowed.
    #[error("`{field}` is {actual} characters long; at most {max} characters are allowed")]
    TooLong {
        /// Argument name.
        field: &'static str,
        /// Maximum number of characters (inclusive).
        max: usize,
        /// Characters in the given value.
        actual: usize,
    },
    /// A number outside its closed range, or NaN / infinite.
    #[error("`{field}` must be a finite number in [{min}, {max}], got {value}")]
    OutOfRange {
        /// Argument name.
        field: &'static str,
        /// Lower bound (inclusive).
        min: f64,
        /// Upper bound (inclusive).
        max: f64,
        /// The rejected value.
        value: f64,
    },
    /// A string that is not one of the allowed enum values.
    #[error("`{field}` must be one of {allowed:?}, got {value:?}")]
    InvalidEnum {
        /// Argument name.
        field: &'static str,
        /// The rejected value.
        value: String,
        /// The allowed values, in schema order.
        allowed: &'static [&'static str],
    },
    /// A string that should be a UUID (any of the hyphenated, simple, braced or URN forms).
    #[error("`{field}` must contain UUIDs, got {value:?}")]
    InvalidUuid {
        /// Argument name (e.g. `context.source_nodes`).
        field: &'static str,
        /// The rejected value.
        value: String,
    },
}

impl FieldError {
    /// The argument name this error is about.
    pub fn field(&self) -> &'static str {
        match self {
            FieldError::Empty { field }
            | FieldError::TooLong { field, .. }
            | FieldError::OutOfRange { field, .. }
            | FieldError::InvalidEnum { field, .. }
            | FieldError::InvalidUuid { field, .. } => field,
        }
    }
}

/// Checks that `value` has between 1 and `max_chars` characters (inclusive) and is not
/// whitespace-only.
///
/// Length is `value.chars().count()` (Unicode scalar values): `"日本"` is 2 characters, 6 bytes.
/// A combining sequence such as `"e\u{301}"` counts as 2 characters (one per scalar value), which
/// is what JSON Schema's `maxLength` counts too.
///
/// # Errors
/// [`FieldError::Empty`] for `""` or whitespace-only text; [`FieldError::TooLong`] when
/// `chars().count() > max_chars`.
pub fn check_text(field: &'static str, value: &str, max_chars: usize) -> Result<(), FieldError> {
    if value.trim().is_empty() {
        return Err(FieldError::Empty { field });
    }
    // Stop counting one past the limit: a 16 MiB string costs no more than the limit.
    let counted = value.chars().take(max_chars.saturating_add(1)).count();
    if counted > max_chars {
        return Err(FieldError::TooLong {
            field,
            max: max_chars,
            actual: value.chars().count(),
        });
    }
    Ok(())
}

/// Checks that `value` is finite and inside `[min, max]`.
///
/// # Errors
/// [`FieldError::OutOfRange`] for NaN, ±∞, or a value outside the range.
pub fn check_unit_range(
    field: &'static str,
    value: f64,
    min: f64,
    max: f64,
) -> Result<f64, FieldError> {
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(FieldError::OutOfRange {
            field,
            min,
            max,
            value,
        })
    }
}

/// Full Unicode case folding with compatibility normalisation, then whitespace collapsed.
///
/// ```text
/// fold(X) = NFC( NFKD( toCasefold( NFKD( toCasefold( NFD(X) ) ) ) ) )
/// then:     split on White_Space, join the pieces with a single U+0020
/// ```
///
/// The inner part is the Unicode Standard's *compatibility caseless match* key (The Unicode
/// Standard 16.0, §3.13, definition D146); the outer NFC only recomposes it so that stored keys
/// are compact. Consequences: `"Straße"` and `"STRASSE"` fold alike (ß → ss), final sigma
/// `"ς"` folds like `"σ"`, the ligature `"ﬁ"` folds to `"fi"`, full-width `"ＡＢＣ"` to `"abc"`, and
/// `"e\u{301}"` and `"é"` fold alike. Whitespace is Unicode `White_Space` (so U+3000 ideographic
/// space and NBSP collapse too); leading and trailing whitespace is dropped.
///
/// Empty or whitespace-only input gives `""`. Never panics.
pub fn fold_text(text: &str) -> String {
    let folded: String = text
        .chars()
        .nfd()
        .default_case_fold()
        .nfkd()
        .default_case_fold()
        .nfc()
        .collect();
    let mut out = String::with_capacity(folded.len());
    for piece in folded.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(piece);
    }
    out
}

/// True for characters of Unicode general category P (Pc, Pd, Ps, Pe, Pi, Pf, Po).
pub fn is_punctuation(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::ConnectorPunctuation
            | GeneralCategory::DashPunctuation
            | GeneralCategory::OpenPunctuation
            | GeneralCategory::ClosePunctuation
            | GeneralCategory::InitialPunctuation
            | GeneralCategory::FinalPunctuation
            | GeneralCategory::OtherPunctuation
    )
}

/// The normalised form of a strategy description: [`fold_text`], then punctuation and whitespace
/// stripped from both ends (repeatedly, so `"( use the cache! )"` → `"use the cache"`).
///
/// Punctuation inside the text is kept (`"don't"`, `"v1.2"`). Symbols (`+`, `$`, emoji) are not
/// punctuation and are kept. Empty, whitespace-only or punctuation-only input gives `""`.
pub fn normalise_strategy(text: &str) -> String {
    let folded = fold_text(text);
    folded
        .trim_matches(|c: char| c.is_whitespace() || is_punctuation(c))
        .to_owned()
}

/// The word tokens of an already normalised text, per UAX #29 word boundaries.
///
/// ```text
/// tokens(s) = [ w ∈ split_word_bounds(s) : w has a character that is neither White_Space
///                                            nor punctuation (category P) ]
/// ```
///
/// (Unicode Standard Annex #29, *Unicode Text Segmentation*, word boundaries.) A word keeps its
/// inner apostrophe or full stop (`"don't"`, `"3.14"`); each Han ideograph is its own token (UAX #29
/// has no dictionary), a Katakana run stays together, and an emoji (including ZWJ sequences and
/// skin-tone modifiers) is one token. Punctuation and whitespace only separate tokens.
pub fn word_tokens(normalised: &str) -> Vec<&str> {
    words(normalised).map(|(_, w)| w).collect()
}

/// The byte ranges `(start, end)` of [`word_tokens`] in `normalised`, in order: what the lesson
/// store keeps beside each strategy so that a blacklist check does not segment every stored
/// strategy again.
pub fn word_spans(normalised: &str) -> Vec<(usize, usize)> {
    words(normalised)
        .map(|(start, w)| (start, start + w.len()))
        .collect()
}

/// The tokens of [`word_tokens`] with their byte offsets.
fn words(normalised: &str) -> impl Iterator<Item = (usize, &str)> {
    normalised
        .split_word_bound_indices()
        .filter(|(_, w)| w.chars().any(|c| !c.is_whitespace() && !is_punctuation(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_text_table() {
        let cases: &[(&str, &str)] = &[
            ("Hello   World", "hello world"),
            ("  leading and trailing\t\n", "leading and trailing"),
            ("Straße", "strasse"),
            ("STRASSE", "strasse"),
            ("ẞ", "ss"),
            ("ΟΔΥΣΣΕΥΣ", "οδυσσευσ"),
            ("Οδυσσευς", "οδυσσευσ"),
            ("ﬁle", "file"),
            ("ＡＢＣ１２３", "abc123"),
            ("e\u{301}", "é"),
            ("É", "é"),
            ("中文\u{3000}目标", "中文 目标"),
            ("a\u{a0}b", "a b"),
            ("🚀 Launch", "🚀 launch"),
            ("", ""),
            ("   ", ""),
        ];
        for (input, want) in cases {
            assert_eq!(fold_text(input), *want, "fold_text({input:?})");
        }
    }

    #[test]
    fn fold_is_idempotent() {
        for s in ["Straße", "ΟΔΥΣΣΕΥΣ", "e\u{301}x", "ﬁ  Ｘ", "👍🏽 ok"] {
            let once = fold_text(s);
            assert_eq!(fold_text(&once), once, "{s:?}");
        }
    }

    #[test]
    fn normalise_strategy_table() {
        let cases: &[(&str, &str)] = &[
            ("Use the cache.", "use the cache"),
            ("( use the cache! )", "use the cache"),
            ("«Retry» …", "retry"),
            ("don't retry", "don't retry"),
            ("bump to v1.2", "bump to v1.2"),
            ("C++ rewrite", "c++ rewrite"),
            ("🚀", "🚀"),
            ("...", ""),
            ("  \t ", ""),
            ("「重写解析器」", "重写解析器"),
        ];
        for (input, want) in cases {
            assert_eq!(
                normalise_strategy(input),
                *want,
                "normalise_strategy({input:?})"
            );
        }
    }

    #[test]
    fn word_tokens_table() {
        let cases: &[(&str, &[&str])] = &[
            ("use the cache", &["use", "the", "cache"]),
            ("reuse, then retry", &["reuse", "then", "retry"]),
            ("don't use v1.2", &["don't", "use", "v1.2"]),
            ("重写解析器", &["重", "写", "解", "析", "器"]),
            ("deploy 🚀 now", &["deploy", "🚀", "now"]),
            ("", &[]),
            ("— … —", &[]),
        ];
        for (input, want) in cases {
            assert_eq!(word_tokens(input), *want, "word_tokens({input:?})");
        }
    }

    #[test]
    fn check_text_counts_characters_not_bytes() {
        // 4096 characters of a 3-byte Han character: 12 288 bytes, still within a 4096-char limit.
        let han = "中".repeat(4096);
        assert!(han.len() > 4096);
        assert_eq!(check_text("target", &han, 4096), Ok(()));
        let too_long = "中".repeat(4097);
        assert_eq!(
            check_text("target", &too_long, 4096),
            Err(FieldError::TooLong {
                field: "target",
                max: 4096,
                actual: 4097
            })
        );
        // Emoji are 4 bytes each.
        assert_eq!(check_text("target", &"😀".repeat(4096), 4096), Ok(()));
        assert_eq!(
            check_text("target", "", 4096),
            Err(FieldError::Empty { field: "target" })
        );
        assert_eq!(
            check_text("rationale", " \t", 1024),
            Err(FieldError::Empty { field: "rationale" })
        );
    }

    #[test]
    fn check_unit_range_rejects_nan_and_out_of_range() {
        assert_eq!(check_unit_range("confidence", 0.0, 0.0, 1.0), Ok(0.0));
        assert_eq!(check_unit_range("confidence", 1.0, 0.0, 1.0), Ok(1.0));
        for bad in [f64::NAN, f64::INFINITY, -0.01, 1.01] {
            let err = check_unit_range("confidence", bad, 0.0, 1.0).unwrap_err();
            assert_eq!(err.field(), "confidence");
        }
    }
}
