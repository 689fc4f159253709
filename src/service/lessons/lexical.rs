//! Lexical normalisation of strategies: the canonical terms that the lexical matcher compares
//! ([`super::similarity::lexical_similarity`]) and that the guard aligns ([`super::guard`]).
//!
//! A strategy such as `"I tried bumping the k8s worker's memory limit to 2Gi"` becomes the terms
//! `increase kubernetes worker memory limit 2 gb` (stop words kept aside, see below). The steps,
//! on the normalised text ([`super::text::normalise_strategy`]):
//!
//! 1. **Segment** per UAX #29 word boundaries. Runs of symbols between words become operators
//!    (`<`, `<=`, `>`, `>=`, `==`, `!=`, `=`, `→`/`->`/`=>`); `,` `;` `:` `(` `)` become clause
//!    boundaries; other punctuation is dropped.
//! 2. **Split** each word: a possessive `'s` is dropped, contractions (`don't` → `not`) resolved;
//!    identifiers are cut at inner punctuation (`orders.customer_id` → `orders customer id`),
//!    version numbers are kept whole (`1.26`, `0.11.2`), a number glued to a unit is cut
//!    (`100ms` → `100 ms`, `v18` → `18`).
//! 3. **Stem** alphabetic pieces with [`stem`], a light English suffix stripper.
//! 4. **Canonicalise** with one table of phrases (up to three stems) → concepts: abbreviations and
//!    synonyms of coding terms (`regular expression` / `regexp` → `regex`, `db` → `database`,
//!    `k8s` → `kubernetes`, `bump` / `raise` / `upgrade` → `increase`, `env var` →
//!    `envvar`, `turn off` → `disable`, `right away` → `immediately`, `two` → `2`, `seconds` → `s`).
//! 5. **Mark stop words** (articles, pronouns, auxiliaries, tense and person markers such as
//!    `I`, `we'll`, `tried`, prepositions, `use`, `make`). They are left out of the similarity but
//!    kept for the guard, which reads `from … to`, `instead of` and `with` / `without`.
//!
//! The tables are small and hand-written for coding strategies, kept as data in
//! `data/vocab/*.tsv` (compiled in, each entry with its provenance); a word absent from them
//! only loses its synonyms, never its literal match. Everything is ASCII-oriented: non-ASCII words
//! pass through unstemmed (each Han ideograph stays its own term, as in [`super::text::word_tokens`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

use unicode_segmentation::UnicodeSegmentation;

use super::text::normalise_strategy;

/// A comparison operator or an arrow found between words; its name ([`Op::as_str`]) is the
/// operator as written (`→` for every arrow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
pub enum Op {
    /// `<`
    #[strum(serialize = "<")]
    Lt,
    /// `<=`
    #[strum(serialize = "<=")]
    Le,
    /// `>`
    #[strum(serialize = ">")]
    Gt,
    /// `>=`
    #[strum(serialize = ">=")]
    Ge,
    /// `==`
    #[strum(serialize = "==")]
    Eq,
    /// `!=`
    #[strum(serialize = "!=")]
    Ne,
    /// `=` (assignment, as in `-refresh=false`)
    #[strum(serialize = "=")]
    Assign,
    /// `→`, `->`, `=>`: "from the left to the right".
    #[strum(serialize = "→")]
    Arrow,
}

impl Op {
    /// The operator as written (`→` for every arrow).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Comparison operators are content (they are what a `<` → `<=` fix is about); `=` and
    /// arrows are structure.
    fn is_comparison(self) -> bool {
        !matches!(self, Op::Assign | Op::Arrow)
    }
}

/// One canonical term of a strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The canonical form: a concept from the table (`regex`, `increase`), else the stem.
    pub canon: String,
    /// The folded words it came from, for messages (`"regular expressions"`).
    pub surface: String,
    /// A stop word: ignored by the similarity, read by the guard.
    pub stop: bool,
}

/// A piece of a strategy in reading order, as the guard sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A term. An identifier (`orders.customer_id`, `values-prod.yaml`) is one term here,
    /// its folded surface, so that the guard compares identifiers whole.
    Term(Term),
    /// An operator.
    Op(Op),
    /// A clause boundary (`,` `;` `:` `(` `)`).
    Boundary,
}

/// How many analysed texts [`LexicalText::cached`] keeps: 8,192, about 8 MB at most. Enough
/// for every active lesson of the tasks a session works on (tasks hold a handful to a hundred).
pub const LEXICAL_MEMO_CAPACITY: usize = 8192;

/// A strategy prepared for lexical comparison: computed once per text, compared many times.
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalText {
    normalised: String,
    /// Content terms for the similarity: canonical terms without stop words, identifiers cut
    /// into their parts, comparison operators included.
    terms: Vec<String>,
    /// Everything, in order, for the guard.
    pieces: Vec<Piece>,
}

impl LexicalText {
    /// Prepares `text`, raw or already normalised ([`normalise_strategy`] is idempotent).
    pub fn new(text: &str) -> Self {
        let normalised = normalise_strategy(text);
        let (terms, pieces) = analyse(&normalised);
        LexicalText {
            normalised,
            terms,
            pieces,
        }
    }

    /// [`LexicalText::new`] of `text`, remembered: a lesson's text is analysed once per
    /// process instead of at every check of its task.
    ///
    /// The analysis is a pure function of the text (about 14 µs for a ten-word strategy), so a
    /// remembered result is never stale. At most [`LEXICAL_MEMO_CAPACITY`] texts are kept
    /// (about 1 KB each); when full, the memo is emptied and fills again from the next calls.
    /// Safe to call from several threads; the analysis itself runs outside the lock.
    pub fn cached(text: &str) -> Arc<LexicalText> {
        static MEMO: LazyLock<Mutex<HashMap<Box<str>, Arc<LexicalText>>>> =
            LazyLock::new(Mutex::default);
        // A poisoned lock only means another thread panicked between two map operations; the
        // map itself is whole, so it is still used.
        let lookup = |text: &str| {
            let memo = MEMO
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            memo.get(text).cloned()
        };
        if let Some(known) = lookup(text) {
            return known;
        }
        let analysed = Arc::new(LexicalText::new(text));
        let mut memo = MEMO
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if memo.len() >= LEXICAL_MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(text.into(), analysed.clone());
        analysed
    }

