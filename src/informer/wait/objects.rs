//! Which objects of an informer a wait is about: some by name, or those a
//! selection picks.

use std::collections::BTreeSet;

use crate::cache::index::{IndexFn, IndexInput};
use crate::cache::store::{CachedObject, Store};
use crate::informer::InformerError;
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::selector::Selector;
use crate::vocabulary::setters;

/// The objects of one informer a [`Wait`](super::Wait) is about.
///
/// ```
/// use kube_dynamic_informer::informer::{ObjectSelection, Objects};
/// use kube_dynamic_informer::vocabulary::Selector;
///
/// let one = Objects::from("shop/web");
/// let some = Objects::named(["shop/web", "shop/api"]);
/// let web = Objects::from(
///     ObjectSelection::default()
///         .namespace("shop")
///         .labels(Selector::parse("app=web")?)
///         .index("node", "node-1"),
/// );
/// assert_eq!(Objects::all(), Objects::from(ObjectSelection::default()));
/// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Objects {
    /// These objects, by cache key (`namespace/name`, or `name` for a
    /// cluster-scoped resource), whether they are in the cache or not.
    Named(BTreeSet<String>),
    /// The objects in the cache that the selection picks, as they come
    /// and go.
    Selected(ObjectSelection),
}

impl Objects {
    /// Every object in the cache.
    #[must_use]
    pub fn all() -> Self {
        Objects::Selected(ObjectSelection::default())
    }

    /// These objects, by cache key.
    #[must_use]
    pub fn named<I, S>(keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Objects::Named(keys.into_iter().map(Into::into).collect())
    }
}

impl From<&str> for Objects {
    /// The one object with this key.
    fn from(key: &str) -> Self {
        Objects::named([key])
    }
}

impl From<String> for Objects {
    /// The one object with this key.
    fn from(key: String) -> Self {
        Objects::named([key])
    }
}

impl From<ObjectSelection> for Objects {
    fn from(selection: ObjectSelection) -> Self {
        Objects::Selected(selection)
    }
}

/// Which cached objects a wait picks: those of a namespace, with labels a
/// selector matches, filed under a value of an index; each given narrows
/// the others. The default picks every object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectSelection {
    /// Only objects of this namespace.
    pub namespace: Option<String>,
    /// Only objects whose labels this selector matches (in the cache: the
    /// labels its projection keeps).
    pub labels: Selector,
    /// Only objects that an index of the informer, by name, files under a
    /// value: `(index, value)`.
    pub index: Option<(String, String)>,
}

impl ObjectSelection {
    setters! {
        /// Sets [`namespace`](Self::namespace).
        namespace(namespace: impl Into<String>) => Some(namespace.into());

        /// Sets [`labels`](Self::labels).
        labels(selector: Selector) => selector;
    }

    /// Sets [`index`](Self::index).
    #[must_use]
    pub fn index(mut self, index: impl Into<String>, value: impl Into<String>) -> Self {
        self.index = Some((index.into(), value.into()));
        self
    }
}

/// [`Objects`] checked against one informer's store: the index function
/// of a selection by index value found.
pub(super) enum Membership {
    Named(BTreeSet<String>),
    /// The selection, and the function of its index, if it names one.
    Selected(ObjectSelection, Option<IndexFn>),
}

impl Membership {
    /// # Errors
    /// [`InformerError::Index`] for an index the store does not have.
    pub(super) fn new(
        objects: &Objects,
        store: &Store,
        resource: &ResourceKey,
    ) -> Result<Self, InformerError> {
        Ok(match objects {
            Objects::Named(keys) => Membership::Named(keys.clone()),
            Objects::Selected(selection) => {
                let func = selection.index.as_ref().map(|(name, _)| {
                    store
                        .index_function(name)
                        .map_err(|source| InformerError::Index {
                            resource: resource.clone(),
                            source: Box::new(source),
                        })
                });
                Membership::Selected(selection.clone(), func.transpose()?)
            }
        })
    }

    /// The keys of named objects.
    pub(super) fn names(&self) -> Option<&BTreeSet<String>> {
        match self {
            Membership::Named(keys) => Some(keys),
            Membership::Selected(..) => None,
        }
    }

    /// Whether the object with `key` is one of the wait's: named, or picked
    /// by the selection. An index that fails on the object leaves it out,
    /// as it leaves it out of the index.
    /// `input` gives the object as an index reads it, made when the
    /// selection's index is evaluated.
    pub(super) fn picks<'a>(
        &self,
        key: &str,
        object: &CachedObject,
        input: impl FnOnce() -> &'a IndexInput<'a>,
    ) -> bool {
        match self {
            Membership::Named(keys) => keys.contains(key),
            Membership::Selected(selection, func) => {
                selection
                    .namespace
                    .as_deref()
                    .is_none_or(|ns| object.namespace() == Some(ns))
                    && selection.labels.matches(&object.labels())
                    && selection.index.as_ref().zip(func.as_ref()).is_none_or(
                        |((name, value), func)| {
                            func.evaluate(name, input())
                                .is_ok_and(|values| values.iter().any(|v| v == value))
                        },
                    )
            }
        }
    }
}
