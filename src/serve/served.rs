//! What is served: the resources, each an informer and what discovery
//! says of it, and the discovery documents made from them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
use serde_json::{Value, json};

use crate::cache::Redaction;
use crate::factory::discovery::DiscoverySnapshot;
use crate::factory::{InformerFactory, InformerHandle};
use crate::informer::NotSynced;
use crate::vocabulary::resource::{KnownResource, ResourceKey};

use super::table::Columns;
use super::watch::Feed;

/// One resource served: its informer, what discovery says of it, what of
/// its objects may be shown, and the columns of its tables.
///
/// ```no_run
/// # async fn demo(factory: kube_dynamic_informer::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
/// use kube_dynamic_informer::serve::ServedResource;
///
/// let widgets = factory.for_resource("widgets.example.com").await?;
/// let served = ServedResource::from_factory(widgets, &factory)
///     .expect("discovery knows the resource it resolved");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ServedResource {
    pub(super) informer: InformerHandle,
    pub(super) known: KnownResource,
    pub(super) categories: Vec<String>,
    pub(super) redaction: Redaction,
    pub(super) columns: Columns,
}

impl ServedResource {
    /// `informer`'s resource as `known` describes it (its kind, names,
    /// scope), with the redaction [`Redaction::for_resource`] gives it
    /// (Secrets' data hidden). Its tables have the columns the API server
    /// prints for a common built-in kind, else the API server's default
    /// (`Name`, `Created At`); [`printer_columns`](Self::printer_columns)
    /// gives a CRD's.
    #[must_use]
    pub fn new(informer: InformerHandle, known: KnownResource) -> Self {
        let redaction = Redaction::for_resource(&known.key(), false, false);
        let columns = Columns::of(&known, None);
        ServedResource {
            informer,
            known,
            categories: Vec::new(),
            redaction,
            columns,
        }
    }

    /// `informer`'s resource as `discovery` describes it, its categories
    /// included; `None` when discovery does not serve it (a CRD not
    /// installed yet). A custom resource's tables have the columns of a
    /// CRD without printer columns (`Name`, `Age`) unless
    /// [`printer_columns`](Self::printer_columns) gives them;
    /// [`from_factory`](Self::from_factory) reads them from the CRD.
    #[must_use]
    pub fn from_discovery(informer: InformerHandle, discovery: &DiscoverySnapshot) -> Option<Self> {
        let key = informer.resource();
        let known = discovery.get(&key)?.clone();
        let categories = discovery.categories(&key).to_vec();
        let columns = Columns::of(&known, discovery.is_custom(&known.group, &known.plural));
        Some(ServedResource {
            categories,
            columns,
            ..Self::new(informer, known)
        })
    }

    /// [`from_discovery`](Self::from_discovery) with `factory`'s discovery,
    /// and a custom resource's table columns (the
    /// `additionalPrinterColumns` of the served version) read from its
    /// CustomResourceDefinition through `factory`'s client the first time
    /// a table is asked for. Where the CRD cannot be read (kdi may not get
    /// `customresourcedefinitions`), the tables have `Name` and `Age`.
    #[must_use]
    pub fn from_factory(informer: InformerHandle, factory: &InformerFactory) -> Option<Self> {
        let discovery = factory.discovery().snapshot();
        let served = Self::from_discovery(informer, &discovery)?;
        let custom = discovery.is_custom(&served.known.group, &served.known.plural);
        let columns = Columns::read(factory.client().clone(), &served.known, custom);
        Some(ServedResource { columns, ..served })
    }

    /// Gives the resource's table columns as a CRD's
    /// `additionalPrinterColumns` (evaluated as the API server does; none:
    /// `Name` and `Age`), instead of reading them.
    ///
    /// ```no_run
    /// # fn demo(served: kube_dynamic_informer::serve::ServedResource) {
    /// use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
    ///
    /// let served = served.printer_columns([CustomResourceColumnDefinition {
    ///     name: "Node".into(),
    ///     type_: "string".into(),
    ///     json_path: ".spec.node".into(),
    ///     ..Default::default()
    /// }]);
    /// # }
    /// ```
    #[must_use]
    pub fn printer_columns(
        mut self,
        columns: impl IntoIterator<Item = CustomResourceColumnDefinition>,
    ) -> Self {
        let columns: Vec<CustomResourceColumnDefinition> = columns.into_iter().collect();
        self.columns = Columns::given(&columns);
        self
    }

    /// What of the objects is shown (see [`Redaction`]).
    #[must_use]
    pub fn redaction(mut self, redaction: Redaction) -> Self {
        self.redaction = redaction;
        self
    }

    /// The resource's key.
    #[must_use]
    pub fn key(&self) -> ResourceKey {
        self.known.key()
    }

    /// Its informer.
    #[must_use]
    pub fn informer(&self) -> &InformerHandle {
        &self.informer
    }

    /// Whether the API server refuses its informer (401, 403): what kdi
    /// may not list is absent from what it serves, not empty. It appears
    /// once access is granted and the informer lists.
    pub(super) fn refused(&self) -> bool {
        NotSynced::from_status(&self.informer.status(), Duration::ZERO)
            .is_some_and(|not_synced| not_synced.is_refused())
    }

