//! The guard: a proposal that *scores* like a blacklisted lesson but reverses it or changes its
//! target is a different strategy.
//!
//! Similarity scores, lexical or from sentence embeddings, barely see the words that make "increase
//! the timeout" the opposite of "decrease the timeout", or "mock the database layer" another
//! strategy than "mock the network layer": everything else agrees. The guard looks at exactly those
//! words. It is called only for a lesson and a proposal whose score cleared the threshold, and
//! returns why they differ, or `None`. A guarded lesson is not a block but a near miss: the agent
//! sees it and decides.
//!
//! Both texts are read as [`LexicalText`] pieces (canonical terms, stop words included, operators,
//! clause boundaries; identifiers whole). Three rules, tried in this order:
//!
//! 1. **Opposites** ([`GuardReason::Reversal`]). Take the multiset difference of the two texts'
//!    terms and operators: the words only the lesson has, and those only the proposal has. If one
//!    of each is an antonym pair (increase / decrease — which covers raise, bump, upgrade, more,
//!    higher, up against lower, reduce, downgrade, fewer, down —, enable / disable, on / off, add /
//!    remove, before / after, with / without, true / false, serial / parallel, sync / async,
//!    implicit / explicit, inside / outside…, a word and its `un`/`non`/`dis` negation, or
//!    operators `<` / `<=`, `>` / `>=`, `==` / `!=`), the proposal does the opposite.
//!    *Rationale*: a synonym never produces an antonym pair (the word tables map synonyms to
//!    one concept first), while a reversal always does, whatever else was reworded.
//! 2. **Swapped roles** ([`GuardReason::SwappedOrder`]). Markers give the words near them a role:
//!    `from X to Y`, `X → Y`, `replace X with Y` make X old and Y new; `Y instead of X`,
//!    `Y rather than X` make Y new and X old; `X before Y` and `Y after X` put X first and Y
//!    second. A role holds the (up to two) content terms next to its marker, within the clause.
//!    When more of the shared terms sit in opposite roles than in the same role, the proposal swaps
//!    them ("use regular expressions instead of the YAML library" vs the reverse, `<` → `<=` vs
//!    `<=` → `<`). *Rationale*: these are the reversals that keep the same words, so rule 1 cannot
//!    see them; requiring the crossed terms to outnumber the agreeing ones keeps a paraphrase that
//!    moves one word between roles from firing.
//! 3. **Substitution** ([`GuardReason::ChangedNumber`], [`GuardReason::ChangedTarget`]). Align the
//!    content terms by their longest common subsequence. If the aligned terms cover at least half
//!    of the longer text (the rest agrees), every gap where *both* texts have words is a
//!    candidate. A gap that starts or ends with a number on both sides (`2Gi` vs `4Gi`, `3` vs
//!    `10` retries, `v18` vs `v20`, `port 0 and read it` vs `port 8081`), or with a number against
//!    a quantifier (`all users` vs `5% of users`), is a changed number. A gap of at most three
//!    words a side whose words all name a target is a changed target: content words that are not
//!    numbers nor adjectives or adverbs of manner (`new`, `fresh`, `explicit`…) — an identifier,
//!    a file name, a noun naming a component (`database` vs `network` layer, `values-prod.yaml` vs
//!    `values-staging.yaml`, `payment gateway` vs `shipping rates` client). Not a substitution: a
//!    word the other text has elsewhere (moved, not replaced); the same name spelt otherwise
//!    (`SealedSecret` / `sealed secret`, `tsconfig` / `tsconfig.json`); in the opening gap, where
//!    an imperative strategy has its verb, anything but an identifier (unless a text opens with a
//!    light verb — "*use* an LRU cache" — whose object comes first).
//!    *Rationale*: words only inserted or only deleted are added detail, which the lesson still
//!    covers; a replaced verb or manner word is the similarity's business (a synonym the tables
//!    missed, or an alternative); a replaced noun with everything else in place is the same action
//!    on something else.
//!
//! The guard errs on the side of letting a proposal through: a false alarm costs the agent a
//! look at the near miss, a missed block costs it a repeated failure only when the score, which
//! decides first, was wrong too.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::LazyLock;

use super::lexical::{self, LexicalText, Op, Piece, Term, canonical_word};

/// Why a proposal that scores like a lesson is nevertheless a different strategy. Wire names:
/// `reversal`, `swapped_order`, `changed_number`, `changed_target`.
#[derive(Debug, Clone, PartialEq, Eq, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum GuardReason {
    /// Opposite words or operators: `increase` vs `decrease`, `<` vs `<=`.
    Reversal {
        /// The lesson's word, as written (folded).
        lesson: String,
        /// The proposal's word.
        proposal: String,
    },
    /// The same things in swapped roles: `< → <=` vs `<= → <`, "X instead of Y" vs "Y instead
    /// of X".
    SwappedOrder {
        /// The lesson's roles, `old → new` (or `first → second`).
        lesson: String,
        /// The proposal's roles.
        proposal: String,
    },
    /// Another number or version where the rest agrees: `2gi` vs `4gi`.
    ChangedNumber {
        /// The lesson's words in the differing place.
        lesson: String,
        /// The proposal's words in that place.
        proposal: String,
    },
    /// Another target (component, file, identifier, value) where the rest agrees.
    ChangedTarget {
        /// The lesson's words in the differing place.
        lesson: String,
        /// The proposal's words in that place.
        proposal: String,
    },
}