    /// The normalised text.
    pub fn normalised(&self) -> &str {
        &self.normalised
    }

    /// The content terms compared by the similarity, in order.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// All pieces in reading order (terms with stop words, operators, boundaries).
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }
}

// ---------------------------------------------------------------------------------------------
// Stemming

/// Light English suffix stripping, so that inflected forms of a word share one stem.
///
/// ```text
/// 1. British -ise → -ize    (parameterised → parameterized, sanitiser → sanitizer)
///    -izer(s)/-ization(s) → -iz
/// 2. plural / 3rd person   -ies → -y, -sses → -ss, -s → ""   (not after s, u, i: class, bus, analysis)
/// 3. past / progressive    -ied → -y, -eed → -ee, -ed → "", -ing → ""   (the rest must keep a vowel
///                          and two letters; a doubled final consonant other than l, s, z is
///                          undoubled when 4+ letters remain: pinned → pin, added → add)
///    adverbs               -ily → -y; -ly → "" after l, t, e, s (manually → manual)
/// 4. final e               -e → ""   (cache, caching, cached → cach; use, using, used → us)
/// ```
///
/// In the spirit of step 1 of Porter's stemmer (M. F. Porter, "An algorithm for suffix
/// stripping", *Program* 14(3), 1980) and Harman's S-stemmer (D. Harman, "How effective is
/// suffixing?", *JASIS* 42(1), 1991), but lighter: no derivational suffixes (`parser` and
/// `parse` stay apart), and the final `e` is always dropped so that a base form and its `-ed` /
/// `-ing` forms agree. A few irregular verbs map to their base first (`froze` → `freeze`).
///
/// Only lower-case ASCII words of three letters or more are stemmed; anything else (digits,
/// identifiers, other scripts) is returned as is. Stems are not words (`cach`, `us`); they only
/// need to agree with each other.
pub fn stem(word: &str) -> String {
    if word.len() < 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_owned();
    }
    if let Some(&(_, base)) = irregular().iter().find(|(w, _)| *w == word) {
        return stem(base);
    }
    let mut w = british_to_american(word);
    // Step 2: plural / third person.
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !(w.ends_with("ss") || w.ends_with("us") || w.ends_with("is")) {
        w.pop();
    }
    // Step 3: -ed / -ing / -ly.
    if w.len() > 4 && w.ends_with("ied") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("eed") {
        if w.len() > 4 {
            w.pop();
        }
    } else if let Some(rest) = w.strip_suffix("ed").or_else(|| w.strip_suffix("ing")) {
        if rest.len() >= 2 && has_vowel(rest) {
            let rest = undouble(rest).to_owned();
            w = rest;
        }
    } else if w.len() > 5 && w.ends_with("ily") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.len() > 5
        && w.ends_with("ly")
        && matches!(w.as_bytes()[w.len() - 3], b'l' | b't' | b'e' | b's')
    {
        w.truncate(w.len() - 2);
    }
    // Step 4: final e.
    if w.len() >= 3 && w.ends_with('e') && !w.ends_with("ee") {
        w.pop();
    }
    w
}

/// Irregular forms that suffix stripping cannot reach, mapped to their base form.
fn irregular() -> &'static [(&'static str, &'static str)] {
    &VOCAB.irregular
}

fn has_vowel(s: &str) -> bool {
    s.bytes()
        .any(|b| matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y'))
}

/// `pinn` → `pin`, `committ` → `commit`; `call`, `pass`, `buzz` and short stems (`add`) keep
/// their double letter.
fn undouble(s: &str) -> &str {
    let b = s.as_bytes();
    let n = b.len();
    if n >= 4
        && b[n - 1] == b[n - 2]
        && !matches!(b[n - 1], b'l' | b's' | b'z')
        && !has_vowel(&s[n - 1..])
    {
        &s[..n - 1]
    } else {
        s
    }
}

/// `-ise`, `-ised`, `-iser(s)`, `-ises`, `-ising`, `-isation(s)` → the `-iz` spelling; `-izer(s)`
/// and `-ization(s)` → `-iz` (a sanitiser sanitises); likewise `-yse` / `-yser` (analyse,
/// analyser → analyz). At least three letters must precede the
/// suffix, so `raise`, `noise` and `wise` are left alone.
fn british_to_american(word: &str) -> String {
    const ENDINGS: &[(&str, &str)] = &[
        ("isations", "iz"),
        ("izations", "iz"),
        ("isation", "iz"),
        ("ization", "iz"),
        ("isers", "iz"),
        ("izers", "iz"),
        ("iser", "iz"),
        ("izer", "iz"),
        ("ising", "izing"),
        ("ised", "ized"),
        ("ises", "izes"),
        ("ise", "ize"),
        ("ysers", "yz"),
        ("yzers", "yz"),
        ("yser", "yz"),
        ("yzer", "yz"),
        ("ysing", "yzing"),
        ("ysed", "yzed"),
        ("yse", "yze"),
    ];
    for (from, to) in ENDINGS {
        if let Some(rest) = word.strip_suffix(from)
            && rest.len() >= 3
        {
            return format!("{rest}{to}");
        }
    }
    word.to_owned()
}

// ---------------------------------------------------------------------------------------------
// Tables

/// Phrases (space-separated words, any inflection) → canonical concept. An empty concept drops
/// the phrase. Longest phrase wins; phrases do not cross a clause boundary or an operator.
///
/// Kept to terms coding agents use interchangeably. Direction words share two concepts,
/// `increase` and `decrease`, so that "bump the timeout", "raise the timeout" and "increase the
/// timeout" agree (and "upgrade React" / "bump React" too); the guard then only needs one
/// antonym pair for all of them.
fn phrases() -> &'static [(&'static str, &'static str)] {
    &VOCAB.phrases
}

