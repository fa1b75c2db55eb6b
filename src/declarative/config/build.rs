//! From a loaded config file to a factory with its informers and indexes.

use kube_client::Client;

use super::{InformerSet, InformerSpec};
use crate::declarative::shard_group::ShardGroup;
use crate::factory::{FactoryError, InformerFactory, InformerHandle};
use crate::informer::InformerError;
use crate::informer::options::WhenNotServed;

/// The informers of a config file, in one factory (not started yet: add
/// handlers, then call [`InformerFactory::start`]).
#[derive(Debug)]
pub struct ConfiguredFactory {
    /// The factory holding every informer.
    pub factory: InformerFactory,
    /// The informers, in file order (skipped ones left out).
    pub informers: Vec<ConfiguredInformer>,
    /// Informers left out because their resource is not served and the file
    /// said `whenNotServed: skip`.
    pub skipped: Vec<SkippedInformer>,
}

/// One informer of a config file.
#[derive(Debug)]
pub struct ConfiguredInformer {
    /// Its name in the file.
    pub name: String,
    /// Its entry (with the file's defaults applied when it was read).
    pub spec: InformerSpec,
    /// The informer and its lister.
    pub informer: InformerHandle,
}

/// An informer the file allowed to be left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedInformer {
    /// Its name in the file.
    pub name: String,
    /// Why it was left out.
    pub reason: String,
}

/// Why a config could not be turned into informers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The factory refused an informer (unknown or ambiguous resource name,
    /// namespaces on a cluster-scoped resource, ...).
    #[error("{}{source}", informer_label(.name, .resource))]
    Informer {
        /// The informer's name in the file.
        name: String,
        /// Its resource as written.
        resource: String,
        /// The factory's error.
        #[source]
        source: FactoryError,
    },
    /// An index could not be added (an expression, or a name already used
    /// on an informer shared with another entry).
    #[error("informer {name:?}: index {index:?}: {message}")]
    Index {
        /// The informer's name in the file.
        name: String,
        /// The index.
        index: String,
        /// What went wrong.
        message: String,
    },
    /// The file's `shardGroup` could not be joined.
    #[error("shardGroup: {0}")]
    ShardGroup(String),
    /// The resource is not served and the file said `whenNotServed: fail`.
    #[error("informer {name:?}: {reason} (whenNotServed: fail)")]
    NotServed {
        /// The informer's name in the file.
        name: String,
        /// Why it is not served.
        reason: String,
    },
}

/// `informer "web-pods" (pods): ` for an informer named apart from its
/// resource; nothing when the name is the resource, which the factory's
/// error names already.
fn informer_label(name: &str, resource: &str) -> String {
    if name == resource {
        String::new()
    } else {
        format!("informer {name:?} ({resource}): ")
    }
}

impl InformerSet {
    /// Creates a factory with every informer and index of the file, in one
    /// call. Nothing is started: add handlers, then start the factory.
    ///
    /// ```no_run
    /// # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use kube_dynamic_informer::declarative::InformerSet;
    ///
    /// let set = InformerSet::load_file("examples/configs/pods-and-deployments.yaml")?;
    /// let configured = set.build(client).await?;
    /// configured.factory.start()?;
    /// let report = configured.factory.wait_for_cache_sync(std::time::Duration::from_secs(60)).await;
    /// for (resource, failure) in report.failures() {
    ///     eprintln!("{resource}: {failure}");
    /// }
    /// let pods = &configured.informers[0].informer;
    /// let on_node = pods.lister().by_index("node", "node-1")?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The first informer that cannot be created, an index that cannot be
    /// added, or a resource not served under `whenNotServed: fail`.
    pub async fn build(&self, client: Client) -> Result<ConfiguredFactory, BuildError> {
        let factory = InformerFactory::with_options(client, self.defaults.clone());
        self.build_in(factory).await
    }

