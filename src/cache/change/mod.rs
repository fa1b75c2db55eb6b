//! Change predicates: which updates of an object matter, said as the
//! JMESPath expressions whose values must change.
//!
//! The [layer docs](crate::cache) say more.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::cache::compact::{StrMap, ValueRef};
use crate::cache::index::{CompiledExpression, IndexInput};
use crate::cache::store::CachedObject;
use crate::cache::{CacheError, ExpressionOf};

/// Which updates of an object matter: those that change the value of at
/// least one of its JMESPath expressions (`spec`, `metadata.generation`,
/// `metadata.labels`, `spec.containers[].image`, ...), compared between the
/// state before and the state after.
///
/// A handler given one ([`HandlerOptions::changes`](crate::informer::HandlerOptions::changes))
/// receives only those updates: a burst of status updates reaches a handler
/// that watches `spec` not at all. The ready-made ones carry the names of
/// controller-runtime's predicates and kube-runtime's
/// `predicates::{generation, labels, annotations, finalizers}`:
///
/// | constructor | expression | controller-runtime |
/// |---|---|---|
/// | [`generation`](Self::generation) | `metadata.generation` | `GenerationChangedPredicate` |
/// | [`labels`](Self::labels) | `metadata.labels` | `LabelChangedPredicate` |
/// | [`annotations`](Self::annotations) | `metadata.annotations` | `AnnotationChangedPredicate` |
/// | [`finalizers`](Self::finalizers) | `metadata.finalizers` | — |
/// | [`spec`](Self::spec) | `spec` | — |
///
/// Values compare as JSON values (numbers by value, objects whatever the
/// order of their keys); a missing field and `null` are the same. An
/// expression that fails on either state counts as changed, so that an
/// update is never lost to a mistake. The API server raises
/// `metadata.generation` only for changes of what an object asks for
/// (`spec`, for most resources) — never for status or metadata; objects
/// without one (ConfigMaps, Secrets, ...) never change it.
///
/// Plain field paths (`spec`, `metadata.labels`, `status.phase`) are read
/// in place in either storage, without decoding the cached object: two
/// states of a compact cache whose `spec` is written alike compare by their
/// bytes. Other expressions are evaluated on both states decoded.
///
/// Once a handler's predicate watches a field of the data (the `spec` of
/// `spec` or `spec.replicas`), a compact cache keeps a 128-bit digest of
/// that field beside each object it writes, computed while the object's
/// bytes are at hand: an update whose two states have the same digest
/// leaves the field as it was, and is told apart without reading either
/// state (the old one is cold in memory by then). Digests that differ, or
/// a state written before the field was watched, fall back to reading the
/// values. Two different values have the same digest with a chance of
/// about 2^-128; the digests are keyed with seeds drawn at random for each
/// cache, so that no value can be chosen to match another's.
///
/// Cheap to clone; clones share the compiled expressions.
///
/// ```
/// use std::sync::Arc;
/// use kube_core::DynamicObject;
/// use kube_dynamic_informer::cache::{CachedObject, ChangePredicate};
///
/// let widget = |replicas: u32, phase: &str| -> CachedObject {
///     let object: DynamicObject = serde_json::from_value(serde_json::json!({
///         "apiVersion": "example.com/v1", "kind": "Widget",
///         "metadata": { "name": "w", "namespace": "shop", "labels": { "app": "web" } },
///         "spec": { "replicas": replicas },
///         "status": { "phase": phase }
///     })).expect("a widget");
///     CachedObject::from(Arc::new(object))
/// };
///
/// let spec_or_labels = ChangePredicate::spec().or(ChangePredicate::labels());
/// assert!(!spec_or_labels.changed(&widget(3, "Pending"), &widget(3, "Running")));
/// assert!(spec_or_labels.changed(&widget(3, "Running"), &widget(4, "Running")));
///
/// let images = ChangePredicate::new("spec.containers[].image")?;
/// assert_eq!(images.to_string(), "spec.containers[].image");
/// let err = ChangePredicate::new("spec.[").unwrap_err();
/// assert!(err.to_string().starts_with("change expression 'spec.[' invalid at column 6"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[doc(alias = "GenerationChangedPredicate")]
#[doc(alias = "LabelChangedPredicate")]
#[doc(alias = "AnnotationChangedPredicate")]
pub struct ChangePredicate {
    expressions: Arc<[Arc<Watched>]>,
}

/// One expression, and where it is read in place when it can be.
struct Watched {
    compiled: CompiledExpression,
    place: Option<Place>,
    /// The field of the data a plain path starts with (`spec` for
    /// `spec.replicas`): when two compact states keep equal digests of
    /// it, the value below it is the same too.
    field: Option<String>,
}