/// Stop words: carry no strategy of their own. Tense and person markers (`I`, `we'll`, `tried`,
/// `going`) are here so that "I tried mocking X" compares like "mock X". Negations (`not`,
/// `without`) and order words (`before`, `after`) are *not* stop words.
fn stop_words() -> &'static [&'static str] {
    &VOCAB.stop_words
}

/// Pairs of opposite concepts (after [`phrases`]; both orders match). `increase` / `decrease`
/// covers raise, bump, upgrade, extend, up, more, higher… against lower, reduce, downgrade,
/// shorten, down, fewer, less.
pub(crate) fn antonyms() -> &'static [(&'static str, &'static str)] {
    &VOCAB.antonyms
}

/// Adjectives and adverbs of manner: a run holding one of these describes how, not what.
pub(crate) fn modifiers() -> &'static [&'static str] {
    &VOCAB.modifiers
}

// ---------------------------------------------------------------------------------------------
// Word tables, as data

/// The word tables, read from `data/vocab/*.tsv` (compiled in): one entry a line,
/// tab-separated fields, the last the entry's provenance ([`PROVENANCES`]); `#` starts a
/// comment line.
struct Vocab {
    irregular: Vec<(&'static str, &'static str)>,
    phrases: Vec<(&'static str, &'static str)>,
    stop_words: Vec<&'static str>,
    antonyms: Vec<(&'static str, &'static str)>,
    modifiers: Vec<&'static str>,
    number_words: Vec<(&'static str, &'static str)>,
}

/// Where a table entry comes from: `english` (general English grammar), `general` (general
/// developer vocabulary), `issue15-pairs` (written for issue 15 while reading
/// `tests/data/blacklist_pairs.jsonl`, whose text holds its words), `dev-abbreviations`
/// (common developer abbreviations, units and mode words, listed for issue 30 from general
/// vocabulary before the classifier was retrained, not read off any pair set).
pub const PROVENANCES: &[&str] = &["english", "general", "issue15-pairs", "dev-abbreviations"];

/// The table files: (name, contents, fields before the provenance).
const VOCAB_FILES: &[(&str, &str, usize)] = &[
    (
        "irregular",
        include_str!("../../../data/vocab/irregular.tsv"),
        2,
    ),
    (
        "phrases",
        include_str!("../../../data/vocab/phrases.tsv"),
        2,
    ),
    (
        "stop_words",
        include_str!("../../../data/vocab/stop_words.tsv"),
        1,
    ),
    (
        "antonyms",
        include_str!("../../../data/vocab/antonyms.tsv"),
        2,
    ),
    (
        "modifiers",
        include_str!("../../../data/vocab/modifiers.tsv"),
        1,
    ),
    (
        "number_words",
        include_str!("../../../data/vocab/number_words.tsv"),
        2,
    ),
];

/// The entries of one table file: each line's fields before its provenance.
///
/// # Errors
/// The 1-based line and what is wrong: another number of fields, an empty field, or a
/// provenance not in [`PROVENANCES`].
fn parse_vocab(text: &'static str, fields: usize) -> Result<Vec<Vec<&'static str>>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&'static str> = line.split('\t').collect();
        if parts.len() != fields + 1 || parts.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "line {}: expected {} non-empty tab-separated fields",
                i + 1,
                fields + 1
            ));
        }
        if !PROVENANCES.contains(&parts[fields]) {
            return Err(format!(
                "line {}: provenance {:?} is not one of {PROVENANCES:?}",
                i + 1,
                parts[fields]
            ));
        }
        out.push(parts[..fields].to_vec());
    }
    Ok(out)
}

static VOCAB: LazyLock<Vocab> = LazyLock::new(|| {
    // The files are part of the build and checked by a unit test; a malformed one is a build
    // defect, not an input error.
    let table = |name: &str| -> Vec<Vec<&'static str>> {
        let &(_, text, fields) = VOCAB_FILES
            .iter()
            .find(|(n, _, _)| *n == name)
            .expect("a vocabulary file");
        parse_vocab(text, fields).unwrap_or_else(|e| panic!("data/vocab/{name}.tsv: {e}"))
    };
    let pairs = |name: &str| table(name).into_iter().map(|e| (e[0], e[1])).collect();
    let words = |name: &str| table(name).into_iter().map(|e| e[0]).collect();
    Vocab {
        irregular: pairs("irregular"),
        phrases: pairs("phrases"),
        stop_words: words("stop_words"),
        antonyms: pairs("antonyms"),
        modifiers: words("modifiers"),
        number_words: pairs("number_words"),
    }
});

/// The compiled tables: phrase keys and stop words in stemmed form.
struct Tables {
    /// Stemmed phrase, pieces joined by single spaces → concept.
    phrases: HashMap<String, &'static str>,
    /// Longest phrase, in pieces.
    max_phrase: usize,
    stop: HashSet<String>,
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| {
    let mut phrases = HashMap::new();
    let mut max_phrase = 1;
    for &(key, concept) in self::phrases() {
        let pieces: Vec<String> = key.split(' ').flat_map(pieces_of).collect();
        max_phrase = max_phrase.max(pieces.len());
        phrases.insert(pieces.join(" "), concept);
    }
    // Every concept is also reached from its own spelling (`node` → `node`, although the stem
    // of `node` is `nod`).
    for &(_, concept) in self::phrases() {
        let pieces: Vec<String> = concept.split(' ').flat_map(pieces_of).collect();
        phrases.entry(pieces.join(" ")).or_insert(concept);
    }
    let stop = stop_words().iter().map(|w| stem(w)).collect();
    Tables {
        phrases,
        max_phrase,
        stop,
    }
});

/// The canonical concept of a single word (`"regexes"` → `"regex"`, `"mocking"` → `"mock"`):
/// its stem looked up in [`phrases`]. Used to compile the other word lists.
pub(crate) fn canonical_word(word: &str) -> String {
    let stemmed = stem(word);
    match TABLES.phrases.get(&stemmed) {
        Some(c) => (*c).to_owned(),
        None => stemmed,
    }
}

