//! Listers: read views over an informer's cache, by label selector, by name,
//! by namespace and by index.
//!
//! The [layer docs](crate::cache) say more.

use std::borrow::Cow;

use std::fmt;
use tokio::sync::watch;

use crate::cache::CacheError;
use crate::cache::index::NAMESPACE_INDEX;
use crate::cache::store::{CachedObject, Store};
use crate::vocabulary::VocabularyError;
use crate::vocabulary::object_key::key_from_parts;
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::scope::{Namespaces, ResourceAvailability, Scope};
use crate::vocabulary::selector::Selector;

/// Anything a lister accepts as a label selector: a string in the API
/// server's syntax (parsed on each call) or a parsed [`Selector`].
pub trait ToSelector {
    /// The selector.
    ///
    /// # Errors
    /// The parse error of a string.
    fn to_selector(&self) -> Result<Cow<'_, Selector>, VocabularyError>;
}

impl ToSelector for str {
    fn to_selector(&self) -> Result<Cow<'_, Selector>, VocabularyError> {
        Selector::parse(self).map(Cow::Owned)
    }
}

impl ToSelector for String {
    fn to_selector(&self) -> Result<Cow<'_, Selector>, VocabularyError> {
        self.as_str().to_selector()
    }
}

impl ToSelector for Selector {
    fn to_selector(&self) -> Result<Cow<'_, Selector>, VocabularyError> {
        Ok(Cow::Borrowed(self))
    }
}

impl<T: ToSelector + ?Sized> ToSelector for &T {
    fn to_selector(&self) -> Result<Cow<'_, Selector>, VocabularyError> {
        (**self).to_selector()
    }
}

/// Where a lister learns the resource's scope.
#[derive(Clone)]
enum ScopeSource {
    Fixed(Scope),
    /// From discovery: unknown while the resource is not served.
    Discovered(watch::Receiver<ResourceAvailability>),
}

/// A read view over one resource's cache: list by label selector, get by
/// key, scope to a namespace, query an index. Cheap to clone.
///
/// Results are handles on the cache's own objects ([`CachedObject`]: a
/// pointer copy in either storage), in no particular order.
#[derive(Clone)]
#[doc(alias = "GenericLister")]
pub struct Lister {
    store: Store,
    resource: ResourceKey,
    scope: ScopeSource,
    /// The namespaces the informer watches.
    watched: Namespaces,
}

impl Lister {
    /// A lister over `store`, the cache of `resource`.
    #[must_use]
    pub fn new(store: Store, resource: ResourceKey, scope: Scope) -> Self {
        Lister {
            store,
            resource,
            scope: ScopeSource::Fixed(scope),
            watched: Namespaces::All,
        }
    }

    /// A lister whose scope comes from discovery (unknown while the resource
    /// is not served).
    pub(crate) fn discovered(
        store: Store,
        resource: ResourceKey,
        availability: watch::Receiver<ResourceAvailability>,
    ) -> Self {
        Lister {
            store,
            resource,
            scope: ScopeSource::Discovered(availability),
            watched: Namespaces::All,
        }
    }

    /// Declares that the cache holds only these namespaces, so that asking
    /// for another one is an error rather than an empty answer.
    #[must_use]
    pub fn watching_namespaces<I, S>(self, namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.watching(Namespaces::only(namespaces))
    }

    /// [`watching_namespaces`](Self::watching_namespaces) with the informer's
    /// own [`Namespaces`].
    pub(crate) fn watching(mut self, namespaces: Namespaces) -> Self {
        self.watched = namespaces;
        self
    }

    /// The resource listed.
    #[must_use]
    pub fn resource(&self) -> &ResourceKey {
        &self.resource
    }

    /// Namespaced or cluster-scoped; `None` while the resource is not served
    /// and was never seen.
    #[must_use]
    pub fn scope(&self) -> Option<Scope> {
        match &self.scope {
            ScopeSource::Fixed(scope) => Some(*scope),
            ScopeSource::Discovered(rx) => rx.borrow().served().map(|(_, scope)| scope),
        }
    }

