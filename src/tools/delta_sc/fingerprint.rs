//! The fingerprint argument of `gwt_compute_delta_sc` ([`WireFingerprint`]): a hand-written
//! `Deserialize` that reads the 13 embedder vectors straight from the JSON value into `f32`
//! vectors (no intermediate copies). Its JSON Schema, written by hand to state every rule of a
//! fingerprint that JSON Schema can state, is in [`super::schema`].
//!
//! Two forms are accepted: the object of the 13 embedder fields and nothing else; or an object
//! whose `semantic` field is that object and which has no embedder field beside it (its other
//! fields are ignored, so that a whole stored memory record can be passed as it is). E12 is the
//! array of token vectors, or `{"tokens": [...]}`. The tool reads valid arguments by a direct
//! walk with the same rules ([`super::fast`]); this reader gives the verdict and the message
//! when that walk refuses them.
//!
//! Every reader is infallible at the serde level: a problem comes back as `Ok(Err(message))` and
//! the rest of the value is skipped. The fingerprint then reports the first problem in embedder
//! order from its own level, as `{field}: message`, and `wire::parse` puts the argument's name in
//! place of `{field}`. (An error raised inside an element would carry serde's path instead,
//! `new_fingerprint.e8_graph[0]: …`, and the embedder order would be lost.)

use std::fmt;

use serde::Deserialize;
use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::Value;

use crate::service::delta_sc::{
    EmbedderKind, EmbedderValue, Fingerprint, FingerprintBuilder, SPARSE_VOCAB, SparseVector,
    TOKEN_DIM, TokenVectors,
};
use crate::service::vocab::{EmbedderId, NUM_EMBEDDERS};
use crate::tools::wire::FIELD;

/// The largest magnitude accepted, just under `f32::MAX` ≈ 3.4028e38 (vectors are kept as
/// 32-bit floats), and short to state in the schema.
pub const F32_LIMIT: f64 = 3.4e38;

/// The field of the wrapper form.
pub const SEMANTIC: &str = "semantic";

/// A validated 13-embedder fingerprint read from a tool argument.
#[derive(Debug, Clone, PartialEq)]
pub struct WireFingerprint(pub Fingerprint);

impl<'de> Deserialize<'de> for WireFingerprint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Read(Whole { nested: false }).deserialize(d)? {
            Ok(fp) => Ok(WireFingerprint(fp)),
            Err(m) => Err(D::Error::custom(format!("{FIELD}{m}"))),
        }
    }
}

/// What a reader produces: the value, or the message of the first problem.
type Got<T> = Result<T, String>;

/// A reader of one JSON value of a given shape; [`Read`] turns it into a serde seed. Values of
/// another shape are reported with [`Reader::wrong`].
trait Reader<'de>: Sized {
    type Out;
    /// The message for a value of the wrong JSON type, `kind` as a noun phrase ("a string").
    fn wrong(&self, kind: &str) -> String;
    /// Read an array.
    fn seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Got<Self::Out>, A::Error> {
        let m = self.wrong("an array");
        drain_seq(seq)?;
        Ok(Err(m))
    }
    /// Read an object.
    fn map<A: MapAccess<'de>>(self, map: A) -> Result<Got<Self::Out>, A::Error> {
        let m = self.wrong("an object");
        drain_map(map)?;
        Ok(Err(m))
    }
}

struct Read<R>(R);

impl<'de, R: Reader<'de>> DeserializeSeed<'de> for Read<R> {
    type Value = Got<R::Out>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, R: Reader<'de>> Visitor<'de> for Read<R> {
    type Value = Got<R::Out>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.map(map)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err(self.0.wrong("a number")))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err(self.0.wrong("a number")))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err(self.0.wrong("a number")))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(self.0.wrong("a boolean")))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Err(self.0.wrong("a string")))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Err(self.0.wrong("null")))
    }
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// One array element where a number is expected, as JSON gave it.
#[derive(Debug, Clone, Copy)]
enum Elem {
    U(u64),
    I(i64),
    F(f64),
    /// Not a number: what it is, as a noun phrase.
    Other(&'static str),
}

impl Elem {
    fn number(self) -> Option<f64> {
        match self {
            Elem::U(n) => Some(n as f64),
            Elem::I(n) => Some(n as f64),
            Elem::F(x) => Some(x),
            Elem::Other(_) => None,
        }
    }