/// The pieces of one word of a table, split and stemmed as text is (`"re-run"` → `re run`), except
/// that a word with a dot stays whole (`"node.js"`), as identifiers are looked up whole first.
fn pieces_of(word: &str) -> Vec<String> {
    if word.contains('.') {
        vec![word.to_owned()]
    } else {
        split_word(word)
    }
}

// ---------------------------------------------------------------------------------------------
// Analysis

/// An item of the segmented text.
enum Item<'a> {
    Word(&'a str),
    Op(Op),
    Boundary,
}

/// Segments a normalised text into words, operators and boundaries (step 1).
///
/// `<` and `>` glued to a word (`Arc<Mutex<_>>`, `Vec<u8>`) are type brackets, not comparisons:
/// comparisons in prose are written apart (`from < to <=`) or quoted (`` `<` ``).
fn segment(normalised: &str) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let mut symbols = String::new();
    // Whether the symbols in `symbols` follow a word directly (no whitespace between).
    let mut glued_left = false;
    let flush = |symbols: &mut String, items: &mut Vec<Item<'_>>, glued: bool| {
        if !symbols.is_empty() {
            parse_symbols(symbols, items, glued);
            symbols.clear();
        }
    };
    let mut after_word = false;
    // Start of the last word, while it is `non` and what follows it is glued to it.
    let mut non_at: Option<usize> = None;
    for (at, seg) in normalised.split_word_bound_indices() {
        if seg.chars().any(char::is_alphanumeric) {
            // `non-root`, `non-blocking`: one word, so that it reads as the negation of `root`.
            if let Some(start) = non_at.take()
                && symbols == "-"
                && matches!(items.last(), Some(Item::Word("non")))
            {
                symbols.clear();
                items.pop();
                items.push(Item::Word(&normalised[start..at + seg.len()]));
                after_word = true;
                continue;
            }
            // Symbols right before a word are glued to it.
            let glued = glued_left || !symbols.is_empty();
            flush(&mut symbols, &mut items, glued);
            items.push(Item::Word(seg));
            non_at = (seg == "non").then_some(at);
            after_word = true;
        } else if seg.chars().all(char::is_whitespace) {
            flush(&mut symbols, &mut items, glued_left);
            after_word = false;
            non_at = None;
        } else {
            if symbols.is_empty() {
                glued_left = after_word;
            }
            symbols.push_str(seg);
            after_word = false;
        }
    }
    flush(&mut symbols, &mut items, glued_left);
    items
}

