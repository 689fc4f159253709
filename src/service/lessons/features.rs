//! Alignment features of a (lesson, proposal) pair: what the two strategies share and what
//! differs between them, as numbers for the blacklist classifier ([`super::classifier`],
//! issue 30).
//!
//! One implementation serves training (`examples/train_blacklist.rs`, the evaluation in
//! `tests/blacklist_eval/`) and the server ([`super::matching`]), so the weights shipped in
//! `data/blacklist_model.tsv` always meet the features they were fitted on.
//!
//! Each text is read twice: whole, and cut at its first *reason clause* ([`split_reason`]: "…,
//! since the heap dump shows a 1.4 GB live set", "…so that CI goes green"), after the context
//! that precedes a stated intent when there is one ([`split_parts`]: "The pods are OOMKilled at
//! 1Gi…, so *I'll* set `GOMEMLIMIT`…"; the context joins the reason part). The strategy part
//! says what is done; the reason part says why, and often names the very value or target the
//! lesson used ("…, since 1 starves the workers"), which would otherwise read as shared. Rules
//! that look for a difference (the guard's opposites, swapped roles and substitutions,
//! [`super::guard`]) run on the strategy parts as well as on the whole texts.
//!
//! The features, in the order of [`LEXICAL_FEATURES`] (all in [0, 1] unless stated):
//!
//! | name | what |
//! |---|---|
//! | `dice` | Sørensen–Dice of the canonical terms of the whole texts ([`super::similarity::lexical_similarity`]) |
//! | `dice_strategy` | the same on the strategy parts |
//! | `lesson_covered` | share of the lesson's strategy terms found among the proposal's terms |
//! | `lesson_covered_4` | `lesson_covered` to the 4th power: near 1 only when almost all of the lesson is there (0.8 gives 0.41, 0.5 gives 0.06) |
//! | `proposal_covered` | share of the proposal's strategy terms found among the lesson's terms |
//! | `aligned` | longest common subsequence of the strategy parts' content terms, over the longer part |
//! | `lesson_missing` | lesson strategy terms the proposal lacks, / 5, at most 2 |
//! | `replaced` | the smaller of the lesson strategy terms the proposal lacks and the proposal strategy terms the lesson lacks, / 5, at most 2: words replaced rather than added |
//! | `action_missing` | 1 when the first content term of the lesson's strategy part (its verb, in an imperative) is absent from the proposal |
//! | `reversal` | 1 when opposite words or operators sit in the strategy parts (guard rule 1) |
//! | `reversal_whole` | 1 when they are found only in the whole texts (clause words included) |
//! | `swapped` | 1 when the same terms take swapped roles (guard rule 2, whole texts) |
//! | `changed_number` | 1 when the strategy parts align but for a number (guard rule 3) |
//! | `changed_target` | 1 when the strategy parts align but for a target (guard rule 3) |
//! | `substituted_whole` | 1 when guard rule 3 fires on the whole texts |
//! | `number_mismatch` | 1 when each strategy part has a number the other strategy part lacks, both of one kind of quantity (duration, size, count; a reason clause that repeats the old value does not hide the change; 30000 against 30 s is one value) |
//! | `identifier_mismatch` | 1 when each strategy part has an identifier the other text lacks |
//! | `negation_mismatch` | 1 when one strategy part has a negation cue (`without`, `no`, `not`, `stop`, `skip`, `unset`, `drop`, `remove`, `disable`…) the other text lacks |
//! | `reason_names_gap` | 1 when a lesson strategy term missing from the proposal's strategy part appears in its reason part |
//! | `negated` | 1 when a negation cue in one strategy part, absent from the other text, governs a term the other text has ("*Stop running* the migrations at startup" against "Run the migrations at startup"; "*without* `--force`" against "`--force`") |
//! | `rejected` | 1 when the proposal moves away from a term the lesson does ("… *instead of* in a `parallel` block" against "… in a `parallel` block"; `guard::rejected`) |
//! | `contrasted` | 1 when the proposal's reason part sets aside a lesson strategy term its strategy part lacks ("…, since the cold starts are in the authorizer, *not in* `orders-api`") |
//!
//! With a sentence-embedding model the classifier also reads `cosine`, the cosine similarity
//! of the two texts' vectors ([`super::vectors::cosine_score`]), see [`MODEL_FEATURES`].
//!
//! The difference features also carry the words that differ ([`Features::reasons`]), so that a
//! "different approach" verdict can name its reason (`reversal: increase vs decrease`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use super::guard::{self, GuardReason, Unit};
use super::lexical::{LexicalText, Piece, canonical_word};
use super::similarity::lexical_similarity;

