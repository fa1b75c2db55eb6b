//! What the factory refuses, and why.

use super::*;

/// Errors of the factory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FactoryError {
    /// The resource name does not parse.
    #[error(transparent)]
    Name(#[from] VocabularyError),
    /// Discovery failed, or the name matches no served resource (or
    /// several).
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// The name or key asks for a version that is not served, while other
    /// versions of the resource are: a typo or an outdated version rather
    /// than a CRD still to come, so the factory does not wait for it.
    #[error("{}", version_not_served(.resource, .served))]
    VersionNotServed {
        /// The resource asked for.
        resource: ResourceKey,
        /// The versions served, the preferred one first.
        served: Vec<String>,
    },
    /// The resource is served but cannot be listed and watched.
    #[error("{resource} cannot be watched: it supports only {}", .verbs.join(", "))]
    NotWatchable {
        /// The resource.
        resource: ResourceKey,
        /// What it supports.
        verbs: Vec<String>,
    },
    /// A per-resource namespace restriction on a cluster-scoped resource.
    #[error(transparent)]
    ClusterScoped(VocabularyError),
    /// The resource is not served and the options say
    /// [`WhenNotServed::Skip`] or [`WhenNotServed::Fail`].
    #[error("{reason}")]
    NotServed {
        /// The resource.
        resource: ResourceKey,
        /// Why, as discovery put it.
        reason: String,
        /// What the options asked for.
        when: WhenNotServed,
    },
    /// A label or field selector does not parse.
    #[error("{}: {source}", shown(.resource))]
    Selector {
        /// The resource.
        resource: ResourceKey,
        /// What is wrong with the selector.
        #[source]
        source: Box<VocabularyError>,
    },
    /// The informer could not be built.
    #[error(transparent)]
    Informer(#[from] InformerError),
    /// [`InformerFactory::shutdown`] was called.
    #[error("the informer factory was shut down")]
    ShutDown,
    /// The name is a category of resources (`all`, or one a CRD declares),
    /// not a resource.
    #[error(
        "{name:?} is a category, not a resource: name it category:{name} to watch the resources in it"
    )]
    Category {
        /// The name as given.
        name: String,
    },
    /// A resource pattern is malformed.
    #[error(transparent)]
    Pattern(crate::factory::pattern::PatternError),
    /// [`InformerFactory::start`] was called outside a tokio runtime.
    #[error("starting informers needs a tokio runtime")]
    NoRuntime,
}

pub(super) fn version_not_served(resource: &ResourceKey, served: &[String]) -> String {
    let (group, preferred) = if resource.group.is_empty() {
        ("the core group", resource.resource.clone())
    } else {
        (
            resource.group.as_str(),
            format!("{}.{}", resource.resource, resource.group),
        )
    };
    format!(
        "{resource} is not served: {group} serves {} in {}; name one of these versions, or {preferred} for the preferred one",
        resource.resource,
        served.join(", ")
    )
}