    /// Joins the file's `shardGroup`, if it has one, through `client`.
    fn join_shard_group(&self, client: Client) -> Result<Option<ShardGroup>, String> {
        let Some(spec) = &self.shard_group else {
            return Ok(None);
        };
        let config = spec.config()?;
        ShardGroup::join(client, config)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// As [`build`](Self::build), into an existing factory. It joins the
    /// file's `shardGroup`, if any, and every informer without a static
    /// `shard` keeps the slots the member holds. Each informer
    /// gets its entry's options; a namespace restriction equal to the
    /// factory's own is the factory-wide one, which cluster-scoped resources
    /// ignore.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub async fn build_in(
        &self,
        factory: InformerFactory,
    ) -> Result<ConfiguredFactory, BuildError> {
        let mut informers = Vec::new();
        let mut skipped = Vec::new();
        let group = self
            .join_shard_group(factory.client().clone())
            .map_err(BuildError::ShardGroup)?;
        for spec in &self.informers {
            let name = spec.name().to_string();
            let mut options = spec.options.clone();
            if options.shard.is_none()
                && let Some(group) = &group
            {
                options.shard_group = Some(group.into());
            }
            let result = factory
                .for_resource_with(spec.resource.as_str(), |_| options)
                .await;
            let informer = match result {
                Ok(informer) => informer,
                Err(FactoryError::Discovery(e))
                    if spec.options.when_not_served == WhenNotServed::Skip =>
                {
                    skipped.push(SkippedInformer {
                        name,
                        reason: e.to_string(),
                    });
                    continue;
                }
                Err(FactoryError::NotServed {
                    reason,
                    when: WhenNotServed::Skip,
                    ..
                }) => {
                    skipped.push(SkippedInformer { name, reason });
                    continue;
                }
                Err(FactoryError::NotServed { reason, .. }) => {
                    return Err(BuildError::NotServed { name, reason });
                }
                Err(source) => {
                    return Err(BuildError::Informer {
                        name,
                        resource: spec.resource.clone(),
                        source,
                    });
                }
            };
            add_indexes(&informer, spec).map_err(|e| *e)?;
            informers.push(ConfiguredInformer {
                name,
                spec: spec.clone(),
                informer,
            });
        }
        for pattern in &self.patterns {
            let name = pattern.name.clone();
            let options = pattern.options.clone();
            let found = factory
                .for_pattern(&pattern.pattern, |_| options.clone())
                .await
                .map_err(|source| BuildError::Informer {
                    name: name.clone(),
                    resource: format!("pattern {name:?}"),
                    source,
                })?;
            for informer in found {
                let spec = InformerSpec {
                    name: Some(name.clone()),
                    resource: informer.resource().to_string(),
                    options: informer.informer().options().clone(),
                    indexes: pattern.indexes.clone(),
                };
                add_indexes(&informer, &spec).map_err(|e| *e)?;
                informers.push(ConfiguredInformer {
                    name: name.clone(),
                    spec,
                    informer,
                });
            }
        }
        Ok(ConfiguredFactory {
            factory,
            informers,
            skipped,
        })
    }
}

/// Adds the indexes of `spec` to `informer`.
fn add_indexes(informer: &InformerHandle, spec: &InformerSpec) -> Result<(), Box<BuildError>> {
    let name = spec.name().to_string();
    for (index, func) in spec.index_functions().map_err(|e| BuildError::Index {
        name: name.clone(),
        index: String::new(),
        message: e.to_string(),
    })? {
        match informer.informer().add_index(index.clone(), func) {
            Ok(()) => {}
            Err(InformerError::Index { source, .. }) => {
                return Err(Box::new(BuildError::Index {
                    name,
                    index,
                    message: source.to_string(),
                }));
            }
            Err(e) => {
                return Err(Box::new(BuildError::Index {
                    name,
                    index,
                    message: e.to_string(),
                }));
            }
        }
    }
    Ok(())
}
