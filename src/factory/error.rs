//! What the factory refuses, and why.

use super::*;

/// Errors of the factory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FactoryError {
    /// The resource name does not parse.
    #[error(transparent)]
    Name(#[from] VocabularyError),
    // Discovery.
    /// A discovery document every answer depends on (`/api` or `/apis`)
    /// could not be read.
    #[error("reading API discovery {path}: {source}")]
    Discovery {
        /// The path requested.
        path: String,
        /// The client's error.
        #[source]
        source: kube_client::Error,
    },
    /// The name matches no served resource, or several; `unavailable` lists
    /// the group versions that could not be discovered and might have held
    /// it.
    #[error("{source}{}", unavailable_note(.unavailable))]
    Resolve {
        /// What resolution found.
        #[source]
        source: Box<VocabularyError>,
        /// Group versions that could not be discovered (an aggregated API that
        /// is down) and that the name might refer to.
        unavailable: Vec<UnavailableGroupVersion>,
    },

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
    /// The resource is not served: refused when the options say
    /// [`WhenNotServed::Skip`] or [`WhenNotServed::Fail`]; with
    /// [`WhenNotServed::Wait`], why a cache did not sync in
    /// [`InformerFactory::wait_for_cache_sync`] (the informer starts once
    /// the resource is served).
    #[error("{}", not_served(.resource, .reason, *.when))]
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
    // Resource patterns.
    /// The pattern has no criterion and no `include`: it would select
    /// nothing, or everything, and neither is likely meant.
    #[error(
        "a pattern needs at least one of groups, categories, customResources: true or include; `groups: [\"*\"]` selects every resource"
    )]
    EmptyPattern,
    /// A group glob is malformed.
    #[error("group pattern {pattern:?}: {reason}")]
    PatternGroup {
        /// The glob as written.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A name in `include` or `exclude` (or a category) is malformed.
    #[error("{field} entry {name:?}: {reason}")]
    PatternName {
        /// `include`, `exclude` or `categories`.
        field: &'static str,
        /// The entry as written.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A pattern given on the command line does not parse.
    #[error("pattern {input:?}: {reason}")]
    PatternSyntax {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    // Why a cache did not sync, from InformerFactory::wait_for_cache_sync.
    /// The server refuses the list (403); the informer keeps retrying and
    /// syncs by itself once access is granted.
    #[error("{}: forbidden (403); it syncs once access is granted: {message}", shown(.resource))]
    Forbidden {
        /// The resource.
        resource: ResourceKey,
        /// The server's message.
        message: String,
    },
    /// The resource was served and is gone (its CRD was deleted).
    #[error(
        "{reason}; the informer of {} emptied its cache and resumes if it is served again",
        shown(.resource)
    )]
    Gone {
        /// The resource.
        resource: ResourceKey,
        /// Discovery's reason.
        reason: String,
    },
    /// Not synced within the timeout, for another reason.
    #[error("{} did not sync within {timeout:?}; last status: {status}", shown(.resource))]
    SyncTimedOut {
        /// The resource.
        resource: ResourceKey,
        /// The timeout.
        timeout: Duration,
        /// What the informer was doing.
        status: Box<crate::informer::InformerStatus>,
    },
    /// The factory was not started.
    #[error("{}: the informer was not started (call InformerFactory::start)", shown(.resource))]
    NotStarted {
        /// The resource.
        resource: ResourceKey,
    },
    /// The informer stopped (removed, or the factory shut down).
    #[error("{}: the informer stopped before its cache synced", shown(.resource))]
    StoppedBeforeSync {
        /// The resource.
        resource: ResourceKey,
    },

    /// [`InformerFactory::start`] was called outside a tokio runtime.
    #[error("starting informers needs a tokio runtime")]
    NoRuntime,
}

impl FactoryError {
    /// Why a cache did not sync, in one camelCase word in the words of
    /// [`InformerStatus::name`](crate::informer::InformerStatus::name):
    /// `forbidden`, `notServed`, `gone`, `timedOut`, `notStarted` or
    /// `stopped`; `failed` for the errors that do not come from
    /// [`InformerFactory::wait_for_cache_sync`].
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            FactoryError::Forbidden { .. } => "forbidden",
            FactoryError::NotServed { .. } => "notServed",
            FactoryError::Gone { .. } => "gone",
            FactoryError::SyncTimedOut { .. } => "timedOut",
            FactoryError::NotStarted { .. } => "notStarted",
            FactoryError::StoppedBeforeSync { .. } => "stopped",
            _ => "failed",
        }
    }
}

fn not_served(resource: &ResourceKey, reason: &str, when: WhenNotServed) -> String {
    match when {
        WhenNotServed::Wait => format!(
            "{reason}; the informer of {} starts once it is served",
            shown(resource)
        ),
        WhenNotServed::Skip | WhenNotServed::Fail => reason.to_owned(),
    }
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

pub(super) fn unavailable_note(unavailable: &[UnavailableGroupVersion]) -> String {
    if unavailable.is_empty() {
        return String::new();
    }
    let list: Vec<String> = unavailable.iter().map(ToString::to_string).collect();
    format!(" (not discovered, so not searched: {})", list.join("; "))
}
