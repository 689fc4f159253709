//! The two similarity scores of strategies that the decision and the classifier's features
//! both use: Sørensen–Dice of tokens, and of canonical terms.

use super::lexical::LexicalText;

/// Sørensen–Dice coefficient of two token multisets.
///
/// ```text
/// dice(A, B) = 2·|A ∩ B| / (|A| + |B|)     (multiset intersection: min of the counts)
/// ```
///
/// Sørensen (1948), *Biol. Skr.* 5(4); Dice (1945), *Ecology* 26(3). Word order is ignored.
/// Changing 1 word of a 10-word strategy gives 18/20 = 0.9, changing 2 gives 16/20 = 0.8 (still
/// similar), changing 3 gives 0.7. Two empty sets give 0 (nothing to compare), never NaN.
pub fn dice_coefficient(a: &[&str], b: &[&str]) -> f64 {
    let total = a.len() + b.len();
    if total == 0 {
        return 0.0;
    }
    // |A ∩ B| as multisets: merge the two sorted token lists (cheaper than hashing for the
    // few tokens of a strategy).
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_unstable();
    b.sort_unstable();
    let (mut i, mut j, mut common) = (0usize, 0usize, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    // Both operands are small exact integers, so the quotient is correctly rounded: a ratio equal
    // to 4/5 gives exactly the f64 `0.8`, and the `>=` comparison with the threshold is exact.
    (2 * common) as f64 / total as f64
}

/// Lexical similarity of two prepared strategies, in [0, 1].
///
/// ```text
/// sim(A, B) = 2·|T(A) ∩ T(B)| / (|T(A)| + |T(B)|)     T = LexicalText::terms, as multisets
/// ```
///
/// Sørensen–Dice over canonical terms ([`LexicalText`]: stemmed, stop words removed, synonyms and
/// abbreviations mapped to one concept), so that "I tried parsing the HTML with regexes" and
/// "Parse the HTML with regular expressions" both read `pars html regex` and score 1. Word order
/// is ignored (the guard reads it). Two texts without content terms score 0, never NaN.
pub fn lexical_similarity(a: &LexicalText, b: &LexicalText) -> f64 {
    let (a, b) = (a.terms(), b.terms());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    dice_coefficient(&a, &b)
}
