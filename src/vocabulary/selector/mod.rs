//! Kubernetes label selectors, parsed and matched locally.
//!
//! The [layer docs](crate::vocabulary) say more.

mod field;
mod kube_core_selector;
mod label_selector;
mod parse;
mod requirement;
#[cfg(test)]
mod tests;
mod validate;
pub(crate) use validate::is_dns_label;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use kube_core::DynamicObject;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::vocabulary::VocabularyError;

/// A set of labels a selector can be matched against.
///
/// Implemented by label maps and by [`StrMap`](crate::cache::compact::StrMap), the labels of a cached
/// object read in place, so that a lister matches a selector without
/// decoding the objects it does not return.
pub trait Labels {
    /// The value of the label `key`, if set.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: std::hash::BuildHasher> Labels for std::collections::HashMap<String, String, S> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

#[cfg(feature = "serve")]
pub(crate) use field::split_field_terms;
pub use field::validate_field_selector;
pub use label_selector::{LabelSelector, LabelSelectorRequirement};
pub use requirement::{Operator, Requirement};

/// A label selector: the conjunction of its [`Requirement`]s.
///
/// Requirements are kept in a canonical order (sorted, duplicates removed), so
/// two selectors that differ only in the order of their requirements compare
/// equal, and [`Display`](fmt::Display) gives a stable string that the API
/// server accepts as the `labelSelector` query parameter.
///
/// It serialises as that string and deserialises by [parsing](Selector::parse).
///
/// ```
/// use std::collections::BTreeMap;
/// use kube_dynamic_informer::vocabulary::Selector;
///
/// let selector: Selector = "tier in (web, api), env != prod, !canary".parse()?;
/// let labels = BTreeMap::from([("tier".to_owned(), "web".to_owned())]);
/// assert!(selector.matches(&labels));
/// assert_eq!(selector.to_string(), "!canary,env!=prod,tier in (api,web)");
/// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches every object (the empty selector string).
    #[must_use]
    pub fn everything() -> Self {
        Selector::default()
    }

    /// Whether this selector has no requirements and so matches everything.
    #[must_use]
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parses the label selector syntax that kube-apiserver accepts in the
    /// `labelSelector` query parameter. The empty string (or only whitespace)
    /// is [`Selector::everything`].
    ///
    /// # Errors
    ///
    /// [`VocabularyError::SelectorSyntax`] for a grammar error,
    /// [`VocabularyError::InvalidKey`] and [`VocabularyError::InvalidValue`] for a
    /// key or value the API server would reject; all of them carry the byte
    /// offset and column of the offending token.
    ///
    /// ```
    /// use kube_dynamic_informer::vocabulary::Selector;
    ///
    /// let selector = Selector::parse("app=web,tier")?;
    /// assert_eq!(selector.requirements().len(), 2);
    /// assert!(Selector::parse("").unwrap().is_everything());
    /// assert!(Selector::parse("app=").is_ok()); // the empty value is a value
    /// assert!(Selector::parse("app=-web").is_err()); // values start alphanumeric
    /// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
    /// ```
    pub fn parse(input: &str) -> Result<Self, VocabularyError> {
        parse::parse(input).map(Selector::new)
    }

    /// A selector made of the given requirements (already validated by
    /// [`Requirement::new`]).
    #[must_use]
    pub fn new(requirements: impl IntoIterator<Item = Requirement>) -> Self {
        let mut requirements: Vec<Requirement> = requirements.into_iter().collect();
        requirements.sort_unstable();
        requirements.dedup();
        Selector { requirements }
    }

    /// A selector requiring every label of `labels` to have exactly that value
    /// (apimachinery's `ValidatedSelectorFromSet`). An empty map gives
    /// [`Selector::everything`].
    ///
    /// # Errors
    ///
    /// [`VocabularyError::InvalidRequirement`] if a key or value breaks the label
    /// rules.
    pub fn from_labels(labels: &BTreeMap<String, String>) -> Result<Self, VocabularyError> {
        labels
            .iter()
            .map(|(key, value)| Requirement::new(key.as_str(), Operator::Equals, [value.as_str()]))
            .collect::<Result<Vec<_>, _>>()
            .map(Selector::new)
    }

    /// The requirements, in canonical order.
    #[must_use]
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a set of labels satisfies every requirement: a map, or the
    /// labels of a cached object read in place
    /// ([`CachedObject::labels`](crate::cache::store::CachedObject::labels)).
    #[must_use]
    pub fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether an object's `metadata.labels` satisfy every requirement (an
    /// object without labels has an empty label set).
    #[must_use]
    pub fn matches_object(&self, object: &DynamicObject) -> bool {
        if self.is_everything() {
            return true;
        }
        self.matches(object.metadata.labels.as_ref().unwrap_or(&BTreeMap::new()))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = VocabularyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}

impl Serialize for Selector {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Selector {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Selector::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The 1-based column, in characters, of a byte offset.
pub(super) fn column_at(input: &str, offset: usize) -> usize {
    input
        .get(..offset)
        .map_or(offset, |prefix| prefix.chars().count())
        + 1
}