/// Names of the features with a model, in vector order (see the module table): the
/// [`LEXICAL_FEATURES`], then `cosine`.
pub const MODEL_FEATURES: &[&str] = &[
    "dice",
    "dice_strategy",
    "lesson_covered",
    "lesson_covered_4",
    "proposal_covered",
    "aligned",
    "lesson_missing",
    "action_missing",
    "replaced",
    "reversal",
    "reversal_whole",
    "swapped",
    "changed_number",
    "changed_target",
    "substituted_whole",
    "number_mismatch",
    "identifier_mismatch",
    "negation_mismatch",
    "reason_names_gap",
    "negated",
    "rejected",
    "contrasted",
    "cosine",
];

/// Names of the lexical features, in vector order: [`MODEL_FEATURES`] without the last,
/// `cosine`.
pub const LEXICAL_FEATURES: &[&str] = match MODEL_FEATURES.split_last() {
    Some((_, lexical)) => lexical,
    None => &[],
};

/// The direction each feature of [`MODEL_FEATURES`] may push the decision: +1 toward "the
/// same approach" (similarities), −1 toward "another approach" (differences). Training keeps
/// every weight on its side ([`super::classifier::LogisticModel::fit_signed`]): a difference
/// never makes two strategies more alike, whatever correlations one data set happens to have.
pub const FEATURE_SIGNS: &[f64] = &[
    1.0,  // dice
    1.0,  // dice_strategy
    1.0,  // lesson_covered
    1.0,  // lesson_covered_4
    1.0,  // proposal_covered
    1.0,  // aligned
    -1.0, // lesson_missing
    -1.0, // action_missing
    -1.0, // replaced
    -1.0, // reversal
    -1.0, // reversal_whole
    -1.0, // swapped
    -1.0, // changed_number
    -1.0, // changed_target
    -1.0, // substituted_whole
    -1.0, // number_mismatch
    -1.0, // identifier_mismatch
    -1.0, // negation_mismatch
    -1.0, // reason_names_gap
    -1.0, // negated
    -1.0, // rejected
    -1.0, // contrasted
    1.0,  // cosine
];

/// Markers that open a reason clause, matched on the normalised (folded) text with their
/// surrounding spaces. General English subordinators of cause and purpose, not taken from any
/// pair set.
const REASON_MARKERS: &[&str] = &[
    " since ",
    " because ",
    " so that ",
    " so the ",
    " so it ",
    " so its ",
    " so their ",
    " so we ",
    " so ci ",
    ", so ",
    " so ",
    ", which ",
    ", as ",
    ", given ",
    " given that ",
    " in order to ",
    " to avoid ",
    " to make sure ",
    " to ensure ",
    " to prevent ",
    " — ",
    " – ",
    " - ",
    "; ",
    ", otherwise ",
    ", because ",
    ", since ",
    " as the ",
    " now that ",
];

/// Fewest words a strategy part keeps: a marker earlier than this is part of the strategy
/// ("Because the cache…" opens no reason clause for the cut).
const MIN_STRATEGY_WORDS: usize = 3;

/// Negation cues: a strategy that runs a step *without* something, or *stops* doing it, is not
/// the one that does it. General English, canonicalised as texts are.
const NEGATION_CUES: &[&str] = &[
    "without", "no", "not", "never", "stop", "skip", "unset", "drop", "remove", "disable", "avoid",
    "none", "off",
];

/// How far a negation cue reaches: the next this many words after it (stop words included),
/// "stop *running the* migrations", "without *the* `--force` flag".
const NEGATION_SCOPE: usize = 3;

/// Markers of a stated intent after context, matched on the normalised text with their
/// surrounding spaces: agents often write the symptom first and the step after it ("The pods
/// are OOMKilled at 1Gi while the heap is 500 MB, so I'll set `GOMEMLIMIT` to 900MiB"). General
/// English first-person future forms, not taken from any pair set.
pub const INTENT_MARKERS: &[&str] = &[
    " i'll ",
    " i will ",
    " we'll ",
    " we will ",
    " i'm going to ",
    " i am going to ",
    " we're going to ",
    " we are going to ",
    " i plan to ",
    " we plan to ",
    " let's ",
    " so i'm ",
];

/// Fewest words of context before an intent marker for the text to be read as context, then
/// strategy ("I'll" at the start, or after one or two words, opens the strategy itself).
pub const MIN_CONTEXT_WORDS: usize = 4;

