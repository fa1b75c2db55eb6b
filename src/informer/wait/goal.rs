//! What a wait waits for ([`WaitFor`]), and of how many objects
//! ([`Quantifier`]).

use std::fmt;

use crate::cache::CacheError;
use crate::cache::condition::Condition;

/// What must be true of an object for it to count: a [`Condition`] on it,
/// or that it is gone.
///
/// ```
/// use kube_dynamic_informer::informer::WaitFor;
///
/// assert_eq!(WaitFor::parse("delete")?, WaitFor::Deleted);
/// assert_eq!(WaitFor::parse("create")?, WaitFor::exists());
/// let ready = WaitFor::parse("status.readyReplicas == spec.replicas")?;
/// assert_eq!(ready.to_string(), "status.readyReplicas == spec.replicas");
/// let kubectl = WaitFor::parse("condition=Available")?;
/// assert_eq!(kubectl.to_string(), "condition=Available");
/// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitFor {
    /// The object is in the cache and the condition holds on it.
    Condition(Condition),
    /// The object is not in the cache: deleted (for objects chosen by
    /// name, also deleted and created again, with another uid), or, for
    /// objects chosen by a selection, out of it.
    Deleted,
}

impl WaitFor {
    /// A condition, compiled ([`Condition::new`]).
    ///
    /// # Errors
    /// Those of [`Condition::new`], with the position of the mistake.
    pub fn condition(expression: &str) -> Result<Self, CacheError> {
        Condition::new(expression).map(WaitFor::Condition)
    }

    /// The object is in the cache (`kubectl wait --for=create`).
    #[must_use]
    pub fn exists() -> Self {
        WaitFor::Condition(Condition::exists())
    }

    /// What `kdi wait --for` takes, kubectl's forms included:
    ///
    /// | text | waits for |
    /// |---|---|
    /// | `delete` | [`WaitFor::Deleted`] |
    /// | `create` | [`WaitFor::exists`] |
    /// | `condition=TYPE[=STATUS]`, `jsonpath=EXPR[=VALUE]` | their [translation](Condition::from_kubectl) |
    /// | anything else | a JMESPath condition ([`Condition::new`]) |
    ///
    /// `delete` and `create` are read without regard to case, as kubectl
    /// reads `delete`. (A condition that reads a field named `delete` is
    /// written `"delete"`, quoted.)
    ///
    /// # Errors
    /// Those of [`Condition::from_kubectl`] and [`Condition::new`].
    pub fn parse(text: &str) -> Result<Self, CacheError> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("delete") {
            return Ok(WaitFor::Deleted);
        }
        if trimmed.eq_ignore_ascii_case("create") {
            return Ok(WaitFor::exists());
        }
        if trimmed.starts_with("condition=") || trimmed.starts_with("jsonpath=") {
            return Condition::from_kubectl(trimmed).map(WaitFor::Condition);
        }
        WaitFor::condition(text)
    }

    /// The condition, when this is one.
    #[must_use]
    pub fn as_condition(&self) -> Option<&Condition> {
        match self {
            WaitFor::Condition(condition) => Some(condition),
            WaitFor::Deleted => None,
        }
    }
}

impl From<Condition> for WaitFor {
    fn from(condition: Condition) -> Self {
        WaitFor::Condition(condition)
    }
}

/// As written: the condition as given, `exists`, or `delete`.
impl fmt::Display for WaitFor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitFor::Condition(condition) => condition.fmt(f),
            WaitFor::Deleted => f.write_str("delete"),
        }
    }
}

/// Of how many of its objects a wait needs [`WaitFor`] to be true.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Quantifier {
    /// Every object: every cache synced, and each of the objects true. A
    /// condition needs at least one object (objects that are not there
    /// yet are waited for); deletion is true of no object at all.
    #[default]
    All,
    /// At least one object. Known as soon as one is, synced or not.
    Any,
    /// No object: every cache synced, and none of the objects true.
    None,
}

impl Quantifier {
    /// `all`, `any` or `none`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Quantifier::All => "all",
            Quantifier::Any => "any",
            Quantifier::None => "none",
        }
    }
}

impl fmt::Display for Quantifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