/// Operators and boundaries in a run of symbols and punctuation, longest match first. When the
/// run touches a word (`glued`), lone `<` and `>` are brackets and skipped.
fn parse_symbols(run: &str, items: &mut Vec<Item<'_>>, glued: bool) {
    const OPS: &[(&str, Op)] = &[
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("->", Op::Arrow),
        ("=>", Op::Arrow),
        ("→", Op::Arrow),
        ("⇒", Op::Arrow),
        ("≤", Op::Le),
        ("≥", Op::Ge),
        ("≠", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
        ("=", Op::Assign),
    ];
    let mut rest = run;
    while let Some(c) = rest.chars().next() {
        // `std::sync::Mutex`: a path, not a clause boundary.
        if let Some(r) = rest.strip_prefix("::") {
            rest = r;
            continue;
        }
        if let Some(&(s, op)) = OPS.iter().find(|(s, _)| rest.starts_with(s)) {
            if !(glued && matches!(op, Op::Lt | Op::Gt)) {
                items.push(Item::Op(op));
            }
            rest = &rest[s.len()..];
            continue;
        }
        if matches!(
            c,
            ',' | ';' | ':' | '(' | ')' | '[' | ']' | '{' | '}' | '—' | '–'
        ) && !matches!(items.last(), Some(Item::Boundary))
        {
            items.push(Item::Boundary);
        }
        rest = &rest[c.len_utf8()..];
    }
}

/// One piece of a word after splitting (step 2), before the phrase table.
struct Sub {
    /// Stemmed (alphabetic), or as written (numbers, other scripts).
    text: String,
    /// Index of the word it came from.
    word: usize,
}

/// A word after step 2.
struct Word {
    /// Folded surface, possessive dropped.
    surface: String,
    /// An identifier: kept whole for the guard.
    ident: bool,
    /// The word resolved to a fixed term (contraction), bypassing the tables.
    fixed: Option<&'static str>,
    /// The word is the last part of a hyphenated name (`minutes` in `timeout-minutes`).
    hyphenated: bool,
}

/// A word, operator or clause boundary of the text, in reading order (steps 1 and 2).
enum Slot {
    Word(usize),
    Op(Op),
    Boundary,
}

fn analyse(normalised: &str) -> (Vec<String>, Vec<Piece>) {
    let tables = &*TABLES;
    // Steps 1 and 2: words, then their pieces, clause by clause.
    let mut words: Vec<Word> = Vec::new();
    let mut order: Vec<Slot> = Vec::new();
    let joined = join_thousands(normalised);
    for item in segment(&joined) {
        match item {
            Item::Word(w) => {
                let surface = strip_possessive(w);
                let surface = match surface.strip_prefix("non-") {
                    Some(rest) => format!("non{rest}"),
                    None => surface.to_owned(),
                };
                let fixed = contraction(&surface);
                let ident = fixed.is_none() && is_identifier(&surface);
                // Words are slices of `joined`: look at the two bytes before this one.
                let before = (w.as_ptr() as usize)
                    .checked_sub(joined.as_ptr() as usize)
                    .and_then(|at| joined.as_bytes().get(..at))
                    .unwrap_or_default();
                let hyphenated = before.ends_with(b"-")
                    && before
                        .len()
                        .checked_sub(2)
                        .is_some_and(|i| before[i].is_ascii_alphanumeric());
                words.push(Word {
                    surface,
                    ident,
                    fixed,
                    hyphenated,
                });
                order.push(Slot::Word(words.len() - 1));
            }
            Item::Op(op) => order.push(Slot::Op(op)),
            Item::Boundary => order.push(Slot::Boundary),
        }
    }

    // Steps 3 and 4: stems and phrases over each run of consecutive words; a phrase never
    // crosses an identifier, an operator or a boundary.
    // `produced[i]` = terms produced at word i (a phrase is attributed to its first word).
    let mut produced: Vec<Vec<Term>> = (0..words.len()).map(|_| Vec::new()).collect();
    let mut run: Vec<Sub> = Vec::new();
    let flush = |run: &mut Vec<Sub>, produced: &mut Vec<Vec<Term>>, words: &[Word]| {
        // The candidate phrase, pieces joined by spaces, as the table keys are.
        let mut key = String::new();
        let mut i = 0;
        while i < run.len() {
            let mut matched = false;
            for len in (1..=tables.max_phrase.min(run.len() - i)).rev() {
                key.clear();
                for (k, sub) in run[i..i + len].iter().enumerate() {
                    if k > 0 {
                        key.push(' ');
                    }
                    key.push_str(&sub.text);
                }
                if let Some(&concept) = tables.phrases.get(key.as_str()) {
                    if !concept.is_empty() {
                        let surface = surface_of(&run[i..i + len], words);
                        produced[run[i].word].push(Term {
                            canon: concept.to_owned(),
                            stop: false,
                            surface,
                        });
                    }
                    i += len;
                    matched = true;
                    break;
                }
            }
            if !matched {
                let s = &run[i];
                produced[s.word].push(Term {
                    stop: tables.stop.contains(&s.text),
                    canon: s.text.clone(),
                    surface: words[s.word].surface.clone(),
                });
                i += 1;
            }
        }
        run.clear();
    };
    for slot in &order {
        match *slot {
            Slot::Word(i) => {
                let w = &words[i];
                if let Some(fixed) = w.fixed {
                    flush(&mut run, &mut produced, &words);
                    produced[i].push(Term {
                        canon: fixed.to_owned(),
                        stop: fixed.is_empty(),
                        surface: w.surface.clone(),
                    });
                } else if w.ident {
                    // Looked up whole first (`node.js`), else piece by piece, alone.
                    flush(&mut run, &mut produced, &words);
                    if let Some(&concept) = tables.phrases.get(&w.surface) {
                        produced[i].push(Term {
                            canon: concept.to_owned(),
                            stop: false,
                            surface: w.surface.clone(),
                        });
                    } else {
                        for text in split_word(&w.surface) {
                            run.push(Sub { text, word: i });
                        }
                        flush(&mut run, &mut produced, &words);
                    }
                } else {
                    for text in split_word(&w.surface) {
                        run.push(Sub { text, word: i });
                    }
                }
            }
            Slot::Op(_) | Slot::Boundary => flush(&mut run, &mut produced, &words),
        }
    }
    flush(&mut run, &mut produced, &words);
    normalise_quantities(&order, &words, &mut produced);

    // Step 5: assemble the similarity terms and the guard's pieces.
    let mut terms = Vec::new();
    let mut pieces = Vec::new();
    for slot in order {
        match slot {
            Slot::Word(i) => {
                let w = &words[i];
                for t in &produced[i] {
                    if !t.stop && !t.canon.is_empty() {
                        terms.push(t.canon.clone());
                    }
                }
                if w.ident && produced[i].len() > 1 {
                    // The guard compares identifiers whole.
                    pieces.push(Piece::Term(Term {
                        canon: w.surface.clone(),
                        surface: w.surface.clone(),
                        stop: false,
                    }));
                } else {
                    pieces.extend(
                        produced[i]
                            .iter()
                            .filter(|t| !t.canon.is_empty())
                            .cloned()
                            .map(Piece::Term),
                    );
                }
            }
            Slot::Op(op) => {
                if op.is_comparison() {
                    terms.push(op.as_str().to_owned());
                }
                pieces.push(Piece::Op(op));
            }
            Slot::Boundary => {
                if !matches!(pieces.last(), Some(Piece::Boundary) | None) {
                    pieces.push(Piece::Boundary);
                }
            }
        }
    }
    (terms, pieces)
}

/// Step 4b: a number followed by a unit of time or of size is written in the unit's base
/// (seconds, MB), so that `600000 ms`, `600s` and `10 minutes` all read `600 s`, and `2Gi` and
/// `2048Mi` both read `2048 mb`; `10k` reads `10000`. A bare number after an identifier that
/// names its unit (`max.poll.interval.ms` to 600000, `cache_ttl_minutes` to 60) takes that
/// unit: `600`, `3600`. A quantity never spans an operator other than `=` or a clause boundary; the
/// surfaces (what near misses show) are kept as written.
///
/// Units and factors: `ms` 0.001, `s` 1, `min` 60, `h` 3,600, `d` 86,400 (seconds); `kb`
/// 1/1024, `mb` 1, `gb` 1,024, `tb` 1,048,576 (MB; the binary and decimal spellings are one
/// unit each in the phrase table, as agents use them interchangeably); `k` 1,000 (no unit). A
/// bare `m` is left alone: it is minutes in a Go duration but millicores in a Kubernetes CPU
/// request, unless its clause names a duration ([`duration_words`]: `-lock-timeout=10m`). A
/// number word that multiplies (`hundred`, `thousand`, `million`) joins the number before it:
/// `ten thousand` reads `10000`.
fn normalise_quantities(order: &[Slot], words: &[Word], produced: &mut [Vec<Term>]) {
    const UNITS: &[(&str, &str, f64)] = &[
        ("ms", "s", 0.001),
        ("s", "s", 1.0),
        ("min", "s", 60.0),
        ("h", "s", 3600.0),
        ("d", "s", 86400.0),
        ("kb", "mb", 1.0 / 1024.0),
        ("mb", "mb", 1.0),
        ("gb", "mb", 1024.0),
        ("tb", "mb", 1024.0 * 1024.0),
        ("k", "", 1000.0),
    ];
    let unit = |canon: &str| UNITS.iter().find(|(u, _, _)| *u == canon).copied();
    // The last term seen, when it is a number: (word, index of the term in that word, value).
    let mut number: Option<(usize, usize, f64)> = None;
    // The factor of a unit named inside an identifier earlier in the clause.
    let mut implied: Option<f64> = None;
    // The clause names a duration (`timeout`, `interval`…): a bare `m` after a number is minutes.
    let mut duration = false;
    let settle = |number: &mut Option<(usize, usize, f64)>,
                  implied: Option<f64>,
                  produced: &mut [Vec<Term>]| {
        if let (Some((nw, nt, value)), Some(factor)) = (number.take(), implied) {
            produced[nw][nt].canon = format_quantity(value * factor);
        }
    };
    for slot in order {
        let w = match *slot {
            Slot::Word(w) => w,
            Slot::Op(Op::Assign) => continue,
            Slot::Op(_) => {
                settle(&mut number, implied, produced);
                continue;
            }
            Slot::Boundary => {
                settle(&mut number, implied, produced);
                implied = None;
                duration = false;
                continue;
            }
        };
        for t in 0..produced[w].len() {
            let canon = produced[w][t].canon.as_str();
            let as_unit = match canon {
                "m" if duration => unit("min"),
                _ => unit(canon),
            };
            if let Some((nw, nt, value)) = number
                && let Some(factor) = multiplier(&produced[w][t].surface)
            {
                // `ten thousand`: one number.
                produced[nw][nt].canon = format_quantity(value * factor);
                produced[w][t].canon = String::new();
                number = Some((nw, nt, value * factor));
                continue;
            }
            if let Some((nw, nt, value)) = number
                && let Some((_, base, factor)) = as_unit
            {
                produced[nw][nt].canon = format_quantity(value * factor);
                produced[w][t].canon = base.to_owned();
                number = None;
                continue;
            }
            settle(&mut number, implied, produced);
            let canon = produced[w][t].canon.as_str();
            duration |= duration_words().contains(canon);
            if let Some((_, "s", factor)) = as_unit
                && names_unit(&words[w])
            {
                implied = Some(factor);
            }
            number = match canon.parse::<f64>() {
                Ok(v)
                    if v.is_finite() && canon.bytes().all(|b| b.is_ascii_digit() || b == b'.') =>
                {
                    Some((w, t, v))
                }
                _ => None,
            };
        }
    }
    settle(&mut number, implied, produced);
}

/// Words that name a duration (canonical): in their clause a number followed by a bare `m`
/// (`-lock-timeout=10m`, `interval: 5m`) is minutes, as in Go, Terraform and Prometheus
/// durations. A CPU quantity in millicores (`500m`) is not in such a clause.
fn duration_words() -> &'static HashSet<String> {
    static WORDS: LazyLock<HashSet<String>> = LazyLock::new(|| {
        [
            "timeout",
            "interval",
            "ttl",
            "delay",
            "deadline",
            "duration",
            "period",
            "wait",
            "backoff",
            "expiry",
            "grace",
            "retention",
            "lifetime",
            "sleep",
        ]
        .iter()
        .map(|w| canonical_word(w))
        .collect()
    });
    &WORDS
}