/// Where the stated intent of `normalised` begins, after at least [`MIN_CONTEXT_WORDS`] words
/// of context: the byte offset of the first [`INTENT_MARKERS`] marker's word; `None` when the
/// text states no intent after context.
pub fn intent_start(normalised: &str) -> Option<usize> {
    INTENT_MARKERS
        .iter()
        .filter_map(|m| {
            let at = normalised.find(m)?;
            (normalised[..at].split_whitespace().count() >= MIN_CONTEXT_WORDS).then_some(at + 1)
        })
        .min()
}

/// `normalised` as (context, strategy part, reason part): the context before a stated intent
/// ([`intent_start`]), then the rest cut at its first reason marker ([`split_reason`]).
pub fn split_parts(normalised: &str) -> (Option<&str>, &str, Option<&str>) {
    let (context, rest) = match intent_start(normalised) {
        Some(at) => (Some(normalised[..at].trim_end()), &normalised[at..]),
        None => (None, normalised),
    };
    let (strategy, reason) = split_reason(rest);
    (context, strategy, reason)
}

/// `normalised` cut at its first reason marker: (strategy part, reason part). The strategy part
/// is the whole text when no marker follows at least three words.
pub fn split_reason(normalised: &str) -> (&str, Option<&str>) {
    let mut cut: Option<(usize, usize)> = None;
    for m in REASON_MARKERS {
        let mut from = 0;
        while let Some(at) = normalised[from..].find(m) {
            let at = from + at;
            let words = normalised[..at].split_whitespace().count();
            if words >= MIN_STRATEGY_WORDS {
                if cut.is_none_or(|(c, _)| at < c) {
                    cut = Some((at, at + m.len()));
                }
                break;
            }
            from = at + 1;
        }
    }
    match cut {
        Some((at, rest)) => (&normalised[..at], Some(&normalised[rest..])),
        None => (normalised, None),
    }
}

/// A strategy prepared for [`features`]: the whole text and its strategy and reason parts,
/// each analysed ([`LexicalText`]).
#[derive(Debug, Clone)]
pub struct Prepared {
    whole: Arc<LexicalText>,
    strategy: Arc<LexicalText>,
    reason: Option<Arc<LexicalText>>,
    /// Letters and digits of the whole text, lower-case, without separators: an identifier of
    /// the other text is "present" when its squashed form occurs here (`max.poll.records` in
    /// "max poll records").
    squashed: String,
    /// Identifiers written in backticks or with inner punctuation or digits, in the strategy
    /// part, squashed.
    identifiers: Vec<String>,
}

impl Prepared {
    /// Prepares a text (raw or normalised); parts are analysed afresh.
    pub fn new(text: &str) -> Prepared {
        Prepared::with(Arc::new(LexicalText::new(text)), |t| {
            Arc::new(LexicalText::new(t))
        })
    }

    /// [`Prepared::new`], remembered: for stored lessons, checked again and again. At most
    /// [`super::lexical::LEXICAL_MEMO_CAPACITY`] texts are kept; when full, the memo is emptied
    /// and fills again (as [`LexicalText::cached`], whose analyses it shares).
    pub fn cached(text: &str) -> Arc<Prepared> {
        static MEMO: LazyLock<Mutex<HashMap<Box<str>, Arc<Prepared>>>> =
            LazyLock::new(Mutex::default);
        // A poisoned lock only means another thread panicked between two map operations.
        let lookup = |text: &str| {
            MEMO.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(text)
                .cloned()
        };
        if let Some(p) = lookup(text) {
            return p;
        }
        let whole = LexicalText::cached(text);
        let prepared = Arc::new(Prepared::with(whole, LexicalText::cached));
        let mut memo = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
        if memo.len() >= super::lexical::LEXICAL_MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(text.into(), prepared.clone());
        prepared
    }

    /// Prepares around an analysis of the whole text that the caller already has.
    pub fn from_whole(whole: Arc<LexicalText>) -> Prepared {
        Prepared::with(whole, |t| Arc::new(LexicalText::new(t)))
    }

    fn with(whole: Arc<LexicalText>, analyse: impl Fn(&str) -> Arc<LexicalText>) -> Prepared {
        let normalised = whole.normalised();
        let (context, strategy_text, reason_text) = split_parts(normalised);
        let strategy = if strategy_text.len() < normalised.len() {
            analyse(strategy_text)
        } else {
            whole.clone()
        };
        // What the text says besides its step: the context before it and the reason after it.
        let reason = match (context, reason_text) {
            (Some(c), Some(r)) => Some(analyse(&format!("{c}; {r}"))),
            (c, r) => c.or(r).map(&analyse),
        };
        let squashed = squash(normalised);
        let identifiers = identifiers(strategy_text, &strategy);
        Prepared {
            whole,
            strategy,
            reason,
            squashed,
            identifiers,
        }
    }