impl GuardReason {
    /// Wire names, in the order of [`GuardReason::wire_name`]'s variants.
    pub const NAMES: &'static [&'static str] = <Self as strum::VariantNames>::VARIANTS;

    /// The wire name: `reversal`, `swapped_order`, `changed_number`, `changed_target`.
    pub fn wire_name(&self) -> &'static str {
        self.into()
    }

    /// The lesson's and the proposal's differing words.
    pub fn words(&self) -> (&str, &str) {
        match self {
            GuardReason::Reversal { lesson, proposal }
            | GuardReason::SwappedOrder { lesson, proposal }
            | GuardReason::ChangedNumber { lesson, proposal }
            | GuardReason::ChangedTarget { lesson, proposal } => (lesson, proposal),
        }
    }
}

/// A short human text: `"reversal: increase vs decrease"`, `"changed_target: database vs
/// network"`.
impl fmt::Display for GuardReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (l, p) = self.words();
        write!(f, "{}: {l} vs {p}", self.wire_name())
    }
}

/// Checks whether `proposal`, which scored as similar to `lesson`, reverses it or changes its
/// target. `None` when the guard sees no such difference (then the similarity decides). See the
/// module documentation for the three rules; they are tried in order and the first that fires
/// gives the reason.
pub fn check(lesson: &LexicalText, proposal: &LexicalText) -> Option<GuardReason> {
    opposites(lesson, proposal)
        .or_else(|| swapped_roles(lesson, proposal))
        .or_else(|| substitution(lesson, proposal))
}

// ---------------------------------------------------------------------------------------------
// Word lists, canonicalised once

struct Lists {
    antonyms: HashSet<(String, String)>,
    modifiers: HashSet<String>,
    light_verbs: HashSet<String>,
    quantifiers: HashSet<String>,
    markers: HashMap<String, Marker>,
}

/// Role markers of rule 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    From,
    To,
    Instead,
    Rather,
    Of,
    Than,
    Replace,
    With,
    Before,
    After,
    /// `→`, `->`, `=>`.
    Arrow,
}

static LISTS: LazyLock<Lists> = LazyLock::new(|| {
    let mut antonyms = HashSet::new();
    for &(a, b) in lexical::antonyms() {
        let (a, b) = (canonical_word(a), canonical_word(b));
        antonyms.insert((a.clone(), b.clone()));
        antonyms.insert((b, a));
    }
    for (a, b) in [
        ("<", "<="),
        (">", ">="),
        ("==", "!="),
        ("<", ">"),
        ("<=", ">="),
    ] {
        antonyms.insert((a.to_owned(), b.to_owned()));
        antonyms.insert((b.to_owned(), a.to_owned()));
    }
    let markers = [
        ("from", Marker::From),
        ("to", Marker::To),
        ("instead", Marker::Instead),
        ("rather", Marker::Rather),
        ("of", Marker::Of),
        ("than", Marker::Than),
        ("replace", Marker::Replace),
        ("with", Marker::With),
        ("by", Marker::With),
        ("before", Marker::Before),
        ("after", Marker::After),
    ]
    .into_iter()
    .map(|(w, m)| (canonical_word(w), m))
    .collect();
    Lists {
        antonyms,
        modifiers: lexical::modifiers()
            .iter()
            .map(|w| canonical_word(w))
            .collect(),
        light_verbs: ["use", "make", "turn"]
            .iter()
            .map(|w| canonical_word(w))
            .collect(),
        quantifiers: [
            "all", "each", "every", "any", "some", "none", "half", "max", "min",
        ]
        .iter()
        .map(|w| canonical_word(w))
        .collect(),
        markers,
    }
});

// ---------------------------------------------------------------------------------------------
// Rule 1: opposites

/// A term or operator with the text it came from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit<'a> {
    pub(super) canon: &'a str,
    pub(super) surface: &'a str,
}

pub(super) fn units(t: &LexicalText) -> Vec<Unit<'_>> {
    t.pieces()
        .iter()
        .filter_map(|p| match p {
            Piece::Term(Term { canon, surface, .. }) => Some(Unit { canon, surface }),
            Piece::Op(op) => Some(Unit {
                canon: op.as_str(),
                surface: op.as_str(),
            }),
            Piece::Boundary => None,
        })
        .collect()
}