/// The factor of a number word that multiplies the number before it (`ten thousand`,
/// `two hundred`); `None` for any other surface.
fn multiplier(surface: &str) -> Option<f64> {
    match surface {
        "hundred" => Some(100.0),
        "thousand" => Some(1000.0),
        "million" => Some(1_000_000.0),
        _ => None,
    }
}

/// An identifier or a hyphenated name whose last part is a unit of time written out
/// (`max.poll.interval.ms`, `ttl_seconds`, `timeout-minutes`): a word of two letters or more
/// that the phrase table reads as a unit of time (single letters, as in `config.h`, do not
/// count).
fn names_unit(word: &Word) -> bool {
    (word.ident || word.hyphenated)
        && word
            .surface
            .rsplit(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .is_some_and(|last| {
                last.len() >= 2 && matches!(canonical_word(last).as_str(), "ms" | "s" | "min" | "h")
            })
}

/// `10,000` → `10000` and `100_000` → `100000`: a comma or an underscore between digits that
/// is followed by exactly three digits is a thousands separator (in prose, or in a Python, Rust,
/// Java or JavaScript numeric literal), not a clause boundary or an identifier joiner.
fn join_thousands(text: &str) -> std::borrow::Cow<'_, str> {
    let b = text.as_bytes();
    let separator = |i: usize| {
        matches!(b[i], b',' | b'_')
            && i > 0
            && b[i - 1].is_ascii_digit()
            && b.len() >= i + 4
            && b[i + 1..i + 4].iter().all(u8::is_ascii_digit)
            && b.get(i + 4)
                .is_none_or(|&c| c == b'_' || !c.is_ascii_alphanumeric())
    };
    if !(0..b.len()).any(separator) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if !(matches!(c, ',' | '_') && separator(i)) {
            out.push(c);
        }
    }
    out.into()
}

/// A quantity in its shortest form: `600`, `0.5`, `1536` (no exponent; at most six decimals).
fn format_quantity(value: f64) -> String {
    let rounded = (value * 1e6).round() / 1e6;
    if rounded.fract() == 0.0 && rounded.abs() < 1e15 {
        format!("{}", rounded as i64)
    } else {
        format!("{rounded}")
    }
}

/// The surfaces of the words a phrase spans, joined by spaces.
fn surface_of(subs: &[Sub], words: &[Word]) -> String {
    let mut out = String::new();
    let mut last = usize::MAX;
    for s in subs {
        if s.word != last {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&words[s.word].surface);
            last = s.word;
        }
    }
    out
}

/// `"jvm's"` → `"jvm"`; also the typographic apostrophe.
fn strip_possessive(word: &str) -> &str {
    word.strip_suffix("'s")
        .or_else(|| word.strip_suffix("’s"))
        .unwrap_or(word)
}