    /// The kind of its lists (`WidgetList`).
    pub(super) fn list_kind(&self) -> String {
        format!("{}List", self.known.kind)
    }

    /// Its `APIResource` entry in discovery.
    fn api_resource(&self, verbs: &[&str]) -> Value {
        let singular = if self.known.singular.is_empty() {
            self.known.kind.to_lowercase()
        } else {
            self.known.singular.clone()
        };
        let mut entry = json!({
            "name": self.known.plural,
            "singularName": singular,
            "namespaced": self.known.namespaced,
            "kind": self.known.kind,
            "verbs": verbs,
        });
        if !self.known.short_names.is_empty() {
            entry["shortNames"] = json!(self.known.short_names);
        }
        if !self.categories.is_empty() {
            entry["categories"] = json!(self.categories);
        }
        entry
    }
}

/// The resources served, by group, version and plural, each with the
/// history its watches are served from.
#[derive(Default)]
pub(super) struct Served {
    by_key: BTreeMap<(String, String, String), (ServedResource, Arc<Feed>)>,
}

/// The verbs every served resource answers.
pub(super) const VERBS: &[&str] = &["get", "list", "watch"];

impl Served {
    /// Serves `resource`, keeping `history` changes for its watches.
    pub(super) fn insert(&mut self, resource: ServedResource, history: usize) {
        let key = resource.key();
        let feed = Feed::start(&resource, history);
        if let Some((_, replaced)) = self
            .by_key
            .insert((key.group, key.version, key.resource), (resource, feed))
        {
            replaced.stop();
        }
    }

    pub(super) fn remove(&mut self, key: &ResourceKey) -> bool {
        let removed =
            self.by_key
                .remove(&(key.group.clone(), key.version.clone(), key.resource.clone()));
        if let Some((_, feed)) = &removed {
            feed.stop();
        }
        removed.is_some()
    }

    /// The resource and its history, unless it is hidden (see
    /// [`ServedResource::refused`]).
    pub(super) fn get(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&(ServedResource, Arc<Feed>)> {
        self.by_key
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .filter(|(resource, _)| !resource.refused())
    }

    /// The resources shown: all but those whose informer the API server
    /// refuses.
    pub(super) fn all(&self) -> impl Iterator<Item = &ServedResource> {
        self.by_key
            .values()
            .map(|(resource, _)| resource)
            .filter(|resource| !resource.refused())
    }

    /// `/api`: `APIVersions`, listing `v1` when a core resource is served.
    pub(super) fn core_versions(&self, server_address: &str) -> Value {
        let versions: Vec<&str> = if self.all().any(|r| r.known.group.is_empty()) {
            vec!["v1"]
        } else {
            vec![]
        };
        json!({
            "kind": "APIVersions",
            "versions": versions,
            "serverAddressByClientCIDRs": [
                { "clientCIDR": "0.0.0.0/0", "serverAddress": server_address }
            ],
        })
    }

    /// The versions served of each named group, the preferred first.
    fn groups(&self) -> BTreeMap<&str, Vec<&ServedResource>> {
        let mut groups: BTreeMap<&str, Vec<&ServedResource>> = BTreeMap::new();
        for resource in self.all().filter(|r| !r.known.group.is_empty()) {
            groups
                .entry(&resource.known.group)
                .or_default()
                .push(resource);
        }
        groups
    }

    /// The `APIGroup` of `group` as served, if any of it is.
    fn group_document(name: &str, resources: &[&ServedResource]) -> Value {
        let mut versions: Vec<&str> = resources.iter().map(|r| r.known.version.as_str()).collect();
        // The highest priority first, as the API server lists them.
        versions
            .sort_by_key(|v| std::cmp::Reverse(crate::vocabulary::resource::version_priority(v)));
        versions.dedup();
        let preferred = resources
            .iter()
            .find(|r| r.known.preferred_version)
            .map_or(versions[0], |r| r.known.version.as_str());
        let version = |v: &str| json!({ "groupVersion": format!("{name}/{v}"), "version": v });
        json!({
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": name,
            "versions": versions.iter().map(|v| version(v)).collect::<Vec<_>>(),
            "preferredVersion": version(preferred),
        })
    }

    /// `/apis`: `APIGroupList`.
    pub(super) fn group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups()
            .iter()
            .map(|(name, resources)| {
                let mut group = Self::group_document(name, resources);
                if let Some(object) = group.as_object_mut() {
                    object.remove("kind");
                    object.remove("apiVersion");
                }
                group
            })
            .collect();
        json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
    }

    /// `/apis/GROUP`: `APIGroup`, if any of the group is served.
    pub(super) fn group(&self, name: &str) -> Option<Value> {
        self.groups()
            .get(name)
            .map(|resources| Self::group_document(name, resources))
    }

    /// `/api/v1`, `/apis/GROUP/VERSION`: `APIResourceList`, if anything of
    /// the group version is served (`/api/v1` always answers).
    pub(super) fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let resources: Vec<Value> = self
            .all()
            .filter(|r| r.known.group == group && r.known.version == version)
            .map(|r| r.api_resource(VERBS))
            .collect();
        if resources.is_empty() && !(group.is_empty() && version == "v1") {
            return None;
        }
        let group_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        Some(json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": resources,
        }))
    }
}