/// Units of `a` not matched by a unit of `b` with the same canonical form (multiset difference).
pub(super) fn only_in<'a>(a: &[Unit<'a>], b: &[Unit<'_>]) -> Vec<Unit<'a>> {
    let mut left: HashMap<&str, usize> = HashMap::new();
    for u in b {
        *left.entry(u.canon).or_default() += 1;
    }
    a.iter()
        .filter(|u| match left.get_mut(u.canon) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect()
}

fn are_opposites(a: &str, b: &str) -> bool {
    if LISTS.antonyms.contains(&(a.to_owned(), b.to_owned())) {
        return true;
    }
    // A word and its negated form: uncommitted / committed, nonblocking / blocking.
    let negated = |x: &str, y: &str| {
        y.len() >= 4
            && ["un", "non", "dis"]
                .iter()
                .any(|p| x.strip_prefix(p).is_some_and(|rest| rest == y))
    };
    negated(a, b) || negated(b, a)
}

/// Whether the term at `pieces[i]` is used as a preposition, not as a state or a step, so that
/// it opposes nothing: a stop word that does not stand as a value (`on` in "render only on the
/// client", `with` in "create the index with …"; a value ends its clause or follows `=`), or
/// `off` before an article ("off the main thread").
pub(super) fn is_preposition(pieces: &[Piece], i: usize) -> bool {
    let Piece::Term(t) = &pieces[i] else {
        return false;
    };
    let next = pieces.get(i + 1);
    if t.stop {
        let value = matches!(next, None | Some(Piece::Boundary))
            || (i > 0 && matches!(pieces[i - 1], Piece::Op(Op::Assign)));
        return !value;
    }
    t.surface == "off"
        && matches!(next, Some(Piece::Term(n)) if matches!(n.surface.as_str(), "the" | "a" | "an"))
}

/// [`units`] without the ones used as prepositions ([`is_preposition`]).
pub(super) fn units_in_use(t: &LexicalText) -> Vec<Unit<'_>> {
    let pieces = t.pieces();
    pieces
        .iter()
        .enumerate()
        .filter(|&(i, _)| !is_preposition(pieces, i))
        .filter_map(|(_, p)| match p {
            Piece::Term(Term { canon, surface, .. }) => Some(Unit { canon, surface }),
            Piece::Op(op) => Some(Unit {
                canon: op.as_str(),
                surface: op.as_str(),
            }),
            Piece::Boundary => None,
        })
        .collect()
}

pub(super) fn opposites(lesson: &LexicalText, proposal: &LexicalText) -> Option<GuardReason> {
    opposite_units(&units(lesson), &units(proposal))
}

/// [`opposites`] for the classifier's `reversal` features: words used as prepositions
/// ([`is_preposition`]) oppose nothing there. (A `without` that drops what the lesson has
/// `with` is the `negated` feature's.)
pub(super) fn opposite_states(lesson: &LexicalText, proposal: &LexicalText) -> Option<GuardReason> {
    let reversal = |l: String, p: String| GuardReason::Reversal {
        lesson: l,
        proposal: p,
    };
    if let Some(u) = with_without(lesson, proposal) {
        return Some(reversal(format!("with {u}"), format!("without {u}")));
    }
    if let Some(u) = with_without(proposal, lesson) {
        return Some(reversal(format!("without {u}"), format!("with {u}")));
    }
    opposite_units(&units_in_use(lesson), &units_in_use(proposal))
}

/// `with X` in `a` against `without X` in `b`: the first content unit after a `without` of `b`
/// is among the [`ROLE_WINDOW`] + 1 content units after a `with` of `a` ("with `preload_app!`"
/// / "without `preload_app!`"; "with `CREATE INDEX CONCURRENTLY`" / "without `CONCURRENTLY`"),
/// so the preposition `with` does oppose `without` ("with `CREATE INDEX CONCURRENTLY`" /
/// "without blocking writes" do not).
fn with_without<'a>(a: &LexicalText, b: &'a LexicalText) -> Option<&'a str> {
    static WORDS: LazyLock<(String, String)> =
        LazyLock::new(|| (canonical_word("with"), canonical_word("without")));
    let (with, without) = (WORDS.0.as_str(), WORDS.1.as_str());
    let has = |t: &LexicalText, word: &str| {
        t.pieces()
            .iter()
            .any(|p| matches!(p, Piece::Term(x) if x.canon == word))
    };
    if !has(b, without) || !has(a, with) {
        return None;
    }
    let held: Vec<Unit<'_>> = following(a, with, ROLE_WINDOW + 1)
        .into_iter()
        .flatten()
        .collect();
    following(b, without, 1)
        .into_iter()
        .filter_map(|units| units.first().copied())
        .find(|u| held.iter().any(|h| h.canon == u.canon))
        .map(|u| u.surface)
}

/// For each occurrence of the term `word` in `t`, the first `n` content units after it within
/// its clause.
fn following<'t>(t: &'t LexicalText, word: &str, n: usize) -> Vec<Vec<Unit<'t>>> {
    let e = elems(t);
    t.pieces()
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Piece::Term(x) if x.canon == word))
        .map(|(i, _)| {
            e[i + 1..]
                .iter()
                .take_while(|x| !matches!(x, Elem::Boundary))
                .filter_map(|x| match x {
                    Elem::Content(u) => Some(*u),
                    _ => None,
                })
                .take(n)
                .collect()
        })
        .collect()
}