    /// The value as JSON writes it.
    fn shown(self) -> String {
        match self {
            Elem::U(n) => n.to_string(),
            Elem::I(n) => n.to_string(),
            Elem::F(x) => Value::from(x).to_string(),
            Elem::Other(kind) => kind.to_string(),
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Elem::Other(kind) => kind,
            _ => "a number",
        }
    }
}

impl<'de> Deserialize<'de> for Elem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ElemVisitor)
    }
}

struct ElemVisitor;

impl<'de> Visitor<'de> for ElemVisitor {
    type Value = Elem;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_u64<E>(self, n: u64) -> Result<Elem, E> {
        Ok(Elem::U(n))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Elem, E> {
        Ok(Elem::I(n))
    }
    fn visit_f64<E>(self, x: f64) -> Result<Elem, E> {
        Ok(Elem::F(x))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Elem, E> {
        Ok(Elem::Other("a boolean"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Elem, E> {
        Ok(Elem::Other("a string"))
    }
    fn visit_unit<E>(self) -> Result<Elem, E> {
        Ok(Elem::Other("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Elem, A::Error> {
        drain_seq(seq)?;
        Ok(Elem::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Elem, A::Error> {
        drain_map(map)?;
        Ok(Elem::Other("an object"))
    }
}

/// Where an array of floats sits, for messages.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A dense embedder and its dimension: `e1_semantic`.
    Dense(&'static str, usize),
    /// The values of a sparse embedder: `e6_sparse.values`.
    Values(&'static str),
    /// One E12 token: `e12_late_interaction: tokens[3]`.
    Token(&'static str, usize),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Dense(field, _) => f.write_str(field),
            Place::Values(field) => write!(f, "{field}.values"),
            Place::Token(field, t) => write!(f, "{field}: tokens[{t}]"),
        }
    }
}

/// An array of numbers into `Vec<f32>`: each with `|x| <=` [`F32_LIMIT`], and `>= 0` for
/// sparse values. Dimensions and the other rules are checked by [`FingerprintBuilder::build`].
struct Floats(Place);

impl<'de> Reader<'de> for Floats {
    type Out = Vec<f32>;
    fn wrong(&self, kind: &str) -> String {
        let expected = match self.0 {
            Place::Dense(_, dim) => format!("an array of {dim} numbers"),
            Place::Values(_) => "an array of numbers".to_string(),
            Place::Token(..) => format!("an array of {TOKEN_DIM} numbers"),
        };
        format!("{}: expected {expected}, got {kind}", self.0)
    }

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got<Vec<f32>>, A::Error> {
        // Sized up front (a too-long array does not get a huge allocation).
        let cap = match self.0 {
            Place::Dense(_, dim) => seq.size_hint().unwrap_or(dim).min(2 * dim),
            Place::Token(..) => seq.size_hint().unwrap_or(TOKEN_DIM).min(2 * TOKEN_DIM),
            Place::Values(_) => seq.size_hint().unwrap_or(0).min(SPARSE_VOCAB),
        };
        let mut out = Vec::with_capacity(cap);
        let sparse_values = matches!(self.0, Place::Values(_));
        while let Some(e) = seq.next_element::<Elem>()? {
            let i = out.len();
            let problem = match e.number() {
                Some(x) if x.abs() <= F32_LIMIT && !(sparse_values && x < 0.0) => {
                    out.push(x as f32);
                    continue;
                }
                None => format!("{}[{i}]: expected a number, got {}", self.0, e.kind()),
                Some(x) if x < 0.0 && sparse_values && x >= -F32_LIMIT => {
                    let Place::Values(field) = self.0 else {
                        unreachable!("checked above")
                    };
                    format!(
                        "{field}: values[{i}] = {} is negative; sparse term weights must be >= 0",
                        e.shown()
                    )
                }
                Some(_) => format!(
                    "{}[{i}] = {} is outside the 32-bit float range (|x| <= {F32_LIMIT:e})",
                    self.0,
                    e.shown()
                ),
            };
            drain_seq(seq)?;
            return Ok(Err(problem));
        }
        Ok(Ok(out))
    }
}

/// The `indices` of a sparse vector: integers in [0, 30521] (a number with no fractional part,
/// such as `7.0`, is an integer, as JSON Schema counts it). Order and uniqueness are checked by
/// [`FingerprintBuilder::build`].
struct Indices(&'static str);

impl<'de> Reader<'de> for Indices {
    type Out = Vec<u16>;
    fn wrong(&self, kind: &str) -> String {
        format!(
            "{}: 'indices' must be an array of integers in [0, {}], got {kind}",
            self.0,
            SPARSE_VOCAB - 1
        )
    }

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got<Vec<u16>>, A::Error> {
        let field = self.0;
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(SPARSE_VOCAB));
        while let Some(e) = seq.next_element::<Elem>()? {
            let i = out.len();
            let integral = match e {
                Elem::U(_) | Elem::I(_) => true,
                Elem::F(x) => x.fract() == 0.0,
                Elem::Other(_) => false,
            };
            let problem = match e.number() {
                Some(x) if integral && (0.0..SPARSE_VOCAB as f64).contains(&x) => {
                    out.push(x as u16);
                    continue;
                }
                Some(x) if integral && x >= 0.0 => format!(
                    "{field}: indices[{i}] = {} is out of range; indices must be < {SPARSE_VOCAB}",
                    e.shown()
                ),
                Some(_) if integral => format!(
                    "{field}: indices[{i}] = {} is out of range; indices must be >= 0",
                    e.shown()
                ),
                Some(_) => format!(
                    "{field}: indices[{i}] = {} is not an integer; indices must be integers in [0, {}]",
                    e.shown(),
                    SPARSE_VOCAB - 1
                ),
                None => format!(
                    "{field}: indices[{i}]: expected an integer in [0, {}], got {}",
                    SPARSE_VOCAB - 1,
                    e.kind()
                ),
            };
            drain_seq(seq)?;
            return Ok(Err(problem));
        }
        Ok(Ok(out))
    }
}

/// A key of an object (copied only when it is not one of the known keys).
struct Key<'k>(&'k [&'k str]);

/// A known key by position, or an unknown one as given.
enum KeyOf {
    Known(usize),
    Unknown(String),
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = KeyOf;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<KeyOf, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = KeyOf;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E>(self, s: &str) -> Result<KeyOf, E> {
        Ok(match self.0.iter().position(|k| *k == s) {
            Some(i) => KeyOf::Known(i),
            None => KeyOf::Unknown(s.to_string()),
        })
    }
}

/// A sparse vector `{indices, values}`.
struct Sparse(&'static str);

impl<'de> Reader<'de> for Sparse {
    type Out = EmbedderValue;
    fn wrong(&self, kind: &str) -> String {
        format!(
            "{}: expected a sparse vector {{indices, values}}, got {kind}",
            self.0
        )
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got<EmbedderValue>, A::Error> {
        const KEYS: &[&str] = &["indices", "values"];
        let field = self.0;
        let (mut indices, mut values, mut unknown) = (None, None, None);
        while let Some(key) = map.next_key_seed(Key(KEYS))? {
            match key {
                KeyOf::Known(0) => indices = Some(map.next_value_seed(Read(Indices(field)))?),
                KeyOf::Known(_) => {
                    values = Some(map.next_value_seed(Read(Floats(Place::Values(field))))?);
                }
                KeyOf::Unknown(k) => {
                    unknown.get_or_insert(k);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(k) = unknown {
            return Ok(Err(format!(
                "{field}: unknown field '{k}'; allowed fields: indices, values"
            )));
        }
        let missing = |name: &str| {
            format!("{field}: missing '{name}' (sparse vectors are {{indices, values}})")
        };
        Ok(match (indices, values) {
            (None, _) => Err(missing("indices")),
            (_, None) => Err(missing("values")),
            (Some(i), Some(v)) => i.and_then(|indices| {
                v.map(|values| EmbedderValue::Sparse(SparseVector { indices, values }))
            }),
        })
    }
}

/// The token vectors of E12: an array of arrays of 128 numbers, or `{"tokens": that array}`
/// (`in_object`: reading the array inside that object, where only the array form is allowed).
struct Tokens(&'static str, bool);

impl<'de> Reader<'de> for Tokens {
    type Out = EmbedderValue;
    fn wrong(&self, kind: &str) -> String {
        format!(
            "{}: expected an array of token vectors of {TOKEN_DIM} numbers, got {kind}",
            self.0
        )
    }

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got<EmbedderValue>, A::Error> {
        let mut tokens = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(token) =
            seq.next_element_seed(Read(Floats(Place::Token(self.0, tokens.len()))))?
        {
            match token {
                Ok(t) => tokens.push(t),
                Err(m) => {
                    drain_seq(seq)?;
                    return Ok(Err(m));
                }
            }
        }
        Ok(Ok(EmbedderValue::Tokens(TokenVectors { tokens })))
    }

    /// `{"tokens": [...]}`.
    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got<EmbedderValue>, A::Error> {
        if self.1 {
            let m = self.wrong("an object");
            drain_map(map)?;
            return Ok(Err(m));
        }
        let (mut tokens, mut unknown) = (None, None);
        while let Some(key) = map.next_key_seed(Key(&["tokens"]))? {
            match key {
                KeyOf::Known(_) => tokens = Some(map.next_value_seed(Read(Tokens(self.0, true)))?),
                KeyOf::Unknown(k) => {
                    unknown.get_or_insert(k);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match (unknown, tokens) {
            (Some(k), _) => Err(format!(
                "{}: unknown field '{k}'; the object form is {{\"tokens\": [...]}}",
                self.0
            )),
            (None, None) => Err(self.wrong("an object without 'tokens'")),
            (None, Some(t)) => t,
        })
    }
}

/// A whole fingerprint; `nested` inside the wrapper's `semantic` field. Messages start with
/// `": "` (or `".semantic: "`), to follow the argument's name.
struct Whole {
    nested: bool,
}

impl<'de> Reader<'de> for Whole {
    type Out = Fingerprint;
    fn wrong(&self, kind: &str) -> String {
        if self.nested {
            format!(": expected an object with the 13 embedder fields, got {kind}")
        } else {
            format!(
                ": expected an object with the 13 embedder fields (e1_semantic … e13_splade), \
                 or an object whose '{SEMANTIC}' field holds them; got {kind}"
            )
        }
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got<Fingerprint>, A::Error> {
        // The embedder fields in index order, then `semantic`.
        let keys: [&str; NUM_EMBEDDERS + 1] =
            std::array::from_fn(|i| EmbedderId::ALL.get(i).map_or(SEMANTIC, |e| e.field()));
        let mut slots: [Option<Got<EmbedderValue>>; NUM_EMBEDDERS] = Default::default();
        let (mut semantic, mut unknown) = (None, None);
        while let Some(key) = map.next_key_seed(Key(&keys))? {
            match key {
                KeyOf::Known(i) if i < NUM_EMBEDDERS => {
                    let e = EmbedderId::ALL[i];
                    let field = e.field();
                    slots[i] = Some(match e.kind() {
                        EmbedderKind::Dense { dim } => map
                            .next_value_seed(Read(Floats(Place::Dense(field, dim))))?
                            .map(EmbedderValue::Dense),
                        EmbedderKind::Sparse { .. } => map.next_value_seed(Read(Sparse(field)))?,
                        EmbedderKind::Tokens { .. } => {
                            map.next_value_seed(Read(Tokens(field, false)))?
                        }
                    });
                }
                KeyOf::Known(_) if !self.nested => {
                    semantic = Some(map.next_value_seed(Read(Whole { nested: true }))?);
                }
                KeyOf::Known(_) => {
                    unknown.get_or_insert_with(|| SEMANTIC.to_string());
                    map.next_value::<IgnoredAny>()?;
                }
                KeyOf::Unknown(k) => {
                    unknown.get_or_insert(k);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // The wrapper form: every field but `semantic` is ignored; embedder fields beside it
        // are refused (which of the two would count?).
        if let Some(inner) = semantic {
            if let Some(e) = EmbedderId::ALL
                .into_iter()
                .find(|e| slots[e.index()].is_some())
            {
                return Ok(Err(format!(
                    ": give the 13 embedder fields or a '{SEMANTIC}' field holding them, not both \
                     (found '{}' beside '{SEMANTIC}')",
                    e.field()
                )));
            }
            return Ok(inner.map_err(|m| format!(".{SEMANTIC}{m}")));
        }
        if let Some(k) = unknown {
            let also = if self.nested {
                String::new()
            } else {
                format!(" (or '{SEMANTIC}' holding them)")
            };
            return Ok(Err(format!(
                ": unknown field '{k}'; allowed fields: the 13 embedder fields e1_semantic … e13_splade{also}"
            )));
        }
        let mut builder = FingerprintBuilder::new();
        for (e, slot) in EmbedderId::ALL.into_iter().zip(slots) {
            match slot {
                Some(Ok(v)) => {
                    builder.set(e, v);
                }
                Some(Err(m)) => return Ok(Err(format!(": {m}"))),
                None => {} // reported by build() as "missing …", all at once
            }
        }
        Ok(builder.build().map_err(|e| format!(": {e}")))
    }
}
