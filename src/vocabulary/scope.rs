//! Where a resource's objects live and whether the server serves it: the
//! resource's [`Scope`], the [`Namespaces`] a cache covers, and
//! [`ResourceAvailability`].
//!
//! The [layer docs](crate::vocabulary) say more.

use std::collections::BTreeSet;
use std::fmt;

use crate::vocabulary::VocabularyError;
use kube_core::ApiResource;

/// Whether a resource's objects live in namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Objects belong to a namespace (pods, deployments).
    Namespaced,
    /// Objects are cluster-wide (nodes, namespaces, CRDs).
    Cluster,
}

impl Scope {
    /// Checks that `namespaces` can apply to a resource of this scope: a
    /// cluster-scoped resource cannot be restricted to namespaces.
    ///
    /// ```
    /// use kube_dynamic_informer::vocabulary::{Namespaces, Scope};
    /// assert!(Scope::Namespaced.check("pods.v1", &Namespaces::only(["shop"])).is_ok());
    /// assert!(Scope::Cluster.check("nodes.v1", &Namespaces::All).is_ok());
    /// let err = Scope::Cluster.check("nodes.v1", &Namespaces::only(["shop"])).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "nodes.v1 is cluster-scoped: it cannot be restricted to namespaces (shop)"
    /// );
    /// ```
    ///
    /// # Errors
    /// [`VocabularyError`] naming the resource and the namespaces.
    pub fn check(
        self,
        resource: impl fmt::Display,
        namespaces: &Namespaces,
    ) -> Result<(), VocabularyError> {
        match (self, namespaces) {
            (Scope::Cluster, Namespaces::Only(_)) => Err(VocabularyError::ClusterScoped {
                resource: resource.to_string(),
                namespaces: namespaces.to_string(),
            }),
            _ => Ok(()),
        }
    }
}

/// Which namespaces an informer watches.
///
/// In a config file: a list of namespace names (absent or empty: all).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Namespaces {
    /// All namespaces (and cluster-scoped resources).
    #[default]
    All,
    /// Only these namespaces. With several, the informer lists each at one
    /// common resourceVersion and merges their watches into one cache (so it
    /// needs no cluster-wide permission), without streaming lists.
    Only(BTreeSet<String>),
}

impl Namespaces {
    /// Only the given namespaces; none at all means [`Namespaces::All`].
    #[must_use]
    pub fn only<I, S>(namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let set: BTreeSet<String> = namespaces.into_iter().map(Into::into).collect();
        if set.is_empty() {
            Namespaces::All
        } else {
            Namespaces::Only(set)
        }
    }

    /// Whether this is [`Namespaces::All`].
    #[must_use]
    pub fn is_all(&self) -> bool {
        *self == Namespaces::All
    }
}

impl fmt::Display for Namespaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Namespaces::All => f.write_str("all namespaces"),
            Namespaces::Only(set) => {
                f.write_str(&set.iter().cloned().collect::<Vec<_>>().join(", "))
            }
        }
    }
}

impl serde::Serialize for Namespaces {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Namespaces::All => s.collect_seq(std::iter::empty::<&String>()),
            Namespaces::Only(set) => s.collect_seq(set),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Namespaces {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Namespaces::only(Vec::<String>::deserialize(d)?))
    }
}

#[cfg(feature = "config")]
impl schemars::JsonSchema for Namespaces {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Namespaces".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "items": { "type": "string", "minLength": 1 },
        })
    }
}

/// Whether the API server serves a resource, as discovery last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceAvailability {
    /// Served. `resource` is what discovery reported (its kind is the one
    /// objects must carry) and `scope` tells namespaced from cluster-scoped.
    Served {
        /// The resource as discovery reported it.
        resource: ApiResource,
        /// Namespaced or cluster-scoped.
        scope: Scope,
    },
    /// Not served: a CRD not (or no longer) installed, an API group that is
    /// not enabled, an aggregated API that is down.
    NotServed {
        /// Why, in words that name the resource.
        reason: String,
    },
}

impl ResourceAvailability {
    /// Whether the resource is served.
    #[must_use]
    pub fn is_served(&self) -> bool {
        matches!(self, ResourceAvailability::Served { .. })
    }

    /// The resource and its scope, when served.
    #[must_use]
    pub fn served(&self) -> Option<(&ApiResource, Scope)> {
        match self {
            ResourceAvailability::Served { resource, scope } => Some((resource, *scope)),
            ResourceAvailability::NotServed { .. } => None,
        }
    }
}
