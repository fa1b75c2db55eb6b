//! [`InformerFactory::for_pattern`]: informers for the resources a
//! [`ResourcePattern`] selects now.

use super::{InformerFactory, InformerHandle};
use crate::factory::FactoryError;
use crate::factory::pattern::ResourcePattern;
use crate::informer::options::InformerOptions;
use crate::vocabulary::resource::KnownResource;

impl InformerFactory {
    /// The informers of every resource `pattern` selects in discovery now
    /// (read first if it never was), each with the factory's options
    /// changed by `customize`, one version per resource. A namespace
    /// restriction applies to the namespaced resources; cluster-scoped ones
    /// are watched whole. This is a one-time selection: to follow CRDs as
    /// they come and go, use a
    /// [`ResourceSet`](crate::declarative::resource_set::ResourceSet).
    ///
    /// ```no_run
    /// # async fn demo(factory: kube_dynamic_informer::factory::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
    /// use kube_dynamic_informer::factory::ResourcePattern;
    ///
    /// let crds = ResourcePattern::default().groups(["*.example.com"]).custom_resources(true);
    /// for informer in factory.for_pattern(&crds, |o| o.metadata_only(true)).await? {
    ///     println!("watching {}", informer.resource());
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`FactoryError::EmptyPattern`] (and the other `Pattern*` variants) for a pattern that [`ResourcePattern::check`]
    /// refuses; [`FactoryError::Discovery`] when discovery (or, for
    /// `customResources`, the CRDs) cannot be read; any error of
    /// [`for_resource_with`](Self::for_resource_with).
    pub async fn for_pattern(
        &self,
        pattern: &ResourcePattern,
        customize: impl Fn(InformerOptions) -> InformerOptions,
    ) -> Result<Vec<InformerHandle>, FactoryError> {
        pattern.check()?;
        let selected = self.matching(pattern).await?;
        let mut informers = Vec::with_capacity(selected.len());
        for resource in selected {
            let options = self.pattern_options(&resource, customize(self.options().clone()));
            informers.push(self.for_resource_with(resource.key(), |_| options).await?);
        }
        Ok(informers)
    }

    /// What `pattern` selects in the current discovery snapshot (read first
    /// if it never was).
    ///
    /// # Errors
    /// [`FactoryError::Discovery`].
    pub async fn matching(
        &self,
        pattern: &ResourcePattern,
    ) -> Result<Vec<KnownResource>, FactoryError> {
        let discovery = self.discovery();
        let mut snapshot = discovery.snapshot();
        if !snapshot.is_loaded() {
            snapshot = discovery.refresh().await?;
        }
        // The CRDs are read when the pattern asks for custom resources and
        // the snapshot does not know them.
        if pattern.custom_resources && snapshot.is_custom("", "").is_none() {
            let custom = discovery.custom_resources().await?;
            return Ok(pattern.select_with(&snapshot, &|g, p| {
                custom.contains(&(g.to_string(), p.to_string()))
            }));
        }
        Ok(pattern.select(&snapshot))
    }

    /// `options` as they apply to `resource`: a cluster-scoped resource
    /// gets the factory's namespaces, which it ignores, instead of a
    /// restriction it cannot have.
    #[must_use]
    pub fn pattern_options(
        &self,
        resource: &KnownResource,
        mut options: InformerOptions,
    ) -> InformerOptions {
        if !resource.namespaced {
            options.watch.namespaces = self.options().watch.namespaces.clone();
        }
        options
    }
}
