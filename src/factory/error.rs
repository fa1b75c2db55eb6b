//! What the factory refuses, and why.

use super::*;
use crate::vocabulary::error_chain;

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
    #[error("reading API discovery {path}")]
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
    #[error("{problem}{}", unavailable_note(.unavailable))]
    Resolve {
        /// What resolution found. Said in this error's own message, so not
        /// its [`source`](std::error::Error::source).
        problem: Box<VocabularyError>,
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
    #[error("{resource}: invalid selector")]
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

    /// Why a cache did not sync, from
    /// [`InformerFactory::wait_for_cache_sync`]: the informer layer's
    /// [`NotSynced`], decided once for every layer.
    #[error("{resource}: {reason}")]
    NotSynced {
        /// The resource.
        resource: ResourceKey,
        /// Why.
        reason: NotSynced,
    },

    /// [`InformerFactory::start`] was called outside a tokio runtime.
    #[error("starting informers needs a tokio runtime")]
    NoRuntime,
}

impl FactoryError {
    /// Why a cache did not sync, in one camelCase word: the
    /// [`NotSynced::reason`] of a [`NotSynced`](Self::NotSynced) error
    /// (`forbidden`, `unauthorized`, `notServed`, `gone`, `timedOut`, ...),
    /// `notServed` for a resource refused as not served; for discovery that
    /// failed, the same words from its answer (`unauthorized`,
    /// `forbidden`, `serverError`, or `unreachable` without one); `failed`
    /// for the errors that do not say why a cache did not sync.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        self.not_synced().map_or("failed", |why| why.reason())
    }

    /// Why, in the informer layer's words, when this error is the cluster's
    /// answer rather than a mistake in what was asked: a cache that did not
    /// sync, a resource not served, a discovery request that failed
    /// (classified as a failed list is: [`NotSynced::from_failure`]).
    #[must_use]
    pub fn not_synced(&self) -> Option<NotSynced> {
        match self {
            FactoryError::NotSynced { reason, .. } => Some(reason.clone()),
            FactoryError::NotServed { reason, .. } => Some(NotSynced::NotServed {
                reason: reason.clone(),
            }),
            FactoryError::Discovery { source, .. } => {
                let code = match source {
                    kube_client::Error::Api(status) => Some(status.code),
                    _ => None,
                };
                Some(NotSynced::from_failure(code, error_chain(self)))
            }
            _ => None,
        }
    }
}

fn not_served(resource: &ResourceKey, reason: &str, when: WhenNotServed) -> String {
    match when {
        WhenNotServed::Wait => {
            format!("{reason}; the informer of {resource} starts once it is served")
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::error_chain::assert_every_variant;

    /// One error of each variant, each with a source where it has one.
    fn every_variant() -> Vec<FactoryError> {
        let resource = || ResourceKey::new("example.com", "v1", "widgets");
        let not_found = || VocabularyError::NotFound {
            input: "widgetz".into(),
            suggestions: vec![resource()],
        };
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        vec![
            FactoryError::Name(VocabularyError::EmptyName),
            FactoryError::Discovery {
                path: "/apis".into(),
                source: kube_client::Error::Service(Box::new(refused)),
            },
            FactoryError::Resolve {
                problem: Box::new(not_found()),
                unavailable: vec![UnavailableGroupVersion {
                    group: "metrics.k8s.io".into(),
                    version: "v1beta1".into(),
                    reason: "503".into(),
                }],
            },
            FactoryError::VersionNotServed {
                resource: resource(),
                served: vec!["v2".into()],
            },
            FactoryError::NotWatchable {
                resource: resource(),
                verbs: vec!["create".into()],
            },
            FactoryError::ClusterScoped(VocabularyError::ClusterScoped {
                resource: "nodes.v1".into(),
                namespaces: "shop".into(),
            }),
            FactoryError::NotServed {
                resource: ResourceKey::new("example.com", "", "widgets"),
                reason: "not served".into(),
                when: WhenNotServed::Wait,
            },
            FactoryError::Selector {
                resource: resource(),
                source: Box::new(VocabularyError::FieldSyntax {
                    input: "a".into(),
                    offset: 1,
                    column: 1,
                    reason: "expected an operator".into(),
                }),
            },
            FactoryError::Informer(InformerError::Index {
                resource: resource(),
                source: Box::new(crate::cache::CacheError::DuplicateIndex {
                    name: "owner".into(),
                }),
            }),
            FactoryError::ShutDown,
            FactoryError::Category { name: "all".into() },
            FactoryError::EmptyPattern,
            FactoryError::PatternGroup {
                pattern: "*.*x".into(),
                reason: "one '*' at most".into(),
            },
            FactoryError::PatternName {
                field: "include",
                name: "a b".into(),
                reason: "a space".into(),
            },
            FactoryError::PatternSyntax {
                input: "group:".into(),
                reason: "empty".into(),
            },
            FactoryError::NotSynced {
                resource: resource(),
                reason: NotSynced::Unauthorized {
                    message: "Unauthorized".into(),
                },
            },
            FactoryError::NoRuntime,
        ]
    }

    /// The variant's place in the declaration; a new variant fails to
    /// compile here until it has a sample above.
    fn variant(e: &FactoryError) -> usize {
        match e {
            FactoryError::Name(_) => 0,
            FactoryError::Discovery { .. } => 1,
            FactoryError::Resolve { .. } => 2,
            FactoryError::VersionNotServed { .. } => 3,
            FactoryError::NotWatchable { .. } => 4,
            FactoryError::ClusterScoped(_) => 5,
            FactoryError::NotServed { .. } => 6,
            FactoryError::Selector { .. } => 7,
            FactoryError::Informer(_) => 8,
            FactoryError::ShutDown => 9,
            FactoryError::Category { .. } => 10,
            FactoryError::EmptyPattern => 11,
            FactoryError::PatternGroup { .. } => 12,
            FactoryError::PatternName { .. } => 13,
            FactoryError::PatternSyntax { .. } => 14,
            FactoryError::NotSynced { .. } => 15,
            FactoryError::NoRuntime => 16,
        }
    }

    #[test]
    fn every_variant_says_each_fact_of_its_chain_once() {
        let all = every_variant();
        assert_every_variant(&all, variant, 17);
        assert_eq!(
            crate::vocabulary::error_chain(&all[1]),
            "reading API discovery /apis: ServiceError: Connection refused"
        );
    }

    #[test]
    fn a_resource_waited_for_by_plural_and_group_is_said_as_it_was_named() {
        let waiting = FactoryError::NotServed {
            resource: ResourceKey::new("demo.kdi.example.com", "", "widgetz"),
            reason: "not served".into(),
            when: WhenNotServed::Wait,
        };
        let text = waiting.to_string();
        assert!(
            text.contains("widgetz.demo.kdi.example.com starts"),
            "{text}"
        );
        assert!(!text.contains(".."), "{text}");
    }
}