/// Negative contractions → `not`; pronoun contractions → a stop word (`""` = stop).
fn contraction(word: &str) -> Option<&'static str> {
    let w = word.replace('’', "'");
    if w.ends_with("n't") {
        return Some("not");
    }
    match w.as_str() {
        "i'll" | "we'll" | "you'll" | "i've" | "we've" | "i'm" | "we're" | "let's" | "i'd"
        | "we'd" | "it's" | "that's" | "there's" => Some(""),
        _ => None,
    }
}

/// An identifier: letters or digits joined by inner `.`, `_`, `/` or `:` (`orders.customer_id`,
/// `max.poll.records`, `std::sync`), but not a version number (`1.26`, `0.11.2`).
fn is_identifier(word: &str) -> bool {
    word.contains(['.', '_', '/', ':']) && !is_version(word.strip_prefix('v').unwrap_or(word))
}

/// Digits separated by dots: `1.26`, `0.11.2`, `3`.
fn is_version(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The pieces of a word (step 2), stemmed (step 3).
///
/// Cuts at every character that is not a letter or digit, except a `.` between digits (versions
/// stay whole). A piece of digits followed by letters is cut into number and unit (`100ms` →
/// `100 ms`, `2gi` → `2 gi`), and `v` before a version is dropped (`v1.2` → `1.2`); a piece
/// mixing letters and digits otherwise stays whole (`i64`, `g1`, `html5lib`, `s3`).
fn split_word(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = word.chars().collect();
    let mut start = 0;
    let mut i = 0;
    let push = |piece: String, out: &mut Vec<String>| {
        if !piece.is_empty() {
            out.extend(split_number_unit(&piece));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let keep = c.is_alphanumeric()
            || (c == '.'
                && i > start
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(char::is_ascii_digit));
        if !keep {
            push(chars[start..i].iter().collect(), &mut out);
            start = i + 1;
        }
        i += 1;
    }
    push(chars[start..].iter().collect(), &mut out);
    out
}

/// Number words, read before stemming (the stem of `one` would be the preposition `on`).
fn number_words() -> &'static [(&'static str, &'static str)] {
    &VOCAB.number_words
}

/// `100ms` → `["100", "ms"]`, `v18` → `["18"]`, `2.0` → `["2.0"]`, `retries` → `["retry"]`,
/// `two` → `["2"]`.
fn split_number_unit(piece: &str) -> Vec<String> {
    if let Some(&(_, n)) = number_words().iter().find(|(w, _)| *w == piece) {
        return vec![n.to_owned()];
    }
    let version = piece.strip_prefix('v').filter(|r| is_version(r));
    if let Some(v) = version {
        return vec![v.to_owned()];
    }
    let digits = piece
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(piece.len());
    if digits > 0 && digits < piece.len() && is_version(&piece[..digits]) {
        let unit = &piece[digits..];
        if unit.bytes().all(|b| b.is_ascii_lowercase()) {
            return vec![piece[..digits].to_owned(), stem(unit)];
        }
    }
    if piece.chars().any(|c| c.is_alphabetic()) && !piece.chars().any(|c| c.is_ascii_digit()) {
        vec![stem(piece)]
    } else {
        vec![piece.to_owned()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_files_parse_with_provenance() {
        for &(name, text, fields) in VOCAB_FILES {
            let entries = parse_vocab(text, fields).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!entries.is_empty(), "{name}");
        }
        assert_eq!(
            (irregular().len(), phrases().len(), stop_words().len()),
            (59, 265, 114)
        );
        assert_eq!(
            (antonyms().len(), modifiers().len(), number_words().len()),
            (72, 63, 17)
        );
        assert!(phrases().contains(&("k8s", "kubernetes")));
        assert!(antonyms().contains(&("increase", "decrease")));
        // Malformed lines are refused with their line number.
        for bad in ["a\tb\n", "a\tb\tsomewhere\n", "a\t\tgeneral\n"] {
            let err = parse_vocab(bad, 2).unwrap_err();
            assert!(err.starts_with("line 1"), "{bad:?}: {err}");
        }
        assert_eq!(
            parse_vocab("# c\na\tb\tgeneral\n", 2),
            Ok(vec![vec!["a", "b"]])
        );
    }

    #[test]
    fn stem_table() {
        // (word, stem): inflected forms of one word share a stem.
        let cases: &[(&str, &str)] = &[
            ("mock", "mock"),
            ("mocking", "mock"),
            ("mocked", "mock"),
            ("mocks", "mock"),
            ("cache", "cach"),
            ("caching", "cach"),
            ("cached", "cach"),
            ("caches", "cach"),
            ("use", "us"),
            ("used", "us"),
            ("using", "us"),
            ("uses", "us"),
            ("retry", "retry"),
            ("retries", "retry"),
            ("retried", "retry"),
            ("retrying", "retry"),
            ("pin", "pin"),
            ("pinned", "pin"),
            ("pinning", "pin"),
            ("add", "add"),
            ("added", "add"),
            ("adding", "add"),
            ("call", "call"),
            ("called", "call"),
            ("commit", "commit"),
            ("committed", "commit"),
            ("committing", "commit"),
            ("pass", "pass"),
            ("passed", "pass"),
            ("class", "class"),
            ("analysis", "analysis"),
            ("status", "status"),
            ("index", "index"),
            ("indexes", "index"),
            ("held", "hold"),
            ("analyse", "analyz"),
            ("analyser", "analyz"),
            ("analyzer", "analyz"),
            ("indices", "index"),
            ("dependencies", "dependency"),
            ("parameterised", "parameteriz"),
            ("parameterized", "parameteriz"),
            ("sanitiser", "sanitiz"),
            ("sanitize", "sanitiz"),
            ("sanitised", "sanitiz"),
            ("raise", "rais"),
            ("raised", "rais"),
            ("serially", "serial"),
            ("manually", "manual"),
            ("explicitly", "explicit"),
            ("lazily", "lazy"),
            ("froze", "freez"),
            ("freeze", "freez"),
            ("string", "string"),
            ("thing", "thing"),
            ("need", "need"),
            ("agreed", "agree"),
            ("agree", "agree"),
            ("built", "build"),
            ("building", "build"),
            // Not stemmed: short, digits, identifiers, other scripts.
            ("js", "js"),
            ("i64", "i64"),
            ("k8s", "k8s"),
            ("数据库", "数据库"),
        ];
        for &(word, want) in cases {
            assert_eq!(stem(word), want, "stem({word:?})");
        }
    }

    fn terms(s: &str) -> Vec<String> {
        LexicalText::new(s).terms().to_vec()
    }

    #[test]
    fn terms_table() {
        let cases: &[(&str, &str)] = &[
            ("Parse the HTML with regular expressions", "pars html regex"),
            ("I tried parsing the HTML with regexes", "pars html regex"),
            ("Mock the DB layer", "mock database layer"),
            (
                "bump the k8s memory limit to 2Gi",
                "increase kubernetes memory limit 2048 mb",
            ),
            ("set the DATABASE_URL env var", "set database url envvar"),
            ("Sleep 100ms", "sleep 0.1 s"),
            ("sleep 100 milliseconds", "sleep 0.1 s"),
            ("upgrade React to v18", "increase react 18"),
            ("Turn off strictNullChecks", "disable strictnullcheck"),
            ("I turned strictNullChecks off", "strictnullcheck disable"),
            ("We'll retry right away", "retry immediately"),
            ("Don't retry", "not retry"),
            (
                "Change the loop condition from < to <=",
                "switch loop condition < <=",
            ),
            (
                "Add an index on orders.customer_id",
                "add index order customer id",
            ),
            (
                "Disable the JVM's container support flag",
                "disable jvm container support flag",
            ),
            ("Pin Node.js to version 18", "pin node 18"),
            (
                "run the integration tests sequentially",
                "run integration test serial",
            ),
            (
                "Run the integration tests in parallel",
                "run integration test parallel",
            ),
            ("", ""),
        ];
        for &(input, want) in cases {
            assert_eq!(terms(input).join(" "), want, "terms({input:?})");
        }
    }

    #[test]
    fn quantities_are_written_in_one_unit() {
        let cases: &[(&str, &str)] = &[
            ("timeout 600000 ms", "timeout 600 s"),
            ("timeout 600s", "timeout 600 s"),
            ("timeout of ten minutes", "timeout 600 s"),
            ("a 2 hour TTL", "7200 s ttl"),
            ("1.5 GB heap", "1536 mb heap"),
            ("limit 2Gi", "limit 2048 mb"),
            ("limit 512Mi", "limit 512 mb"),
            ("cap at 1 TiB", "cap 1048576 mb"),
            ("batches of 10,000 rows", "batch 10000 row"),
            ("batches of 10k rows", "batch 10000 row"),
            ("ports 80, 443", "port 80 443"),
            (
                "raise `max.poll.interval.ms` to 600000",
                "increase max poll interval ms 600",
            ),
            ("`cache_ttl_minutes` to 60", "cach ttl min 3600"),
            ("`timeout-minutes` to 60", "timeout min 3600"),
            ("`-lock-timeout=10m`", "lock timeout 600 s"),
            ("poll interval 5m", "poll interval 300 s"),
            ("`chunksize=100_000`", "chunksiz 100000"),
            ("`1_000_000` rows", "1000000 row"),
            ("ten thousand rows at a time", "10000 row tim"),
            ("two hundred workers", "200 worker"),
            (
                "include `config.h` with 3 retries",
                "includ config h 3 retry",
            ),
            // Not a quantity: another unit, a bare `m`, a unit across a boundary.
            ("3 retries", "3 retry"),
            ("cpu 500m", "cpu 500 m"),
            ("port 8080, s3 bucket", "port 8080 s3 bucket"),
        ];
        for &(input, want) in cases {
            assert_eq!(terms(input).join(" "), want, "terms({input:?})");
        }
    }

    #[test]
    fn developer_abbreviations_read_as_their_words() {
        let cases: &[(&str, &str)] = &[
            ("raise the mem limit", "increase the memory limit"),
            ("tf apply in prod", "terraform apply in production"),
            (
                "cache deps in GH Actions",
                "cache dependencies in GitHub Actions",
            ),
            ("npm i before the build", "npm install before the build"),
            ("scale the HPA", "scale the horizontal pod autoscaler"),
            ("the req ctx err", "the request context error"),
            ("OOM in the worker", "worker out of memory"),
            ("run it w/o the cache", "run it without the cache"),
            ("auto retry", "retry automatically"),
        ];
        for &(short, long) in cases {
            let (mut a, mut b) = (terms(short), terms(long));
            a.sort();
            b.sort();
            assert_eq!(a, b, "terms({short:?}) vs terms({long:?})");
        }
    }

    #[test]
    fn cached_analysis_equals_a_fresh_one_and_is_computed_once() {
        let text = "Bump the k8s memory limit to 2Gi, then retry the deploy";
        let first = LexicalText::cached(text);
        assert_eq!(*first, LexicalText::new(text));
        let second = LexicalText::cached(text);
        assert!(
            Arc::ptr_eq(&first, &second),
            "the second call analysed the text again"
        );
        // Another text is another entry.
        let other = LexicalText::cached("Decrease the timeout");
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(
            other.terms(),
            LexicalText::new("Decrease the timeout").terms()
        );
    }

    #[test]
    fn pieces_keep_identifiers_operators_and_stop_words() {
        let t = LexicalText::new("Add an index on orders.customer_id, then < → <=");
        let shown: Vec<String> = t
            .pieces()
            .iter()
            .map(|p| match p {
                Piece::Term(t) if t.stop => format!("({})", t.canon),
                Piece::Term(t) => t.canon.clone(),
                Piece::Op(op) => op.as_str().to_owned(),
                Piece::Boundary => "|".to_owned(),
            })
            .collect();
        assert_eq!(
            shown.join(" "),
            "add (an) index (on) orders.customer_id | (then) < → <="
        );
    }
}
