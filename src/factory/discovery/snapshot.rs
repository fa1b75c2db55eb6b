//! What discovery knew at one moment: resources, verbs, categories, and
//! what is served or not.

use super::*;

/// Everything one discovery pass found.
#[derive(Debug, Clone, Default)]
pub struct DiscoverySnapshot {
    pub(super) resources: Vec<KnownResource>,
    pub(super) verbs: HashMap<ResourceKey, Vec<String>>,
    pub(crate) categories: HashMap<ResourceKey, Vec<String>>,
    /// `(group, plural)` of every resource a CRD defines, when known.
    pub(super) custom: Option<Arc<GroupPlurals>>,
    pub(super) unavailable: Vec<UnavailableGroupVersion>,
    pub(super) aggregated: bool,
    pub(super) generation: u64,
}

impl DiscoverySnapshot {
    /// A snapshot of an aggregated discovery document
    /// (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`, as `/api` and
    /// `/apis` serve it), with `custom` the `(group, plural)` pairs defined
    /// by CRDs when known: for tools that read saved discovery, and tests.
    ///
    /// ```
    /// use kube_dynamic_informer::factory::DiscoverySnapshot;
    /// use kube_dynamic_informer::vocabulary::ResourceKey;
    ///
    /// let doc = serde_json::json!({ "items": [{
    ///     "metadata": { "name": "example.com" },
    ///     "versions": [{ "version": "v1", "resources": [{
    ///         "resource": "widgets", "responseKind": { "kind": "Widget" },
    ///         "scope": "Namespaced", "verbs": ["list", "watch"], "categories": ["qa"]
    ///     }]}]
    /// }]});
    /// let snapshot = DiscoverySnapshot::from_aggregated(serde_json::from_value(doc)?, None);
    /// let key = ResourceKey::new("example.com", "v1", "widgets");
    /// assert!(snapshot.is_watchable(&key));
    /// assert_eq!(snapshot.categories(&key), ["qa"]);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn from_aggregated(
        list: kube_core::discovery::v2::APIGroupDiscoveryList,
        custom: Option<HashSet<(String, String)>>,
    ) -> Self {
        let mut snapshot = DiscoverySnapshot {
            aggregated: true,
            generation: 1,
            custom: custom.map(Arc::new),
            ..DiscoverySnapshot::default()
        };
        fetch::add_aggregated(&mut snapshot, list);
        snapshot
    }

    /// Every served resource, once per served version; no subresources.
    #[must_use]
    pub fn resources(&self) -> &[KnownResource] {
        &self.resources
    }

    /// The resource with exactly this key, if served.
    #[must_use]
    pub fn get(&self, key: &ResourceKey) -> Option<&KnownResource> {
        self.resources
            .iter()
            .find(|r| r.plural == key.resource && r.version == key.version && r.group == key.group)
    }

    /// The verbs the resource supports (`list`, `watch`, ...); empty when it
    /// is not served.
    #[must_use]
    pub fn verbs(&self, key: &ResourceKey) -> &[String] {
        self.verbs.get(key).map_or(&[], Vec::as_slice)
    }

    /// Whether the resource can be listed and watched, as an informer needs.
    #[must_use]
    pub fn is_watchable(&self, key: &ResourceKey) -> bool {
        let verbs = self.verbs(key);
        verbs.iter().any(|v| v == "list") && verbs.iter().any(|v| v == "watch")
    }

    /// The categories the resource belongs to (`all`, or those a CRD
    /// declares, such as `qa`); empty when it is in none or not served.
    #[must_use]
    pub fn categories(&self, key: &ResourceKey) -> &[String] {
        self.categories.get(key).map_or(&[], Vec::as_slice)
    }

    /// Whether `plural` in `group` is defined by a CustomResourceDefinition;
    /// `None` when that is not known: the CRDs are read only while
    /// [`DiscoveryCache::keep_current`] runs (and the client may read them).
    #[must_use]
    pub fn is_custom(&self, group: &str, plural: &str) -> Option<bool> {
        self.custom
            .as_ref()
            .map(|c| c.contains(&(group.to_string(), plural.to_string())))
    }

    /// Group versions that could not be discovered.
    #[must_use]
    pub fn unavailable(&self) -> &[UnavailableGroupVersion] {
        &self.unavailable
    }

    /// Whether the snapshot came from aggregated discovery.
    #[must_use]
    pub fn is_aggregated(&self) -> bool {
        self.aggregated
    }

    /// Counts discovery passes: 0 before the first, then 1, 2, ...
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether discovery ran at least once.
    #[must_use]
    pub fn is_loaded(&self) -> bool {
        self.generation > 0
    }

    /// Whether the resource is served now, and if not, why.
    #[must_use]
    pub fn availability(&self, key: &ResourceKey) -> ResourceAvailability {
        if !self.is_loaded() {
            return ResourceAvailability::NotServed {
                reason: format!("{key}: discovery has not run yet"),
            };
        }
        if let Some(known) = self.get(key) {
            if !self.is_watchable(key) {
                return ResourceAvailability::NotServed {
                    reason: format!(
                        "{key} is served but cannot be listed and watched (verbs: {})",
                        self.verbs(key).join(", ")
                    ),
                };
            }
            return ResourceAvailability::Served {
                resource: known.api_resource(),
                scope: if known.namespaced {
                    Scope::Namespaced
                } else {
                    Scope::Cluster
                },
            };
        }
        let reason = match self
            .unavailable
            .iter()
            .find(|u| u.group == key.group && u.version == key.version)
        {
            Some(u) => format!(
                "{key} is not served: API group version {} could not be discovered: {}",
                u.group_version(),
                u.reason
            ),
            None => format!("{key} is not served by the API server (not in discovery)"),
        };
        ResourceAvailability::NotServed { reason }
    }

    /// Every served version of `plural` in `group`, the preferred one
    /// first, then by Kubernetes version priority (`v2`, `v1`, `v1beta1`,
    /// ...).
    #[must_use]
    pub fn versions_of(&self, group: &str, plural: &str) -> Vec<&KnownResource> {
        let mut versions: Vec<&KnownResource> = self
            .resources
            .iter()
            .filter(|r| r.group == group && r.plural == plural)
            .collect();
        versions.sort_by_key(|r| {
            std::cmp::Reverse((
                r.preferred_version,
                kube_core::Version::parse(&r.version).priority(),
            ))
        });
        versions
    }

    /// Whether the resource `name` designates is served now, and if not,
    /// why: the answer of [`ResourceName::resolve`] on this snapshot (so a
    /// name without a version designates the preferred one), then
    /// [`availability`](Self::availability) of what it found. The reason of
    /// a name that matches nothing offers the names it resembles.
    #[must_use]
    pub fn availability_of_name(&self, name: &ResourceName) -> ResourceAvailability {
        if !self.is_loaded() {
            return ResourceAvailability::NotServed {
                reason: format!("{name}: discovery has not run yet"),
            };
        }
        let reason = match name.resolve(&self.resources) {
            Ok(known) => return self.availability(&known.key()),
            Err(VocabularyError::NotFound { suggestions, .. }) => {
                let shown: Vec<String> = resembling_in_group(name, suggestions)
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                if shown.is_empty() {
                    format!("{name} is not served by the API server (not in discovery)")
                } else {
                    format!(
                        "{name} is not served by the API server (not in discovery; did you mean {}?)",
                        shown.join(" or ")
                    )
                }
            }
            Err(other) => other.to_string(),
        };
        ResourceAvailability::NotServed {
            reason: format!(
                "{reason}{}",
                crate::factory::error::unavailable_note(&self.unavailable_for(name))
            ),
        }
    }

    /// The served resources `name` resembles when it designates none (what
    /// [`availability_of_name`](Self::availability_of_name) offers as "did
    /// you mean"): those of the group it names if any resemble it, else any.
    /// Empty when it designates a resource or resembles none.
    #[must_use]
    pub fn resembling(&self, name: &ResourceName) -> Vec<ResourceKey> {
        match name.resolve(&self.resources) {
            Err(VocabularyError::NotFound { suggestions, .. }) => {
                resembling_in_group(name, suggestions)
            }
            _ => Vec::new(),
        }
    }

    /// What a channel that follows `name` says next, given what it said
    /// last: the version it follows while that version is served, so that
    /// an informer never sees the version change under a running watch; once
    /// that version is gone, not served (with the version the name now
    /// designates, if any, which the channel takes up at the next refresh:
    /// the informer empties its cache and lists that version). The flag
    /// says that such a move is due.
    pub(super) fn follow_name(
        &self,
        name: &ResourceName,
        last: &ResourceAvailability,
    ) -> (ResourceAvailability, bool) {
        let ResourceAvailability::Served { resource, .. } = last else {
            return (self.availability_of_name(name), false);
        };
        let followed = ResourceKey::from(resource);
        let now = self.availability(&followed);
        if now.is_served() {
            return (now, false);
        }
        match self.availability_of_name(name) {
            ResourceAvailability::Served { resource, .. } => (
                ResourceAvailability::NotServed {
                    reason: format!(
                        "{followed} is no longer served; {name} now designates {}, followed from the next discovery refresh",
                        ResourceKey::from(&resource)
                    ),
                },
                true,
            ),
            not_served => (not_served, false),
        }
    }

    /// The unavailable group versions a name could refer to.
    pub(super) fn unavailable_for(&self, name: &ResourceName) -> Vec<UnavailableGroupVersion> {
        self.unavailable
            .iter()
            .filter(|u| {
                name.candidates()
                    .iter()
                    .any(|c| c.admits(&u.group, &u.version))
            })
            .cloned()
            .collect()
    }
}

/// Of the `suggestions` for `name`, those of the group it names, if any;
/// else all of them.
fn resembling_in_group(name: &ResourceName, suggestions: Vec<ResourceKey>) -> Vec<ResourceKey> {
    let group = name.candidates().first().and_then(|c| c.group.clone());
    let in_group: Vec<ResourceKey> = suggestions
        .iter()
        .filter(|k| Some(&k.group) == group.as_ref())
        .cloned()
        .collect();
    if in_group.is_empty() {
        suggestions
    } else {
        in_group
    }
}