fn opposite_units(l: &[Unit<'_>], p: &[Unit<'_>]) -> Option<GuardReason> {
    let (l_only, p_only) = (only_in(l, p), only_in(p, l));
    for a in &l_only {
        for b in &p_only {
            if are_opposites(a.canon, b.canon) {
                return Some(GuardReason::Reversal {
                    lesson: a.surface.to_owned(),
                    proposal: b.surface.to_owned(),
                });
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Rule 2: swapped roles

/// How many content terms a role takes from next to its marker.
const ROLE_WINDOW: usize = 2;

/// An element of a text for rule 2.
#[derive(Debug, Clone, Copy)]
enum Elem<'a> {
    Content(Unit<'a>),
    Marker(Marker),
    Stop,
    Boundary,
}

fn elems(t: &LexicalText) -> Vec<Elem<'_>> {
    t.pieces()
        .iter()
        .map(|p| match p {
            Piece::Term(Term {
                canon,
                surface,
                stop,
            }) => match LISTS.markers.get(canon.as_str()) {
                Some(&m) => Elem::Marker(m),
                None if *stop => Elem::Stop,
                None => Elem::Content(Unit { canon, surface }),
            },
            Piece::Op(Op::Arrow) => Elem::Marker(Marker::Arrow),
            Piece::Op(Op::Assign) => Elem::Stop,
            Piece::Op(op) => Elem::Content(Unit {
                canon: op.as_str(),
                surface: op.as_str(),
            }),
            Piece::Boundary => Elem::Boundary,
        })
        .collect()
}

/// Up to `width` content units starting next to `at`, walking forward or backward, stopping at
/// a boundary or another marker.
fn window<'a>(e: &[Elem<'a>], at: usize, forward: bool, width: usize) -> Vec<Unit<'a>> {
    let mut out = Vec::new();
    let mut i = at;
    loop {
        if forward {
            i += 1;
            if i >= e.len() {
                break;
            }
        } else {
            if i == 0 {
                break;
            }
            i -= 1;
        }
        match e[i] {
            Elem::Content(u) => {
                out.push(u);
                if out.len() == width {
                    break;
                }
            }
            Elem::Stop => {}
            Elem::Marker(_) | Elem::Boundary => break,
        }
    }
    if !forward {
        out.reverse();
    }
    out
}

/// The two roles of a text: (old, new) from `from…to`, arrows, `replace…with`, `instead of`,
/// `rather than`; and (first, second) from `before` / `after`.
#[derive(Debug, Default)]
struct Roles<'a> {
    old: Vec<Unit<'a>>,
    new: Vec<Unit<'a>>,
    first: Vec<Unit<'a>>,
    second: Vec<Unit<'a>>,
}

fn roles<'a>(e: &[Elem<'a>]) -> Roles<'a> {
    roles_with(e, ROLE_WINDOW)
}

