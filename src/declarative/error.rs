//! What the declarative layer refuses, and why.

#[cfg(feature = "config")]
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "config")]
use crate::declarative::config::{ConfigProblem, MAX_INDEXES};
use crate::factory::FactoryError;

/// Errors of the declarative layer: config files and the sets built from
/// them, resource sets and their reloads, cluster sets (and why a cache did
/// not sync in one cluster) and shard groups.
///
/// ```
/// use kube_dynamic_informer::declarative::{DeclarativeError, InformerSet};
///
/// let text = "apiVersion: kube-dynamic-informer.io/v1alpha1
/// kind: InformerSet
/// informers: [{resource: pods, resync: soon}]";
/// let err = InformerSet::load_str(text, "demo.yaml").unwrap_err();
/// assert!(matches!(err, DeclarativeError::Config { .. }));
/// let paths: Vec<_> = err.problems().iter().map(|p| p.path.as_str()).collect();
/// assert_eq!(paths, ["informers[0].resync"], "{err}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeclarativeError {
    /// Every problem found in a config file, in file order, located: on
    /// loading it, or on applying it to a running [`ResourceSet`](crate::declarative::ResourceSet)
    /// (which then runs on as it was).
    #[cfg(feature = "config")]
    #[error("{}", problems_text(.errors))]
    Config {
        /// The problems, at least one.
        errors: Vec<ConfigProblem>,
        /// Why, in one word, when every problem is the cluster's answer
        /// rather than a mistake in the config and they share one reason
        /// ([`FactoryError::reason`]): `notServed` (a resource not served
        /// under `whenNotServed: fail`), `unauthorized`, `forbidden`,
        /// `unreachable`, ...; `failed` otherwise.
        reason: &'static str,
    },

    // Names, indexes and overlays that do not make a set.
    #[cfg(feature = "config")]
    /// No resource or pattern was named.
    #[error("no resource named")]
    NothingNamed,
    #[cfg(feature = "config")]
    /// An index expression does not compile.
    #[error(transparent)]
    Index(#[from] crate::cache::CacheError),
    #[cfg(feature = "config")]
    /// More indexes than an informer may have.
    #[error("{count} indexes defined; at most {MAX_INDEXES} are allowed per informer")]
    TooManyIndexes {
        /// How many were defined.
        count: usize,
    },
    #[cfg(feature = "config")]
    /// A pattern is malformed.
    #[error("pattern {name:?}")]
    Pattern {
        /// The pattern as written.
        name: String,
        /// What is wrong.
        source: Box<FactoryError>,
    },
    #[cfg(feature = "config")]
    /// Exclusions or a scope filter were given, and no pattern.
    #[error(
        "exclusions and a scope filter apply to patterns ('*.example.com', category:NAME, custom:GROUP-GLOB, group:GROUP-GLOB); none was named"
    )]
    FilterWithoutPattern,
    #[cfg(feature = "config")]
    /// [`InformerSet::select`](crate::declarative::InformerSet::select) found no entry of the file by those names.
    #[error("no informer of the config file is named {names}")]
    NoEntryNamed {
        /// The names, joined with "or".
        names: String,
    },
    #[cfg(feature = "config")]
    /// The shard group is invalid.
    #[error("shard group: {0}")]
    ShardGroup(String),

    // Shard groups.
    /// A field of the [`ShardGroupConfig`](crate::declarative::ShardGroupConfig) is not valid.
    #[error("shard group {field} {value:?} {reason}")]
    InvalidShardGroup {
        /// The field: `name`, `namespace`, `identity`, `leaseDuration`, `slots`.
        field: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No tokio runtime to run the member on.
    #[error("joining shard group {group}: no tokio runtime is running")]
    ShardGroupNoRuntime {
        /// The group.
        group: String,
    },

    // Cluster sets.
    /// A cluster of this name is already in the set.
    #[error("cluster {0:?} is already in the set")]
    DuplicateCluster(String),
    /// The name cannot name a cluster: empty, or with a `/` (which
    /// separates the cluster from the rest of a merged key).
    #[error("{0:?} cannot name a cluster: a name is not empty and has no '/'")]
    BadClusterName(String),
    /// The cluster's client could not be built from its configuration
    /// (certificates, proxy settings).
    #[error("cluster {cluster:?}: building its client: {error}")]
    Client {
        /// The cluster.
        cluster: String,
        /// Why, as text.
        error: String,
    },
    /// A kubeconfig could not be read or names no usable context.
    #[error("{what}: {error}")]
    Kubeconfig {
        /// The file or context.
        what: String,
        /// Why, as text.
        error: String,
    },
    /// The set was shut down.
    #[error("the cluster set was shut down")]
    ShutDown,
    /// [`ClusterSet::start`](crate::declarative::ClusterSet::start) was called outside a tokio runtime.
    #[error("starting a cluster set needs a tokio runtime")]
    NoRuntime,

    // Why a cache did not sync in one cluster, from ClusterSet::wait_for_cache_sync.
    /// The cluster did not answer discovery (connection refused, a timeout,
    /// a certificate): the resource is not resolved there yet. Retried with
    /// backoff; it syncs once the cluster answers.
    #[error("cluster {cluster}: {resource}: unreachable: {error}")]
    Unreachable {
        /// The cluster.
        cluster: Arc<str>,
        /// The resource, as named.
        resource: Arc<str>,
        /// The client's error, as text.
        error: String,
    },
    /// The cluster answered but the name designates nothing watchable there
    /// (unknown, ambiguous, not watchable), or the answer was an error.
    /// Retried with backoff.
    #[error("cluster {cluster}: {resource}: {error}")]
    Unresolved {
        /// The cluster.
        cluster: Arc<str>,
        /// The resource, as named.
        resource: Arc<str>,
        /// `unresolved` when the name designates nothing there; when the
        /// answer was an error, why in the informer layer's words
        /// ([`NotSynced::reason`](crate::informer::NotSynced::reason)):
        /// `unauthorized`, `forbidden`, `serverError`, ...
        reason: &'static str,
        /// Why, as text.
        error: String,
    },
    /// The informer exists and did not sync: forbidden (403), not served,
    /// gone, timed out.
    #[error("cluster {cluster}")]
    Cache {
        /// The cluster.
        cluster: Arc<str>,
        /// Why, as the cluster's factory says it.
        #[source]
        source: Box<FactoryError>,
    },
    /// Nothing was known of the resource in the cluster when the timeout
    /// passed (its first discovery request had not answered).
    #[error("cluster {cluster}: {resource}: not resolved within {timeout:?}")]
    TimedOut {
        /// The cluster.
        cluster: Arc<str>,
        /// The resource, as named.
        resource: Arc<str>,
        /// The timeout.
        timeout: Duration,
    },
    /// The cluster was removed while waiting.
    #[error("cluster {cluster}: removed from the set")]
    Removed {
        /// The cluster.
        cluster: Arc<str>,
    },
}

