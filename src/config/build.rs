//! From a loaded config file to a factory with its informers and indexes.

use kube_client::Client;

use super::{InformerSet, InformerSpec, Settings, WhenNotServed};
use crate::factory::{FactoryError, GenericInformer, InformerFactory, InformerOptions, Namespaces};
use crate::informer::InformerError;

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
    /// Its entry, with the file's defaults applied.
    pub spec: InformerSpec,
    /// The informer and its lister.
    pub informer: GenericInformer,
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
    #[error("informer {name:?} ({resource}): {source}")]
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
    /// The resource is not served and the file said `whenNotServed: fail`.
    #[error("informer {name:?}: {reason} (whenNotServed: fail)")]
    NotServed {
        /// The informer's name in the file.
        name: String,
        /// Why it is not served.
        reason: String,
    },
}

/// The factory options an entry asks for, on top of `base`.
pub(crate) fn options_for(base: InformerOptions, settings: &Settings) -> InformerOptions {
    let mut o = base;
    if let Some(ns) = &settings.namespaces {
        o.namespaces = Namespaces::only(ns.iter().cloned());
    }
    if let Some(s) = &settings.label_selector {
        o.label_selector = Some(s.clone());
    }
    if let Some(s) = &settings.field_selector {
        o.field_selector = Some(s.clone());
    }
    if settings.resync.is_some() {
        o.resync = settings.resync_period();
    }
    match settings.strip_managed_fields {
        Some(true) => o = o.strip_managed_fields(),
        Some(false) => o = o.no_transform(),
        None => {}
    }
    if let Some(v) = settings.metadata_only {
        o.metadata_only = v;
    }
    if let Some(v) = settings.streaming_list {
        o.streaming_list = v;
    }
    if let Some(v) = settings.page_size {
        o.page_size = v;
    }
    o
}

impl InformerSet {
    /// Creates a factory with every informer and index of the file, in one
    /// call. Nothing is started: add handlers, then start the factory.
    ///
    /// ```no_run
    /// # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use kube_dynamic_informer::config::InformerSet;
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
        let factory = InformerFactory::new(client);
        self.build_in(factory).await
    }

    /// As [`build`](Self::build), into an existing factory (its options are
    /// the base the file's settings change).
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub async fn build_in(
        &self,
        factory: InformerFactory,
    ) -> Result<ConfiguredFactory, BuildError> {
        let mut informers = Vec::new();
        let mut skipped = Vec::new();
        for spec in self.resolved() {
            let name = spec.name().to_string();
            let when = spec.options.when_not_served.unwrap_or_default();
            let settings = spec.options.clone();
            let result = factory
                .for_resource_with(spec.resource.as_str(), |base| options_for(base, &settings))
                .await;
            let informer = match result {
                Ok(informer) => informer,
                Err(FactoryError::Discovery(e)) if when == WhenNotServed::Skip => {
                    skipped.push(SkippedInformer {
                        name,
                        reason: e.to_string(),
                    });
                    continue;
                }
                Err(source) => {
                    return Err(BuildError::Informer {
                        name,
                        resource: spec.resource.clone(),
                        source,
                    });
                }
            };
            let availability = informer.availability();
            if !availability.is_served() {
                let reason = match &availability {
                    crate::reflector::ResourceAvailability::NotServed { reason } => reason.clone(),
                    crate::reflector::ResourceAvailability::Served { .. } => String::new(),
                };
                match when {
                    WhenNotServed::Wait => {}
                    WhenNotServed::Skip => {
                        let _ = factory.remove(informer.resource().clone()).await;
                        skipped.push(SkippedInformer { name, reason });
                        continue;
                    }
                    WhenNotServed::Fail => return Err(BuildError::NotServed { name, reason }),
                }
            }
            for (index, func) in spec.index_functions().map_err(|e| BuildError::Index {
                name: name.clone(),
                index: String::new(),
                message: e.to_string(),
            })? {
                match informer.informer().add_index(index.clone(), func) {
                    Ok(()) => {}
                    Err(InformerError::Index { source, .. }) => {
                        return Err(BuildError::Index {
                            name,
                            index,
                            message: source.to_string(),
                        });
                    }
                    Err(e) => {
                        return Err(BuildError::Index {
                            name,
                            index,
                            message: e.to_string(),
                        });
                    }
                }
            }
            informers.push(ConfiguredInformer {
                name,
                spec,
                informer,
            });
        }
        Ok(ConfiguredFactory {
            factory,
            informers,
            skipped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_map_onto_factory_options() {
        let settings = Settings {
            namespaces: Some(vec!["a".into(), "b".into()]),
            label_selector: Some("app=web".into()),
            field_selector: Some("metadata.name=x".into()),
            resync: Some("30s".into()),
            strip_managed_fields: Some(true),
            metadata_only: Some(true),
            streaming_list: Some(true),
            page_size: Some(50),
            when_not_served: None,
            sensitive: Some(true),
        };
        let o = options_for(InformerOptions::default(), &settings);
        assert_eq!(o.namespaces, Namespaces::only(["a", "b"]));
        assert_eq!(o.label_selector.as_deref(), Some("app=web"));
        assert_eq!(o.field_selector.as_deref(), Some("metadata.name=x"));
        assert_eq!(o.resync, std::time::Duration::from_secs(30));
        assert!(o.transform.is_some());
        assert!(o.metadata_only && o.streaming_list);
        assert_eq!(o.page_size, 50);
        let untouched = options_for(InformerOptions::default(), &Settings::default());
        assert_eq!(untouched.page_size, InformerOptions::default().page_size);
        assert!(untouched.label_selector.is_none());
    }
}