    /// The underlying cache.
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The objects whose labels match `selector` (see [`crate::vocabulary`]
    /// for the syntax; `""` matches everything), as handles (see
    /// [`CachedObject`]): labels are matched in place, nothing is decoded.
    ///
    /// # Errors
    /// [`CacheError::Selector`] for a selector that does not parse.
    pub fn list(&self, selector: impl ToSelector) -> Result<Vec<CachedObject>, CacheError> {
        let selector = self.selector(&selector)?;
        Ok(self.store.list_where(|o| selector.matches(&o.labels())))
    }

    /// A view of one namespace, answered through the namespace index.
    ///
    /// # Errors
    /// [`CacheError::ClusterScoped`] for a cluster-scoped resource;
    /// [`CacheError::NamespaceNotWatched`] for a namespace the informer
    /// does not watch.
    pub fn namespace(&self, namespace: impl Into<String>) -> Result<NamespaceLister, CacheError> {
        let namespace = namespace.into();
        if let Some(scope) = self.scope() {
            scope.check(&self.resource, &Namespaces::only([namespace.as_str()]))?;
        }
        if let Namespaces::Only(watched) = &self.watched
            && !watched.contains(&namespace)
        {
            return Err(CacheError::NamespaceNotWatched {
                resource: self.resource.clone(),
                namespace,
                watched: watched.iter().cloned().collect(),
            });
        }
        Ok(NamespaceLister {
            lister: self.clone(),
            namespace,
        })
    }

    fn selector<'s>(&self, selector: &'s impl ToSelector) -> Result<Cow<'s, Selector>, CacheError> {
        selector
            .to_selector()
            .map_err(|source| CacheError::Selector {
                resource: self.resource.clone(),
                source: Box::new(source),
            })
    }
}

/// A lister reads like its [`Store`] — [`get`](Store::get) by key,
/// [`list_all`](Store::list_all), [`by_index`](Store::by_index) — and adds
/// label selectors and namespace views.
impl std::ops::Deref for Lister {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

impl fmt::Debug for Lister {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("resource", &self.resource)
            .field("scope", &self.scope())
            .field("objects", &self.store.len())
            .finish_non_exhaustive()
    }
}

/// A [`Lister`] restricted to one namespace.
#[derive(Clone, Debug)]
pub struct NamespaceLister {
    lister: Lister,
    namespace: String,
}

impl NamespaceLister {
    /// The namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The objects of the namespace whose labels match `selector`.
    ///
    /// # Errors
    /// [`CacheError::Selector`] for a selector that does not parse.
    pub fn list(&self, selector: impl ToSelector) -> Result<Vec<CachedObject>, CacheError> {
        let selector = self.lister.selector(&selector)?;
        let mut members = self.list_all();
        if !selector.is_everything() {
            members.retain(|o| selector.matches(&o.labels()));
        }
        Ok(members)
    }

    /// The objects of the namespace filed under `value` in the index
    /// `index`.
    ///
    /// # Errors
    /// [`CacheError::Index`] when there is no such index.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<CachedObject>, CacheError> {
        let mut members =
            self.lister
                .store
                .by_index(index, value)
                .map_err(|source| CacheError::Index {
                    resource: self.lister.resource.clone(),
                    source: Box::new(source),
                })?;
        members.retain(|o| o.namespace() == Some(self.namespace.as_str()));
        Ok(members)
    }

    /// Every cached object of the namespace.
    #[must_use]
    pub fn list_all(&self) -> Vec<CachedObject> {
        // The namespace index always exists.
        self.lister
            .store
            .by_index(NAMESPACE_INDEX, &self.namespace)
            .unwrap_or_default()
    }

    /// The object of the namespace with this name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<CachedObject> {
        self.lister
            .store
            .get(&key_from_parts(Some(&self.namespace), name))
    }
}

#[cfg(test)]
mod tests;