/// Where a plain field path is read without decoding the object.
enum Place {
    /// `metadata.labels` or `metadata.annotations`: whole (`key` none), or
    /// one key's value; `deeper` for a path below a value (always null).
    Map {
        annotations: bool,
        key: Option<String>,
        deeper: bool,
    },
    /// The value at a JSON pointer to a field of the object or of its
    /// metadata, then `rest` followed field by field.
    Pointer { pointer: String, rest: Vec<String> },
}

impl Place {
    /// Where `path` is read in place; `None` for `metadata` whole, whose
    /// typed form only the conversion reproduces.
    fn of(path: &[String]) -> Option<Place> {
        let (first, rest) = path.split_first()?;
        // `metadata`, `apiVersion` and `kind` are never keys of an object's
        // data (they are decoded into its typed fields), so nothing shadows
        // them.
        if first != "metadata" {
            return Some(Place::Pointer {
                pointer: format!("/{}", escape(first)),
                rest: rest.to_vec(),
            });
        }
        let (field, rest) = rest.split_first()?;
        let annotations = match field.as_str() {
            "labels" => false,
            "annotations" => true,
            _ => {
                return Some(Place::Pointer {
                    pointer: format!("/metadata/{}", escape(field)),
                    rest: rest.to_vec(),
                });
            }
        };
        Some(Place::Map {
            annotations,
            key: rest.first().cloned(),
            deeper: rest.len() > 1,
        })
    }
}

impl ChangePredicate {
    /// The updates that change the value of `expression`.
    ///
    /// # Errors
    /// [`CacheError::ExpressionSyntax`] with the position of the error, when
    /// the expression does not parse; [`CacheError::ExpressionFunction`] with
    /// the position of the call or argument, when it calls an unknown
    /// function, or a function with the wrong number of arguments or a
    /// literal argument of the wrong type; [`CacheError::ExpressionTooComplex`]
    /// beyond [`MAX_EXPRESSION_LEN`](crate::cache::MAX_EXPRESSION_LEN) or
    /// [`MAX_EXPRESSION_DEPTH`](crate::cache::MAX_EXPRESSION_DEPTH).
    pub fn new(expression: &str) -> Result<Self, CacheError> {
        Self::any_of([expression])
    }

    /// The updates that change the value of any of `expressions`.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::ChangePredicate;
    ///
    /// let desired = ChangePredicate::any_of(["spec", "metadata.labels"])?;
    /// assert_eq!(desired, ChangePredicate::spec().or(ChangePredicate::labels()));
    /// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
    /// ```
    ///
    /// # Errors
    /// As [`new`](Self::new), for the first expression that does not
    /// compile; [`CacheError::NoChangeExpression`] for none at all.
    pub fn any_of<I>(expressions: I) -> Result<Self, CacheError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let compiled = expressions
            .into_iter()
            .map(|e| {
                let compiled = CompiledExpression::compile(e.as_ref(), ExpressionOf::Change)?;
                let path = compiled.direct_path();
                let place = path.and_then(Place::of);
                let field = path
                    .and_then(<[String]>::first)
                    .filter(|f| !matches!(f.as_str(), "metadata" | "apiVersion" | "kind"))
                    .cloned();
                Ok(Arc::new(Watched {
                    compiled,
                    place,
                    field,
                }))
            })
            .collect::<Result<Vec<_>, CacheError>>()?;
        if compiled.is_empty() {
            return Err(CacheError::NoChangeExpression);
        }
        Ok(Self {
            expressions: compiled.into(),
        })
    }

    /// A predicate of expressions known to compile.
    fn known(expression: &str) -> Self {
        Self::new(expression).unwrap_or_else(|_| unreachable!("a field path compiles"))
    }

    /// Changes of `metadata.generation`: what an object asks for changed
    /// (controller-runtime's `GenerationChangedPredicate`, kube-runtime's
    /// `predicates::generation`). Objects without a generation never pass.
    #[must_use]
    pub fn generation() -> Self {
        Self::known("metadata.generation")
    }

    /// Changes of `metadata.labels` (controller-runtime's
    /// `LabelChangedPredicate`).
    #[must_use]
    pub fn labels() -> Self {
        Self::known("metadata.labels")
    }

    /// Changes of `metadata.annotations` (controller-runtime's
    /// `AnnotationChangedPredicate`).
    #[must_use]
    pub fn annotations() -> Self {
        Self::known("metadata.annotations")
    }

    /// Changes of `metadata.finalizers` (kube-runtime's
    /// `predicates::finalizers`).
    #[must_use]
    pub fn finalizers() -> Self {
        Self::known("metadata.finalizers")
    }

    /// Changes of `spec`, the whole of it: for resources whose
    /// `metadata.generation` the API server does not keep, or to see a
    /// change before it is counted.
    #[must_use]
    pub fn spec() -> Self {
        Self::known("spec")
    }

    /// The updates `self` or `other` lets through: the expressions of
    /// both, each once.
    #[must_use]
    pub fn or(self, other: ChangePredicate) -> Self {
        let mut all: Vec<Arc<Watched>> = self.expressions.to_vec();
        for e in other.expressions.iter() {
            if !all
                .iter()
                .any(|mine| mine.compiled.text() == e.compiled.text())
            {
                all.push(e.clone());
            }
        }
        Self {
            expressions: all.into(),
        }
    }

    /// The expressions, as written.
    pub fn expressions(&self) -> impl ExactSizeIterator<Item = &str> {
        self.expressions.iter().map(|e| e.compiled.text())
    }

    /// The fields of an object's data its plain paths start with: a
    /// compact cache keeps a digest of each, so that an update that leaves
    /// them alone is told apart without reading either state.
    pub(crate) fn digested_fields(&self) -> impl Iterator<Item = &str> {
        self.expressions.iter().filter_map(|e| e.field.as_deref())
    }

    /// Whether the value of any expression differs between `old` and
    /// `new` (two states of one object).
    #[must_use]
    pub fn changed(&self, old: &CachedObject, new: &CachedObject) -> bool {
        self.expressions.iter().any(|e| differs(e, old, new))
    }
}