    /// The analysis of the whole text.
    pub fn whole(&self) -> &LexicalText {
        &self.whole
    }
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).collect()
}

/// Squashed identifiers of a strategy part: spans in backticks, and terms written like
/// identifiers (inner `.`, `_`, `/`, `:` or digits) that are not plain numbers.
fn identifiers(text: &str, analysed: &LexicalText) -> Vec<String> {
    let mut out: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .map(squash)
        .filter(|s| s.chars().any(char::is_alphabetic))
        .collect();
    for p in analysed.pieces() {
        if let Piece::Term(t) = p
            && !t.stop
            && guard::is_identifier_like(&t.surface)
            && !guard::is_number(&t.canon)
        {
            let s = squash(&t.surface);
            if s.chars().any(char::is_alphabetic) && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// The features of one pair, with the differing words behind each difference feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    /// Values in the order of [`MODEL_FEATURES`] when a cosine was given, else of
    /// [`LEXICAL_FEATURES`].
    pub values: Vec<f64>,
    /// For difference features that are on: (feature index, what differs).
    pub reasons: Vec<(usize, GuardReason)>,
}

/// Index of a feature by name in [`MODEL_FEATURES`] (a prefix of which is
/// [`LEXICAL_FEATURES`]).
fn at(name: &str) -> usize {
    MODEL_FEATURES
        .iter()
        .position(|n| *n == name)
        .expect("a feature name")
}

/// Multiset of the content terms of a text.
fn bag(terms: &[String]) -> HashMap<&str, usize> {
    let mut m = HashMap::new();
    for t in terms {
        *m.entry(t.as_str()).or_default() += 1;
    }
    m
}

/// Terms of `a` (multiset) not matched in `b`.
fn missing<'a>(a: &'a [String], b: &HashMap<&str, usize>) -> Vec<&'a str> {
    let mut left = b.clone();
    a.iter()
        .filter(|t| match left.get_mut(t.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .map(String::as_str)
        .collect()
}

fn share_covered(a: &[String], b: &HashMap<&str, usize>) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    1.0 - missing(a, b).len() as f64 / a.len() as f64
}

fn negation_cues() -> &'static HashSet<String> {
    static CUES: std::sync::LazyLock<HashSet<String>> =
        std::sync::LazyLock::new(|| NEGATION_CUES.iter().map(|w| canonical_word(w)).collect());
    &CUES
}

/// Whether `units[i]` is a negation cue: a word of [`NEGATION_CUES`] (canonical), but not
/// `off` before an article ("off the main thread" moves work, it negates nothing).
fn is_cue(units: &[Unit<'_>], i: usize) -> bool {
    let u = &units[i];
    negation_cues().contains(u.canon)
        && !(u.surface == "off"
            && units
                .get(i + 1)
                .is_some_and(|n| matches!(n.surface, "the" | "a" | "an")))
}

/// Negation cues ([`is_cue`]) among a text's units, with their surfaces.
fn cues<'a>(units: &[Unit<'a>]) -> Vec<Unit<'a>> {
    (0..units.len())
        .filter(|&i| is_cue(units, i))
        .map(|i| units[i])
        .collect()
}

/// Words that also say "not this" without being a cue of their own: a value turned off
/// (`false`) and a replacement (`instead`, `rather`, `replace`, `switch`, `from`). A text with
/// one of them, or with a cue, already negates something, so the other text's cue is not
/// one-sided ("Set `autocrlf` `false`" against "Turn off `autocrlf`"; "Switched the autoscaler
/// from CPU to requests per second" against "Stop scaling on CPU and use requests per second").
const NEGATIVE_VALUES: &[&str] = &["false", "instead", "rather", "replace", "switch", "from"];

/// The first negation cue of `units` that governs a content term of the other text
/// (`other_terms`) — one among the next [`NEGATION_SCOPE`] units — while the other text
/// (`other_all`, `other_squashed`) says "not" nowhere: no cue, no [`NEGATIVE_VALUES`] word, and
/// not the cue inside an identifier (`DisableTestParallelization`). A cue right after `to` is a
/// purpose ("… to stop word splitting"), not a negation of the step. Returns (the cue's
/// surface, the term's surface).
fn governed<'a>(
    units: &[Unit<'a>],
    other_all: &[Unit<'_>],
    other_terms: &HashMap<&str, usize>,
    other_squashed: &str,
) -> Option<(&'a str, &'a str)> {
    static VALUES: LazyLock<HashSet<String>> =
        LazyLock::new(|| NEGATIVE_VALUES.iter().map(|w| canonical_word(w)).collect());
    let other_negates = other_all
        .iter()
        .any(|u| negation_cues().contains(u.canon) || VALUES.contains(u.canon));
    if other_negates {
        return None;
    }
    units.iter().enumerate().find_map(|(i, cue)| {
        let purpose = i > 0 && units[i - 1].canon == "to";
        if !is_cue(units, i) || purpose || other_squashed.contains(cue.surface) {
            return None;
        }
        units[i + 1..]
            .iter()
            .take(NEGATION_SCOPE)
            .find(|u| !negation_cues().contains(u.canon) && other_terms.contains_key(u.canon))
            .map(|u| (cue.surface, u.surface))
    })
}

/// What a number of a strategy part measures, from the term after it: [`super::lexical`]
/// writes every duration in `s` and every size in `mb`; any other number is a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Duration,
    Size,
    Count,
}