/// [`roles`], with at most `old_width` units in the old role (the others take
/// [`ROLE_WINDOW`]).
fn roles_with<'a>(e: &[Elem<'a>], old_width: usize) -> Roles<'a> {
    let old_window = |e: &[Elem<'a>], at: usize, forward: bool| window(e, at, forward, old_width);
    let window = |e: &[Elem<'a>], at: usize, forward: bool| window(e, at, forward, ROLE_WINDOW);
    let mut r = Roles::default();
    // The next marker of kind `m` after `i` within the clause.
    let find = |i: usize, m: Marker| {
        e[i + 1..]
            .iter()
            .take_while(|x| !matches!(x, Elem::Boundary))
            .position(|x| matches!(x, Elem::Marker(y) if *y == m))
            .map(|k| i + 1 + k)
    };
    let next_is = |i: usize, m: Marker| matches!(e.get(i + 1), Some(Elem::Marker(y)) if *y == m);
    for (i, x) in e.iter().enumerate() {
        let Elem::Marker(m) = *x else { continue };
        match m {
            Marker::From => {
                if let Some(j) = find(i, Marker::To) {
                    r.old.extend(old_window(e, i, true));
                    r.new.extend(window(e, j, true));
                }
            }
            Marker::Arrow => {
                r.old.extend(old_window(e, i, false));
                r.new.extend(window(e, i, true));
            }
            Marker::Replace => {
                if let Some(j) = find(i, Marker::With) {
                    r.old.extend(old_window(e, i, true));
                    r.new.extend(window(e, j, true));
                }
            }
            Marker::Instead if next_is(i, Marker::Of) => {
                r.new.extend(window(e, i, false));
                r.old.extend(old_window(e, i + 1, true));
            }
            Marker::Rather if next_is(i, Marker::Than) => {
                r.new.extend(window(e, i, false));
                r.old.extend(old_window(e, i + 1, true));
            }
            Marker::Before => {
                r.first.extend(window(e, i, false));
                r.second.extend(window(e, i, true));
            }
            Marker::After => {
                r.second.extend(window(e, i, false));
                r.first.extend(window(e, i, true));
            }
            _ => {}
        }
    }
    // A term in both roles of one text says nothing about its role.
    let drop_common = |a: &mut Vec<Unit<'a>>, b: &mut Vec<Unit<'a>>| {
        let common: HashSet<&str> = a
            .iter()
            .filter(|u| b.iter().any(|v| v.canon == u.canon))
            .map(|u| u.canon)
            .collect();
        a.retain(|u| !common.contains(u.canon));
        b.retain(|u| !common.contains(u.canon));
    };
    drop_common(&mut r.old, &mut r.new);
    drop_common(&mut r.first, &mut r.second);
    r
}

fn overlap(a: &[Unit<'_>], b: &[Unit<'_>]) -> usize {
    a.iter()
        .filter(|u| b.iter().any(|v| v.canon == u.canon))
        .count()
}

fn show(a: &[Unit<'_>]) -> String {
    a.iter().map(|u| u.surface).collect::<Vec<_>>().join(" ")
}

pub(super) fn swapped_roles(lesson: &LexicalText, proposal: &LexicalText) -> Option<GuardReason> {
    let (l, p) = (roles(&elems(lesson)), roles(&elems(proposal)));
    let cross = overlap(&l.old, &p.new)
        + overlap(&l.new, &p.old)
        + overlap(&l.first, &p.second)
        + overlap(&l.second, &p.first);
    let same = overlap(&l.old, &p.old)
        + overlap(&l.new, &p.new)
        + overlap(&l.first, &p.first)
        + overlap(&l.second, &p.second);
    if cross == 0 || cross <= same {
        return None;
    }
    let describe = |r: &Roles<'_>| {
        if !r.old.is_empty() || !r.new.is_empty() {
            format!("{} → {}", show(&r.old), show(&r.new))
        } else {
            format!("{} before {}", show(&r.first), show(&r.second))
        }
    };
    Some(GuardReason::SwappedOrder {
        lesson: describe(&l),
        proposal: describe(&p),
    })
}

/// A term the proposal moves away from (`instead of X`, `rather than X`, `from X to`, `replace
/// X with`) that the lesson does without moving away from it itself, while the proposal puts
/// something the lesson lacks in its place: "Run the stages sequentially instead of in a
/// `parallel` block" against "Run the stages in a `parallel` block". Only the first term after
/// the marker counts (the one it governs); arrows do not, since terse notes use them for
/// "becomes" (`mem limit -> 1Gi`). A proposal that names what it replaces where the lesson does
/// not mention it rejects nothing of the lesson, nor does a range the lesson shares ("from 3
/// to 4"). `None` when there is no such term.
pub(super) fn rejected(lesson: &LexicalText, proposal: &LexicalText) -> Option<GuardReason> {
    let without_arrows = |t| -> Vec<Elem<'_>> {
        elems(t)
            .into_iter()
            .map(|e| match e {
                Elem::Marker(Marker::Arrow) => Elem::Stop,
                e => e,
            })
            .collect()
    };
    let lesson_elems = without_arrows(lesson);
    let (l, p) = (
        roles(&lesson_elems),
        roles_with(&without_arrows(proposal), 1),
    );
    let left = abandoned(&lesson_elems);
    let done = content(lesson);
    let has = |units: &[Unit<'_>], u: &Unit<'_>| units.iter().any(|v| v.canon == u.canon);
    let range = |u: &Unit<'_>| is_number(u.canon) && p.new.iter().all(|v| has(&done, v));
    p.old
        .iter()
        .find(|u| has(&done, u) && !has(&l.old, u) && !has(&left, u) && !range(u))
        .map(|u| GuardReason::Reversal {
            lesson: u.surface.to_owned(),
            proposal: format!("instead of {}", u.surface),
        })
}

/// What a text moves away from even where [`roles`] finds no complete pair of markers: the
/// [`ROLE_WINDOW`] content units after `replace` or `from` (a `with` or `to` may sit past a
/// clause boundary, "Replaced `create(:user)` with …", or be `into`), and after `swap` or
/// `switch` unless the verb was `switch to` (whose object is the new thing).
fn abandoned<'a>(e: &[Elem<'a>]) -> Vec<Unit<'a>> {
    static VERBS: LazyLock<HashSet<String>> = LazyLock::new(|| {
        ["swap", "switch"]
            .iter()
            .map(|w| canonical_word(w))
            .collect()
    });
    let mut out = Vec::new();
    for (i, x) in e.iter().enumerate() {
        let opens = match x {
            Elem::Marker(Marker::Replace | Marker::From) => true,
            Elem::Content(u) => VERBS.contains(u.canon) && !u.surface.ends_with(" to"),
            _ => false,
        };
        if opens {
            out.extend(window(e, i, true, ROLE_WINDOW));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Rule 3: substitution

/// Content units (terms that are not stop words, comparison operators).
pub(super) fn content(t: &LexicalText) -> Vec<Unit<'_>> {
    t.pieces()
        .iter()
        .filter_map(|p| match p {
            Piece::Term(Term {
                canon,
                surface,
                stop: false,
            }) => Some(Unit { canon, surface }),
            Piece::Op(op) if !matches!(op, Op::Assign | Op::Arrow) => Some(Unit {
                canon: op.as_str(),
                surface: op.as_str(),
            }),
            _ => None,
        })
        .collect()
}

/// Longest common subsequence of canonical forms: the aligned index pairs, in order.
pub(super) fn lcs(a: &[Unit<'_>], b: &[Unit<'_>]) -> Vec<(usize, usize)> {
    let (n, m) = (a.len(), b.len());
    let mut dp = vec![vec![0u16; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            dp[i][j] = if a[i].canon == b[j].canon {
                dp[i + 1][j + 1] + 1
            } else {
                dp[i + 1][j].max(dp[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n && j < m {
        if a[i].canon == b[j].canon {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if dp[i + 1][j] >= dp[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Longest run of differing words that still counts as one substituted target.
const MAX_SUBSTITUTION: usize = 3;

pub(super) fn is_number(canon: &str) -> bool {
    canon.starts_with(|c: char| c.is_ascii_digit())
}

/// A run of differing words names a target: every word is a content word that is not a number
/// and not an adjective or adverb of manner. In the opening gap, where an imperative strategy
/// has its verb ("*Randomise* the test order" / "*Shuffle* the test order"), only identifiers
/// count: a different first word is a different action or a synonym, which is the similarity's
/// business. Later in the sentence a word such as `lock`, `release` or `deploy` is read as the
/// noun it mostly is there ("a lock", "the release mode", "the deploy script").
fn names_target(run: &[Unit<'_>], opening: bool) -> bool {
    run.iter().all(|u| {
        u.canon.chars().any(char::is_alphanumeric)
            && !is_number(u.canon)
            && !LISTS.modifiers.contains(u.canon)
            && (!opening || is_identifier_like(u.surface))
    })
}

/// The first content word of the text is its verb: the text does not open with a light verb
/// whose object comes next ("*Use* an LRU cache", "*make* the index start at 1", "*turn* the
/// cache off"). Pronouns and auxiliaries before it do not matter ("I tried mocking…").
fn verb_first(t: &LexicalText) -> bool {
    for p in t.pieces() {
        if let Piece::Term(Term { canon, stop, .. }) = p {
            if !stop {
                return true;
            }
            if LISTS.light_verbs.contains(canon.as_str()) {
                return false;
            }
        }
    }
    true
}

/// Written like an identifier: inner punctuation or digits (`values-prod.yaml`, `i64`, `s3`).
pub(super) fn is_identifier_like(surface: &str) -> bool {
    surface
        .chars()
        .any(|c| c.is_ascii_digit() || matches!(c, '.' | '_' | '/' | ':'))
}

/// The letters and digits of a run's surfaces, lower-case, e.g. `sealed secret` → `sealedsecret`.
fn squashed(run: &[Unit<'_>]) -> String {
    run.iter()
        .flat_map(|u| u.surface.chars())
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// Two runs that name the same thing spelt otherwise: one word or two (`SealedSecret` / `sealed
/// secret`), or a bare name against the same name with an extension or qualifier (`tsconfig` /
/// `tsconfig.json`, `Node` / `Node.js`). Two qualified names are different files
/// (`package.json` / `package-lock.json`).
fn same_name(a: &[Unit<'_>], b: &[Unit<'_>]) -> bool {
    if squashed(a) == squashed(b) {
        return true;
    }
    let bare_of = |bare: &[Unit<'_>], qualified: &[Unit<'_>]| match (bare, qualified) {
        ([x], [y, ..]) if !is_identifier_like(x.surface) && is_identifier_like(y.surface) => {
            let first = y.surface.split(|c: char| !c.is_alphanumeric()).next();
            first.is_some_and(|f| canonical_word(f) == x.canon || f == x.surface)
        }
        _ => false,
    };
    bare_of(a, b) || bare_of(b, a)
}

pub(super) fn substitution(lesson: &LexicalText, proposal: &LexicalText) -> Option<GuardReason> {
    let (l, p) = (content(lesson), content(proposal));
    let aligned = lcs(&l, &p);
    let longer = l.len().max(p.len());
    if aligned.len() < 2 || 2 * aligned.len() < longer {
        return None;
    }
    let in_l: HashSet<&str> = l.iter().map(|u| u.canon).collect();
    let in_p: HashSet<&str> = p.iter().map(|u| u.canon).collect();
    // A word the other text has elsewhere was moved, not replaced.
    let moved = |u: &Unit<'_>, other: &HashSet<&str>| other.contains(u.canon);
    let quantifier = |u: &Unit<'_>| LISTS.quantifiers.contains(u.canon);
    // Gaps between aligned pairs (and before the first, after the last).
    let mut prev = (0usize, 0usize);
    let ends = aligned
        .iter()
        .copied()
        .chain(std::iter::once((l.len(), p.len())));
    for (g, (i, j)) in ends.enumerate() {
        let (lr, pr) = (&l[prev.0..i], &p[prev.1..j]);
        prev = (i + 1, j + 1);
        let (Some(lf), Some(pf), Some(ll), Some(pl)) =
            (lr.first(), pr.first(), lr.last(), pr.last())
        else {
            continue;
        };
        // Numbers: the gap starts or ends with a number on both sides (`to 0 and read the
        // port` vs `to 8081`), or a number faces a quantifier (`all users` vs `5% of users`).
        let number_pair = |a: &Unit<'_>, b: &Unit<'_>| {
            let num_or_q = |u: &Unit<'_>| is_number(u.canon) || quantifier(u);
            (is_number(a.canon) || is_number(b.canon))
                && num_or_q(a)
                && num_or_q(b)
                && !moved(a, &in_p)
                && !moved(b, &in_l)
        };
        if number_pair(lf, pf) || number_pair(ll, pl) {
            return Some(GuardReason::ChangedNumber {
                lesson: show(lr),
                proposal: show(pr),
            });
        }
        if lr.len() > MAX_SUBSTITUTION || pr.len() > MAX_SUBSTITUTION {
            continue;
        }
        if lr.iter().any(|u| moved(u, &in_p)) || pr.iter().any(|u| moved(u, &in_l)) {
            continue;
        }
        if same_name(lr, pr) {
            continue;
        }
        let opening = g == 0 && verb_first(lesson) && verb_first(proposal);
        if names_target(lr, opening) && names_target(pr, opening) {
            return Some(GuardReason::ChangedTarget {
                lesson: show(lr),
                proposal: show(pr),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(lesson: &str, proposal: &str) -> Option<String> {
        check(&LexicalText::new(lesson), &LexicalText::new(proposal)).map(|r| r.to_string())
    }

    #[test]
    fn guard_table() {
        // (lesson, proposal, expected reason text or None)
        let cases: &[(&str, &str, Option<&str>)] = &[
            // Rule 1: opposites, through the synonym tables.
            (
                "Increase the timeout of the checkout test",
                "Decrease the timeout of the checkout test",
                Some("reversal: increase vs decrease"),
            ),
            (
                "Raise the memory limit of the worker pod",
                "lower the memory limit of the worker pod",
                Some("reversal: raise vs lower"),
            ),
            (
                "Enable keepalive pings",
                "Turn off keepalive pings",
                Some("reversal: enable vs turn off"),
            ),
            (
                "Add exponential backoff with jitter",
                "Add exponential backoff without jitter",
                Some("reversal: with vs without"),
            ),
            (
                "Invalidate the cache after the database write",
                "Invalidate the cache before the DB write",
                Some("reversal: after vs before"),
            ),
            (
                "Lower the isolation level to READ COMMITTED",
                "Lower the isolation level to READ UNCOMMITTED",
                Some("reversal: committed vs uncommitted"),
            ),
            // Rule 2: swapped roles.
            (
                "Change the loop condition from < to <=",
                "Change the loop condition from <= to <",
                Some("swapped_order: < → <= vs <= → <"),
            ),
            (
                "Use the YAML library instead of regular expressions",
                "Use regular expressions instead of the YAML library",
                Some(
                    "swapped_order: regular expressions → yaml library vs yaml library → regular expressions",
                ),
            ),
            (
                "Switch the base image from ubuntu to alpine",
                "base image: alpine → ubuntu",
                Some("swapped_order: ubuntu → alpine vs alpine → ubuntu"),
            ),
            // Rule 3: substitutions.
            (
                "Raise the memory limit of the worker pod to 2Gi",
                "Raise the memory limit of the worker pod to 4Gi",
                Some("changed_number: 2gi vs 4gi"),
            ),
            (
                "Mock the database layer in the unit tests",
                "Mock the network layer in the unit tests",
                Some("changed_target: database vs network"),
            ),
            (
                "Set replicaCount to 3 in values-prod.yaml",
                "Set replicaCount to 3 in values-staging.yaml",
                Some("changed_target: prod.yaml vs staging.yaml"),
            ),
            (
                "Replace std::sync::Mutex with tokio::sync::Mutex",
                "Replace tokio::sync::Mutex with std::sync::Mutex",
                Some("swapped_order: std → tokio vs tokio → std"),
            ),
            (
                "Run the container as root",
                "Run the container as a non-root user",
                Some("reversal: root vs nonroot"),
            ),
            (
                "Key the npm cache on the hash of package-lock.json",
                "Key the npm cache on the hash of package.json",
                Some("changed_target: package lock.json vs package.json"),
            ),
            (
                "Use an LRU cache with 10000 entries",
                "Use an LFU cache with 10000 entries",
                Some("changed_target: lru vs lfu"),
            ),
            // Paraphrases pass.
            (
                "Turn off strictNullChecks in tsconfig.json",
                "disable strictNullChecks in the tsconfig",
                None,
            ),
            (
                "Hold the mutex guard across the await point",
                "We held the mutex guard across the await point",
                None,
            ),
            (
                "Randomise the test order with pytest-randomly",
                "Shuffle the test order with pytest-randomly",
                None,
            ),
            (
                "Raise the memory limit of the worker pod to 2Gi",
                "increase the k8s worker pod memory limit to 2Gi",
                None,
            ),
            (
                "Increase the test timeout",
                "raise the timeout of the test",
                None,
            ),
            (
                "Switch the garbage collector from G1 to ZGC",
                "use ZGC instead of G1 as the GC",
                None,
            ),
            ("Mock the database layer", "Mock the DB layer", None),
            (
                "Add a retry loop around the database connection",
                "Add a retry loop with 5 attempts around the database connection",
                None,
            ),
            (
                "Wrap the session map in a mutex",
                "Guard the session map with a lock",
                None,
            ),
            (
                "Start the page index at 1 instead of 0",
                "Make the page index begin at 1 rather than 0",
                None,
            ),
        ];
        for &(lesson, proposal, want) in cases {
            assert_eq!(
                guard(lesson, proposal).as_deref(),
                want,
                "{lesson:?} vs {proposal:?}"
            );
        }
    }

    #[test]
    fn prepositions_oppose_nothing() {
        // Written for this unit test, not taken from a pair set.
        let opposed = |l: &str, p: &str| {
            opposite_states(&LexicalText::new(l), &LexicalText::new(p)).map(|r| r.to_string())
        };
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "Disable SSR for the chart",
                "Render the chart only on the client",
                None,
            ),
            (
                "Set `feature.beta` to on",
                "Disable `feature.beta`",
                Some("reversal: on vs disable"),
            ),
            (
                "Build the bundle with esbuild",
                "Build the bundle without minifying",
                None,
            ),
            (
                "Start the app with `--inspect` and `NODE_ENV=test`",
                "Start the app without `--inspect`",
                Some("reversal: with inspect vs without inspect"),
            ),
            (
                "Start the app without `--inspect`",
                "Start the app with `--inspect`, to attach the debugger",
                Some("reversal: without inspect vs with inspect"),
            ),
            (
                "Resize the images on a worker",
                "Resize the images off the request thread",
                None,
            ),
            (
                "Turn the cache on",
                "Turn the cache off",
                Some("reversal: on vs off"),
            ),
        ];
        for &(l, p, want) in cases {
            assert_eq!(opposed(l, p).as_deref(), want, "{l:?} / {p:?}");
        }
    }

    #[test]
    fn rejected_table() {
        // Written for this unit test, not taken from a pair set.
        let rejected = |l: &str, p: &str| {
            rejected(&LexicalText::new(l), &LexicalText::new(p)).map(|r| r.to_string())
        };
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "Run the test shards in a `parallel` stage",
                "Run the test shards one after another instead of in a `parallel` stage",
                Some("reversal: parallel vs instead of parallel"),
            ),
            (
                "Keep the sessions in the Redis cluster",
                "Keep the sessions in Postgres rather than Redis",
                Some("reversal: redis vs instead of redis"),
            ),
            // The lesson moves away from the same thing: a rewording.
            (
                "Replace `moment` with `dayjs` in the date helpers",
                "Use `dayjs` instead of `moment` in the date helpers",
                None,
            ),
            // … even where its `with` or `to` is past a clause boundary, or is `into`, or the
            // verb is `switch`.
            (
                "Replaced `fetch(url)` with `axios.get(url)` in the client",
                "Call `axios.get(url)` instead of `fetch(url)` in the client",
                None,
            ),
            (
                "Moved the retry loop from `worker.py` into the `Scheduler`",
                "Keep the retry loop in the `Scheduler` rather than `worker.py`",
                None,
            ),
            (
                "Switched `yarn install` to `pnpm install` in the lint job",
                "Use `pnpm install` in the lint job instead of `yarn install`",
                None,
            ),
            // `switch to X` takes X up: moving away from X is another approach.
            (
                "Switch to the G1 collector",
                "Use the parallel collector instead of G1",
                Some("reversal: g1 vs instead of g1"),
            ),
            // What the proposal replaces is not in the lesson: added detail.
            (
                "Use `dayjs` in the date helpers",
                "Use `dayjs` instead of the hand-written parser in the date helpers",
                None,
            ),
            // An arrow in a terse note, and a range the lesson shares.
            ("Raise the memory limit to 1Gi", "memory limit -> 1Gi", None),
            (
                "Scale the consumers between 3 and 4 replicas",
                "Let the consumers go from 3 to 4 replicas",
                None,
            ),
        ];
        for &(l, p, want) in cases {
            assert_eq!(rejected(l, p).as_deref(), want, "{l:?} / {p:?}");
        }
    }

    #[test]
    fn wire_names_match_variants() {
        let r = [
            GuardReason::Reversal {
                lesson: "a".into(),
                proposal: "b".into(),
            },
            GuardReason::SwappedOrder {
                lesson: "a".into(),
                proposal: "b".into(),
            },
            GuardReason::ChangedNumber {
                lesson: "a".into(),
                proposal: "b".into(),
            },
            GuardReason::ChangedTarget {
                lesson: "a".into(),
                proposal: "b".into(),
            },
        ];
        let names: Vec<&str> = r.iter().map(GuardReason::wire_name).collect();
        assert_eq!(names, GuardReason::NAMES);
    }
}