/// Whether `expression` gives `old` and `new` different values: the same
/// when both keep equal digests of the field its plain path starts with,
/// else read in place for a plain field path, else evaluated on both
/// decoded.
fn differs(expression: &Watched, old: &CachedObject, new: &CachedObject) -> bool {
    if let (Some(field), Some(a), Some(b)) = (&expression.field, old.compact(), new.compact())
        && a.same_field(b, field) == Some(true)
    {
        return false;
    }
    if let Some(place) = &expression.place {
        return !read(old, place).same(&read(new, place));
    }
    let (old, new) = (old.object(), new.object());
    let before = expression.compiled.result(&IndexInput::new(&old));
    let after = expression.compiled.result(&IndexInput::new(&new));
    match (before, after) {
        (Ok(before), Ok(after)) => before != after,
        _ => true,
    }
}

/// A value read in place at a plain field path.
enum Reading<'a> {
    /// The value, or nothing there (which JMESPath reads as `null`).
    Value(Option<ValueRef<'a>>),
    /// The labels or annotations.
    Map(StrMap<'a>),
}

impl Reading<'_> {
    fn same(&self, other: &Reading<'_>) -> bool {
        let null = |v: &Option<ValueRef<'_>>| v.as_ref().is_none_or(ValueRef::is_null);
        match (self, other) {
            (Reading::Map(a), Reading::Map(b)) => a.len() == b.len() && a.iter().eq(b.iter()),
            (Reading::Value(a), Reading::Value(b)) if null(a) || null(b) => null(a) && null(b),
            (Reading::Value(Some(a)), Reading::Value(Some(b))) => a == b,
            _ => false,
        }
    }
}

/// The value at `place` in `object`, read without decoding it. Labels and
/// annotations read as maps, absent or empty alike.
fn read<'a>(object: &'a CachedObject, place: &Place) -> Reading<'a> {
    match place {
        Place::Pointer { pointer, rest } => {
            Reading::Value(object.pointer(pointer).and_then(|v| walk(v, rest)))
        }
        Place::Map { deeper: true, .. } => Reading::Value(None),
        Place::Map {
            annotations,
            key,
            deeper: false,
        } => {
            let map = if *annotations {
                object.annotations()
            } else {
                object.labels()
            };
            match key {
                None => Reading::Map(map),
                Some(key) => Reading::Value(map.get(key).map(ValueRef::String)),
            }
        }
    }
}

/// Follows `path` below `value`, field by field: a field of anything but
/// an object is nothing (`null`).
fn walk<'a>(mut value: ValueRef<'a>, path: &[String]) -> Option<ValueRef<'a>> {
    for field in path {
        value = match value {
            ValueRef::Object(map) => map.get(field)?,
            ValueRef::Json(Value::Object(map)) => ValueRef::Json(map.get(field)?),
            ValueRef::Owned(Value::Object(mut map)) => ValueRef::Owned(map.remove(field)?),
            _ => return None,
        };
    }
    Some(value)
}

/// A field name as a JSON pointer token (RFC 6901).
fn escape(field: &str) -> Cow<'_, str> {
    if field.contains(['~', '/']) {
        Cow::Owned(field.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(field)
    }
}

/// The expressions, separated by commas.
impl fmt::Display for ChangePredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.expressions().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(e)?;
        }
        Ok(())
    }
}

impl fmt::Debug for ChangePredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ChangePredicate")
            .field(&self.expressions().collect::<Vec<_>>())
            .finish()
    }
}

/// Two predicates are equal when they have the same expressions, in any
/// order.
impl PartialEq for ChangePredicate {
    fn eq(&self, other: &Self) -> bool {
        let within = |a: &Self, b: &Self| a.expressions().all(|e| b.expressions().any(|o| o == e));
        within(self, other) && within(other, self)
    }
}

impl Eq for ChangePredicate {}

#[cfg(test)]
mod tests;