/// A number of a strategy part: its term, its value (NaN for a version such as `1.2.3`) and
/// what it measures.
#[derive(Debug, Clone, Copy)]
struct Quantity<'a> {
    term: &'a str,
    value: f64,
    kind: Kind,
}

impl Quantity<'_> {
    /// A bare count that is `other`'s duration in milliseconds, or the reverse (`testTimeout`
    /// 30000 against 30 s): configuration keys without a unit commonly take milliseconds.
    fn same_in_ms(&self, other: &Quantity<'_>) -> bool {
        match (self.kind, other.kind) {
            (Kind::Count, Kind::Duration) => self.value == other.value * 1000.0,
            (Kind::Duration, Kind::Count) => self.value * 1000.0 == other.value,
            _ => false,
        }
    }

    /// Whether one changed into the other would be a changed value: the same kind of
    /// quantity, a count of 1000 or more counting as a possible duration in milliseconds. (A
    /// 30 s timeout and a 200 MB test file are two quantities, not a changed value.)
    fn comparable(&self, other: &Quantity<'_>) -> bool {
        let ms = |q: &Quantity<'_>| q.kind == Kind::Count && q.value >= 1000.0;
        self.kind == other.kind
            || (ms(self) && other.kind == Kind::Duration)
            || (ms(other) && self.kind == Kind::Duration)
    }
}

/// The numbers of `part` ([`guard::is_number`]), in order, with what each measures.
fn quantities(part: &LexicalText) -> Vec<Quantity<'_>> {
    let terms = part.terms();
    terms
        .iter()
        .enumerate()
        .filter(|(_, t)| guard::is_number(t))
        .map(|(i, t)| Quantity {
            term: t,
            value: t.parse::<f64>().unwrap_or(f64::NAN),
            kind: match terms.get(i + 1).map(String::as_str) {
                Some("s") => Kind::Duration,
                Some("mb") => Kind::Size,
                _ => Kind::Count,
            },
        })
        .collect()
}

/// Words that set a thing aside in a reason clause: "…, not `orders-api`", "…, rather than
/// the parser". General English.
const CONTRAST_CUES: &[&str] = &["not", "rather", "instead"];