impl DeclarativeError {
    /// The reason in one camelCase word, for tables and JSON: the cluster's
    /// own (`unreachable`, `unresolved`, `timedOut`, `removed`) or the
    /// informer layer's ([`NotSynced::reason`](crate::informer::NotSynced::reason)
    /// through [`FactoryError::reason`]: `forbidden`, `unauthorized`,
    /// `notServed`, `gone`, `serverError`, `timedOut`, ...), for a cache
    /// that did not sync, a name a cluster refused to resolve, or a config
    /// the cluster refused; `failed` for the errors that do not say why a
    /// cache did not sync.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            DeclarativeError::Unreachable { .. } => "unreachable",
            DeclarativeError::Unresolved { reason, .. } => reason,
            DeclarativeError::TimedOut { .. } => "timedOut",
            DeclarativeError::Removed { .. } => "removed",
            DeclarativeError::Cache { source, .. } => source.reason(),
            #[cfg(feature = "config")]
            DeclarativeError::Config { reason, .. } => reason,
            _ => "failed",
        }
    }

    /// A kubeconfig (`what`: the file or context) that cannot be read or
    /// used, and why.
    pub(crate) fn kubeconfig(what: String, error: &(dyn std::error::Error + 'static)) -> Self {
        DeclarativeError::Kubeconfig {
            what,
            error: crate::vocabulary::error_chain(error),
        }
    }
}

#[cfg(feature = "config")]
impl DeclarativeError {
    /// The problems of a [`Config`](Self::Config) error, in file order;
    /// none for the other errors.
    #[must_use]
    pub fn problems(&self) -> &[ConfigProblem] {
        match self {
            DeclarativeError::Config { errors, .. } => errors,
            _ => &[],
        }
    }

    /// One problem with a config file as a whole (it cannot be read, or it
    /// is empty).
    pub(crate) fn whole_file(file: &Path, message: String) -> Self {
        DeclarativeError::Config {
            errors: vec![ConfigProblem {
                file: file.to_path_buf(),
                position: None,
                path: String::new(),
                message,
            }],
            reason: "failed",
        }
    }
}

/// One problem on one line; several under a count, one per line.
#[cfg(feature = "config")]
fn problems_text(errors: &[ConfigProblem]) -> String {
    if let [only] = errors {
        return only.to_string();
    }
    let lines: String = errors.iter().map(|e| format!("\n  {e}")).collect();
    format!("{} problems in config:{lines}", errors.len())
}

