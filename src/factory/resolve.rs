//! From a name to a resource: served now, or one to wait for.

use super::*;

/// What a resource reference comes to.
/// What a resource name designates now, as the factory resolves it: see
/// [`InformerFactory::resolve`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Resolution {
    /// Served now: this resource.
    Served(KnownResource),
    /// Not served now; an informer asked for by this name waits for it and
    /// starts once discovery sees it.
    NotServed {
        /// The resource as far as the name tells: an empty version for a
        /// `plural.group` name, which lists the version discovery designates
        /// once served.
        resource: ResourceKey,
        /// Why it is not served, as discovery says.
        reason: String,
    },
}

pub(super) enum Resolved {
    /// Served now.
    Served(KnownResource),
    /// Not served, named fully: wait for exactly this key.
    AwaitKey(ResourceKey),
    /// Not served, named as `plural.group`: wait for whatever version the
    /// name designates once served. The key has an empty version.
    AwaitName(ResourceKey, ResourceName),
}

impl InformerFactory {
    /// What `resource` designates, resolved exactly as
    /// [`for_resource`](Self::for_resource) resolves it, without making an
    /// informer: a served resource, or one not served yet that an informer
    /// would wait for. Reads discovery again before saying a name is
    /// unknown.
    ///
    /// ```no_run
    /// use kube_dynamic_informer::factory::{InformerFactory, Resolution};
    ///
    /// # async fn demo(factory: InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
    /// match factory.resolve("deploy").await? {
    ///     Resolution::Served(r) => println!("{} ({})", r.key(), r.kind),
    ///     Resolution::NotServed { resource, reason } => println!("{resource} waits: {reason}"),
    ///     _ => {}
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`for_resource`](Self::for_resource) for the name:
    /// [`FactoryError::Name`], [`FactoryError::Discovery`] (unknown or
    /// ambiguous, with suggestions or choices),
    /// [`FactoryError::VersionNotServed`], [`FactoryError::NotWatchable`].
    pub async fn resolve(
        &self,
        resource: impl Into<ResourceRef>,
    ) -> Result<Resolution, FactoryError> {
        let named = resource.into().parse()?;
        let resolved = self.resolve_named(named).await?;
        let snapshot = self.inner.discovery.snapshot();
        let (availability, resource) = match resolved {
            Resolved::Served(known) => {
                self.check_watchable(&known)?;
                return Ok(Resolution::Served(known));
            }
            Resolved::AwaitKey(key) => (snapshot.availability(&key), key),
            Resolved::AwaitName(key, name) => (snapshot.availability_of_name(&name), key),
        };
        let reason = match availability {
            ResourceAvailability::NotServed { reason } => reason,
            ResourceAvailability::Served { .. } => "served only now".to_owned(),
        };
        Ok(Resolution::NotServed { resource, reason })
    }

    /// What a resource reference designates: a served resource, or one to
    /// wait for (a fully qualified name or a key, or a `plural.group` name).
    pub(super) async fn resolve_named(
        &self,
        named: Result<ResourceName, ResourceKey>,
    ) -> Result<Resolved, FactoryError> {
        let discovery = &self.inner.discovery;
        let key = match named {
            Err(key) => match discovery.lookup(&key).await? {
                Some(known) => return Ok(Resolved::Served(known)),
                None => key,
            },
            // Resolution read discovery again before saying "not found".
            Ok(name) => match discovery.resolve(&name).await {
                Ok(known) => return Ok(Resolved::Served(known)),
                Err(FactoryError::Resolve {
                    problem,
                    unavailable,
                }) if matches!(*problem, VocabularyError::NotFound { .. }) => {
                    match (fully_qualified(&name), plural_and_group(&name)) {
                        (Some(key), _) => key,
                        (None, Some(key)) => return Ok(Resolved::AwaitName(key, name)),
                        (None, None) => {
                            let typed = name.as_str().to_ascii_lowercase();
                            if discovery
                                .snapshot()
                                .categories
                                .values()
                                .any(|c| c.contains(&typed))
                            {
                                return Err(FactoryError::Category {
                                    name: name.as_str().to_owned(),
                                });
                            }
                            return Err(FactoryError::Resolve {
                                problem,
                                unavailable,
                            });
                        }
                    }
                }
                Err(err) => return Err(err),
            },
        };
        let snapshot = discovery.snapshot();
        let served: Vec<String> = snapshot
            .versions_of(&key.group, &key.resource)
            .iter()
            .map(|r| r.version.clone())
            .collect();
        if served.is_empty() {
            Ok(Resolved::AwaitKey(key))
        } else {
            Err(FactoryError::VersionNotServed {
                resource: key,
                served,
            })
        }
    }
}