/// A contrast cue of a reason part ([`CONTRAST_CUES`]) followed, within [`NEGATION_SCOPE`]
/// units, by one of `dropped` (the lesson's strategy terms that the proposal's strategy part
/// lacks): the proposal says why the lesson's target is not the one.
fn contrasted(reason: &[Unit<'_>], dropped: &HashSet<&str>) -> Option<GuardReason> {
    static CUES: LazyLock<HashSet<String>> =
        LazyLock::new(|| CONTRAST_CUES.iter().map(|w| canonical_word(w)).collect());
    reason.iter().enumerate().find_map(|(i, cue)| {
        if !CUES.contains(cue.canon) {
            return None;
        }
        reason[i + 1..]
            .iter()
            .take(NEGATION_SCOPE)
            .find(|u| dropped.contains(u.canon))
            .map(|u| GuardReason::ChangedTarget {
                lesson: u.surface.to_owned(),
                proposal: format!("{} {}", cue.surface, u.surface),
            })
    })
}

/// The two coverage shares of [`features`] alone: (`lesson_covered`, `proposal_covered`), for a
/// caller that decides on them before computing the rest.
pub fn coverage(lesson: &Prepared, proposal: &Prepared) -> (f64, f64) {
    let (lw_bag, pw_bag) = (bag(lesson.whole.terms()), bag(proposal.whole.terms()));
    (
        share_covered(lesson.strategy.terms(), &pw_bag),
        share_covered(proposal.strategy.terms(), &lw_bag),
    )
}

/// The features of `proposal` against `lesson`; `cosine` is the model's similarity of the two
/// whole texts when a model is loaded (then the vector has [`MODEL_FEATURES`]' length).
pub fn features(lesson: &Prepared, proposal: &Prepared, cosine: Option<f64>) -> Features {
    let n = if cosine.is_some() {
        MODEL_FEATURES.len()
    } else {
        LEXICAL_FEATURES.len()
    };
    let mut v = vec![0.0; n];
    let mut reasons: Vec<(usize, GuardReason)> = Vec::new();
    let (lw, pw) = (&*lesson.whole, &*proposal.whole);
    let (ls, ps) = (&*lesson.strategy, &*proposal.strategy);

    v[at("dice")] = lexical_similarity(lw, pw);
    v[at("dice_strategy")] = lexical_similarity(ls, ps);
    let (lw_bag, pw_bag) = (bag(lw.terms()), bag(pw.terms()));
    let (ls_bag, ps_bag) = (bag(ls.terms()), bag(ps.terms()));
    v[at("lesson_covered")] = share_covered(ls.terms(), &pw_bag);
    v[at("lesson_covered_4")] = v[at("lesson_covered")].powi(4);
    v[at("proposal_covered")] = share_covered(ps.terms(), &lw_bag);
    let (lc, pc) = (guard::content(ls), guard::content(ps));
    let longer = lc.len().max(pc.len());
    if longer > 0 {
        v[at("aligned")] = guard::lcs(&lc, &pc).len() as f64 / longer as f64;
    }
    let lesson_missing = missing(ls.terms(), &pw_bag).len();
    let proposal_extra = missing(ps.terms(), &lw_bag).len();
    v[at("lesson_missing")] = (lesson_missing as f64 / 5.0).min(2.0);
    v[at("replaced")] = (lesson_missing.min(proposal_extra) as f64 / 5.0).min(2.0);
    if lc.first().is_some_and(|u| !pw_bag.contains_key(u.canon)) {
        v[at("action_missing")] = 1.0;
    }

    let mut flag = |name: &str, reason: Option<GuardReason>| {
        if let Some(r) = reason {
            let i = at(name);
            v[i] = 1.0;
            reasons.push((i, r));
            true
        } else {
            false
        }
    };
    if !flag("reversal", guard::opposite_states(ls, ps)) {
        flag("reversal_whole", guard::opposite_states(lw, pw));
    }
    flag("swapped", guard::swapped_roles(lw, pw));
    match guard::substitution(ls, ps) {
        Some(r @ GuardReason::ChangedNumber { .. }) => {
            flag("changed_number", Some(r));
        }
        Some(r) => {
            flag("changed_target", Some(r));
        }
        None => {}
    }
    flag("substituted_whole", guard::substitution(lw, pw));

    // Numbers of each strategy part that the other strategy part lacks, less those that are
    // the other's value in milliseconds; a change needs one of each side of one kind.
    let (lq, pq) = (quantities(ls), quantities(ps));
    fn unmatched<'a>(
        mine: &[Quantity<'a>],
        theirs: &[Quantity<'_>],
        their_bag: &HashMap<&str, usize>,
    ) -> Vec<Quantity<'a>> {
        mine.iter()
            .filter(|q| !their_bag.contains_key(q.term) && !theirs.iter().any(|o| q.same_in_ms(o)))
            .copied()
            .collect()
    }
    fn changed<'a>(mine: &[Quantity<'a>], theirs: &[Quantity<'_>]) -> Vec<&'a str> {
        mine.iter()
            .filter(|q| theirs.iter().any(|o| q.comparable(o)))
            .map(|q| q.term)
            .collect()
    }
    let (lm, pm) = (unmatched(&lq, &pq, &ps_bag), unmatched(&pq, &lq, &ls_bag));
    let (ln, pn) = (changed(&lm, &pm), changed(&pm, &lm));
    if !ln.is_empty() && !pn.is_empty() {
        flag(
            "number_mismatch",
            Some(GuardReason::ChangedNumber {
                lesson: ln.join(" "),
                proposal: pn.join(" "),
            }),
        );
    }
    // Identifiers of each strategy part absent from the other text.
    let absent = |ids: &[String], other: &Prepared| -> Vec<String> {
        ids.iter()
            .filter(|id| !other.squashed.contains(id.as_str()))
            .cloned()
            .collect()
    };
    let (li, pi) = (
        absent(&lesson.identifiers, proposal),
        absent(&proposal.identifiers, lesson),
    );
    if !li.is_empty() && !pi.is_empty() {
        flag(
            "identifier_mismatch",
            Some(GuardReason::ChangedTarget {
                lesson: li.join(" "),
                proposal: pi.join(" "),
            }),
        );
    }
    // Negation cues on one side only.
    let (l_units, p_units) = (guard::units(ls), guard::units(ps));
    let (l_all, p_all) = (guard::units(lw), guard::units(pw));
    let l_cues = guard::only_in(&cues(&l_units), &p_all);
    let p_cues = guard::only_in(&cues(&p_units), &l_all);
    if let Some(u) = l_cues.first().or(p_cues.first()) {
        let (lesson_word, proposal_word) = if l_cues.is_empty() {
            ("(none)".to_owned(), u.surface.to_owned())
        } else {
            (u.surface.to_owned(), "(none)".to_owned())
        };
        flag(
            "negation_mismatch",
            Some(GuardReason::Reversal {
                lesson: lesson_word,
                proposal: proposal_word,
            }),
        );
    }
    // A one-sided cue that governs a term of the other text.
    if let Some((cue, term)) = governed(&p_units, &l_all, &lw_bag, &lesson.squashed) {
        flag(
            "negated",
            Some(GuardReason::Reversal {
                lesson: term.to_owned(),
                proposal: format!("{cue} {term}"),
            }),
        );
    } else if let Some((cue, term)) = governed(&l_units, &p_all, &pw_bag, &proposal.squashed) {
        flag(
            "negated",
            Some(GuardReason::Reversal {
                lesson: format!("{cue} {term}"),
                proposal: term.to_owned(),
            }),
        );
    }
    flag("rejected", guard::rejected(lw, ps));

    // The proposal's reason names what its strategy part dropped from the lesson, and perhaps
    // sets it aside ("…, since the cold starts are in the authorizer, not in `orders-api`").
    let mut names_gap = false;
    if let Some(reason) = &proposal.reason {
        let in_reason = bag(reason.terms());
        let dropped = missing(ls.terms(), &ps_bag);
        names_gap = dropped.iter().any(|t| in_reason.contains_key(t));
        let dropped: HashSet<&str> = dropped.into_iter().collect();
        flag("contrasted", contrasted(&guard::units(reason), &dropped));
    }
    if names_gap {
        v[at("reason_names_gap")] = 1.0;
    }
    if let Some(c) = cosine {
        v[at("cosine")] = c;
    }
    Features { values: v, reasons }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(lesson: &str, proposal: &str) -> Features {
        features(&Prepared::new(lesson), &Prepared::new(proposal), None)
    }

    fn value(x: &Features, name: &str) -> f64 {
        x.values[at(name)]
    }

    #[test]
    fn feature_lists_agree() {
        assert_eq!(&MODEL_FEATURES[..LEXICAL_FEATURES.len()], LEXICAL_FEATURES);
        assert_eq!(MODEL_FEATURES.last(), Some(&"cosine"));
        assert_eq!(FEATURE_SIGNS.len(), MODEL_FEATURES.len());
    }

    #[test]
    fn split_reason_table() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "increase the heap to 6g, since the dump shows a 4 gb live set",
                "increase the heap to 6g",
                Some("the dump shows a 4 gb live set"),
            ),
            (
                "pin node to 20 so that ci goes green",
                "pin node to 20",
                Some("ci goes green"),
            ),
            // Too early to be a reason clause: the whole text is the strategy.
            ("because it is faster", "because it is faster", None),
            ("mock the database layer", "mock the database layer", None),
        ];
        for &(text, strategy, reason) in cases {
            assert_eq!(split_reason(text), (strategy, reason), "{text:?}");
        }
    }

    #[test]
    fn split_parts_finds_the_step_after_context() {
        // Written for this unit test, not taken from a pair set.
        let cases: &[(&str, Option<&str>, &str, Option<&str>)] = &[
            (
                "the nightly export times out after 30 minutes on the big tenant, so i'll raise \
                 the job timeout to 2 hours since the data doubled",
                Some("the nightly export times out after 30 minutes on the big tenant, so"),
                "i'll raise the job timeout to 2 hours",
                Some("the data doubled"),
            ),
            // A stated intent at the start is the strategy itself.
            (
                "i'll raise the job timeout to 2 hours",
                None,
                "i'll raise the job timeout to 2 hours",
                None,
            ),
            ("we raised the timeout", None, "we raised the timeout", None),
        ];
        for &(text, context, strategy, reason) in cases {
            assert_eq!(split_parts(text), (context, strategy, reason), "{text:?}");
        }
    }

    #[test]
    fn negation_governs_a_term_of_the_other_text() {
        // Written for these unit tests, not taken from a pair set.
        let negated = |lesson: &str, proposal: &str| value(&f(lesson, proposal), "negated");
        assert_eq!(
            negated(
                "Run the schema migrations at startup",
                "Stop running the schema migrations at startup, since two replicas race"
            ),
            1.0
        );
        assert_eq!(
            negated(
                "Pass `--force` to `helm upgrade`",
                "Run `helm upgrade` without `--force`"
            ),
            1.0
        );
        // The other text says "not" too: a value turned off, a replacement.
        assert_eq!(
            negated(
                "Set `autocrlf` to false in git config",
                "Turn off `autocrlf` in git config"
            ),
            0.0
        );
        // A purpose, and a cue inside the other text's identifier.
        assert_eq!(
            negated(
                "Quote every variable in `deploy.sh`",
                "Quoted all variables in `deploy.sh` to stop word splitting"
            ),
            0.0
        );
        assert_eq!(
            negated(
                "Disable parallel runs with `DisableParallelRuns = true`",
                "set DisableParallelRuns = true"
            ),
            0.0
        );
    }

    #[test]
    fn features_see_what_differs() {
        // A reversal hidden behind a clause that says `up`.
        let x = f(
            "Increase the checkout integration test timeout to 60s",
            "Decrease the checkout integration test timeout to 5s so the hang fails fast and \
             the stuck await shows up in the trace",
        );
        assert_eq!(value(&x, "reversal"), 1.0, "{x:?}");
        assert_eq!(value(&x, "number_mismatch"), 1.0);
        // A lone `without`.
        let x = f(
            "Run pip install with --generate-hashes",
            "Run pip install without --generate-hashes",
        );
        assert!(
            value(&x, "reversal") == 1.0 || value(&x, "negation_mismatch") == 1.0,
            "{x:?}"
        );
        // Bare milliseconds against seconds: the same value, or not.
        let x = f(
            "Set `requestTimeout` to 15000 in the client options",
            "Set `requestTimeout` to 15 s in the client options",
        );
        assert_eq!(value(&x, "number_mismatch"), 0.0, "{x:?}");
        let x = f(
            "Set `requestTimeout` to 15000 in the client options",
            "Set `requestTimeout` to 45 s in the client options",
        );
        assert_eq!(value(&x, "number_mismatch"), 1.0, "{x:?}");
        // `off the` moves work; it turns nothing off.
        let x = f(
            "Run the image resize on a worker thread",
            "Run the image resize off the main thread, on a worker thread",
        );
        assert_eq!(value(&x, "negated"), 0.0, "{x:?}");
        // A reason that sets the lesson's target aside; and one that does not.
        let x = f(
            "Raise the worker pool to 16 threads in the billing service",
            "Raise the worker pool to 16 threads in the search service, since the queue backs \
             up in search, not billing",
        );
        assert_eq!(value(&x, "contrasted"), 1.0, "{x:?}");
        let x = f(
            "Raise the worker pool to 16 threads in the billing service",
            "Raise the worker pool to 16 threads in billing, since the queue backs up there and \
             not in search",
        );
        assert_eq!(value(&x, "contrasted"), 0.0, "{x:?}");
        // Another identifier.
        let x = f(
            "Add an index on `orders.customer_id`",
            "Add an index on `payments.customer_id`, since the seq scan is on payments",
        );
        assert_eq!(value(&x, "identifier_mismatch"), 1.0, "{x:?}");
        // The same approach reworded: no difference feature on.
        let x = f(
            "Increase the timeout of the checkout test",
            "Raise the checkout test's timeout",
        );
        for name in [
            "reversal",
            "reversal_whole",
            "swapped",
            "changed_number",
            "changed_target",
            "number_mismatch",
            "identifier_mismatch",
            "negation_mismatch",
        ] {
            assert_eq!(value(&x, name), 0.0, "{name}: {x:?}");
        }
        assert_eq!(value(&x, "dice"), 1.0);
        assert_eq!(value(&x, "lesson_covered"), 1.0);
        assert!(x.reasons.is_empty());
    }

    #[test]
    fn features_have_the_advertised_length_and_ranges() {
        let l = Prepared::new("Mock the DB layer");
        let p = Prepared::new("mock the network layer, since the DB is fine");
        let lexical = features(&l, &p, None);
        assert_eq!(lexical.values.len(), LEXICAL_FEATURES.len());
        let model = features(&l, &p, Some(0.7));
        assert_eq!(model.values.len(), MODEL_FEATURES.len());
        assert_eq!(model.values[at("cosine")], 0.7);
        for (name, v) in MODEL_FEATURES.iter().zip(&model.values) {
            assert!(v.is_finite(), "{name}");
            assert!((0.0..=2.0).contains(v), "{name}: {v}");
        }
        // Empty texts give zeros, not NaN.
        let empty = features(&Prepared::new(""), &Prepared::new(""), None);
        assert!(empty.values.iter().all(|v| v.is_finite()));
    }
}