#[cfg(all(test, feature = "config"))]
mod tests {
    use super::*;
    use crate::vocabulary::error_chain::assert_every_variant;

    /// One error of each variant, each with a source where it has one.
    fn every_variant() -> Vec<DeclarativeError> {
        let cluster = || Arc::<str>::from("east");
        let resource = || Arc::<str>::from("widgets.example.com");
        vec![
            DeclarativeError::Config {
                errors: vec![ConfigProblem {
                    file: "set.yaml".into(),
                    position: None,
                    path: "informers[0].resync".into(),
                    message: "not a duration".into(),
                }],
                reason: "failed",
            },
            DeclarativeError::NothingNamed,
            DeclarativeError::Index(crate::cache::CacheError::DuplicateIndex { name: "a".into() }),
            DeclarativeError::TooManyIndexes { count: 99 },
            DeclarativeError::Pattern {
                name: "*.example.com".into(),
                source: Box::new(FactoryError::EmptyPattern),
            },
            DeclarativeError::FilterWithoutPattern,
            DeclarativeError::NoEntryNamed {
                names: "web".into(),
            },
            DeclarativeError::ShardGroup("no slots".into()),
            DeclarativeError::InvalidShardGroup {
                field: "slots",
                value: "0".into(),
                reason: "is below 1".into(),
            },
            DeclarativeError::ShardGroupNoRuntime { group: "g".into() },
            DeclarativeError::DuplicateCluster("east".into()),
            DeclarativeError::BadClusterName("a/b".into()),
            DeclarativeError::Client {
                cluster: "east".into(),
                error: "bad certificate".into(),
            },
            DeclarativeError::Kubeconfig {
                what: "kubeconfig east.yaml".into(),
                error: "no such file".into(),
            },
            DeclarativeError::ShutDown,
            DeclarativeError::NoRuntime,
            DeclarativeError::Unreachable {
                cluster: cluster(),
                resource: resource(),
                error: "connection refused".into(),
            },
            DeclarativeError::Unresolved {
                cluster: cluster(),
                resource: resource(),
                reason: "unresolved",
                error: "no resource matches".into(),
            },
            DeclarativeError::Cache {
                cluster: cluster(),
                source: Box::new(FactoryError::NotSynced {
                    resource: crate::vocabulary::resource::ResourceKey::new(
                        "example.com",
                        "v1",
                        "widgets",
                    ),
                    reason: crate::informer::NotSynced::Forbidden {
                        message: "widgets is forbidden".into(),
                    },
                }),
            },
            DeclarativeError::TimedOut {
                cluster: cluster(),
                resource: resource(),
                timeout: Duration::from_secs(1),
            },
            DeclarativeError::Removed { cluster: cluster() },
        ]
    }

    /// The variant's place in the declaration; a new variant fails to
    /// compile here until it has a sample above.
    fn variant(e: &DeclarativeError) -> usize {
        match e {
            DeclarativeError::Config { .. } => 0,
            DeclarativeError::NothingNamed => 1,
            DeclarativeError::Index(_) => 2,
            DeclarativeError::TooManyIndexes { .. } => 3,
            DeclarativeError::Pattern { .. } => 4,
            DeclarativeError::FilterWithoutPattern => 5,
            DeclarativeError::NoEntryNamed { .. } => 6,
            DeclarativeError::ShardGroup(_) => 7,
            DeclarativeError::InvalidShardGroup { .. } => 8,
            DeclarativeError::ShardGroupNoRuntime { .. } => 9,
            DeclarativeError::DuplicateCluster(_) => 10,
            DeclarativeError::BadClusterName(_) => 11,
            DeclarativeError::Client { .. } => 12,
            DeclarativeError::Kubeconfig { .. } => 13,
            DeclarativeError::ShutDown => 14,
            DeclarativeError::NoRuntime => 15,
            DeclarativeError::Unreachable { .. } => 16,
            DeclarativeError::Unresolved { .. } => 17,
            DeclarativeError::Cache { .. } => 18,
            DeclarativeError::TimedOut { .. } => 19,
            DeclarativeError::Removed { .. } => 20,
        }
    }

    #[test]
    fn every_variant_says_each_fact_of_its_chain_once() {
        let all = every_variant();
        assert_every_variant(&all, variant, 21);
        assert_eq!(
            crate::vocabulary::error_chain(&all[18]),
            "cluster east: widgets.v1.example.com: forbidden (403); it syncs once access is granted: widgets is forbidden"
        );
    }
}
