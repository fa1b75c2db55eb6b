//! [`ApiListWatch`]: lists and watches over the API server.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use kube_client::api::{ListParams, WatchParams};
use kube_client::{Api, Client};
use kube_core::{ApiResource, DynamicObject, TypeMeta};
use parking_lot::Mutex;
use tokio::sync::watch;

use super::wire::{self, ListItems, PageAhead};
use super::{
    Capabilities, ListPage, ListWatch, ListWatchError, WatchEvent, WatchStream, WireObject,
};
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::scope::{Namespaces, ResourceAvailability, Scope};
use crate::vocabulary::setters;
use crate::vocabulary::shard::ShardSelector;

/// The [`ListWatch`] over the API server, for all namespaces, one or
/// several, full objects or metadata only.
///
/// - **Several namespaces** are listed one after the other at the
///   resourceVersion of the first list (`resourceVersionMatch=Exact`), so the
///   combined list is one consistent snapshot, and watched together; each
///   namespace's watch resumes from its own last resourceVersion. It offers
///   no streaming lists ([`Capabilities::streaming_list`] is false): the
///   server would end each namespace's initial events separately.
/// - **Metadata only** lists and watches `PartialObjectMetadata` and turns
///   each into a [`DynamicObject`] with the resource's apiVersion and kind,
///   its metadata, and an empty body.
/// - **Paging**: when a list page has a continue token, the next page is
///   requested before this one is decoded, and answers the next `list` call
///   made with that token (any other call cancels it).
/// - **Following discovery** ([`with_availability`](Self::with_availability)):
///   requests go to whatever version discovery says is served; while nothing
///   is, they fail with [`ListWatchError::NotServed`] (the reflector does not
///   even ask: it waits).
///
/// ```no_run
/// # fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use kube_core::ApiResource;
/// use kube_dynamic_informer::wire::ApiListWatch;
/// use kube_dynamic_informer::informer::InformerOptions;
/// use kube_dynamic_informer::vocabulary::{Namespaces, Scope};
/// use kube_dynamic_informer::informer::SharedInformer;
///
/// let secrets = ApiResource {
///     group: "".into(), version: "v1".into(), api_version: "v1".into(),
///     kind: "Secret".into(), plural: "secrets".into(),
/// };
/// let lw = ApiListWatch::new(client, secrets.clone(), Scope::Namespaced)
///     .namespaces(Namespaces::only(["shop", "blog"]))
///     .metadata_only(true);
/// let informer = SharedInformer::with_list_watch(lw, secrets, InformerOptions::default());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ApiListWatch {
    client: Client,
    availability: watch::Receiver<ResourceAvailability>,
    follows_discovery: bool,
    namespaces: Namespaces,
    /// The namespaces are a default of a whole factory, which a
    /// cluster-scoped resource ignores.
    namespaces_inherited: bool,
    metadata_only: bool,
    /// Decode list pages on a blocking thread (see [`ApiListWatch::decode_lists_apart`]).
    decode_lists_apart: bool,
    /// Hand list items on as JSON (see [`ApiListWatch::lists_as_json`]).
    lists_as_json: bool,
    /// The `shardSelector` of this call's requests.
    shard: Option<Arc<str>>,
    /// With several namespaces: where each namespace's watch is, in
    /// namespace order; set by a complete list, advanced by events.
    pub(super) positions: Arc<Mutex<Option<Vec<String>>>>,
    /// The next list page, requested ahead.
    pub(super) ahead: PageAhead,
}

impl fmt::Debug for ApiListWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiListWatch")
            .field("availability", &*self.availability.borrow())
            .field("namespaces", &self.namespaces)
            .field("metadata_only", &self.metadata_only)
            .finish_non_exhaustive()
    }
}

impl ApiListWatch {
    /// A list/watch of `resource`, taken as always served, in all
    /// namespaces, full objects.
    #[must_use]
    pub fn new(client: Client, resource: ApiResource, scope: Scope) -> Self {
        let (_tx, rx) = watch::channel(ResourceAvailability::Served { resource, scope });
        let mut lw = Self::with_availability(client, rx);
        lw.follows_discovery = false;
        lw
    }

    /// A list/watch of whatever `availability` says is served (as
    /// [`DiscoveryCache::availability`](crate::factory::discovery::DiscoveryCache::availability)
    /// provides); the reflector waits while it is not.
    #[must_use]
    pub fn with_availability(
        client: Client,
        availability: watch::Receiver<ResourceAvailability>,
    ) -> Self {
        Self {
            client,
            availability,
            follows_discovery: true,
            namespaces: Namespaces::All,
            namespaces_inherited: false,
            metadata_only: false,
            decode_lists_apart: false,
            lists_as_json: false,
            shard: None,
            positions: Arc::new(Mutex::new(None)),
            ahead: PageAhead::default(),
        }
    }

    setters! {
        /// Sets the namespaces (see [`Scope::check`] for cluster-scoped
        /// resources: requests fail with [`ListWatchError::ClusterScoped`]).
        namespaces(namespaces: Namespaces) => namespaces;

        /// Says that the namespaces are a default for many resources (a
        /// factory's), which a cluster-scoped resource ignores instead of
        /// failing.
        namespaces_inherited(inherited: bool) => inherited;

        /// Lists and watches metadata only.
        metadata_only(enabled: bool) => enabled;

        /// Decodes list pages on a blocking thread rather than on the runtime's
        /// threads. For a cache that keeps another form of the objects (compact
        /// storage) and frees the decoded ones: their memory then comes from
        /// other allocator arenas than the cache's, which stays packed (about a
        /// quarter less resident memory with glibc's malloc). A cache that keeps
        /// the decoded objects themselves should not: its objects would sit in
        /// arenas that watch events never allocate from again.
        decode_lists_apart(enabled: bool) => enabled;

        /// Hands list items on as the JSON text they are in the response
        /// ([`WireObject::json`]), not decoded, as watch events' objects are:
        /// an informer with [compact storage](crate::cache::Storage::Compact)
        /// and no transform builds its objects straight from that text, and
        /// decodes the others as they come. Ahead of
        /// [`decode_lists_apart`](Self::decode_lists_apart); not with
        /// [`metadata_only`](Self::metadata_only), whose items are decoded to
        /// be turned into objects of the resource.
        lists_as_json(enabled: bool) => enabled;
    }

    /// The resource and one `Api` per namespace (one for all).
    fn target(&self) -> Result<(ApiResource, Vec<Api<DynamicObject>>), ListWatchError> {
        let (resource, scope) = match &*self.availability.borrow() {
            ResourceAvailability::Served { resource, scope } => (resource.clone(), *scope),
            ResourceAvailability::NotServed { reason } => {
                return Err(ListWatchError::NotServed {
                    reason: reason.clone(),
                });
            }
        };
        let namespaces = match scope {
            Scope::Cluster if self.namespaces_inherited => &Namespaces::All,
            _ => &self.namespaces,
        };
        scope.check(ResourceKey::from(&resource), namespaces)?;
        let apis = match namespaces {
            Namespaces::Only(set) => set
                .iter()
                .map(|ns| Api::namespaced_with(self.client.clone(), ns, &resource))
                .collect(),
            Namespaces::All => vec![Api::all_with(self.client.clone(), &resource)],
        };
        Ok((resource, apis))
    }

    pub(super) async fn list_one(
        &self,
        api: &Api<DynamicObject>,
        resource: &ApiResource,
        params: &ListParams,
    ) -> Result<ListPage, ListWatchError> {
        let items = if self.lists_as_json && !self.metadata_only {
            ListItems::Json
        } else if self.decode_lists_apart {
            ListItems::DecodedApart
        } else {
            ListItems::DecodedInPlace
        };
        let mut page = wire::list(
            api,
            params,
            self.metadata_only,
            items,
            self.shard.as_deref(),
            &self.ahead,
        )
        .await?;
        if self.metadata_only {
            let objects = std::mem::take(&mut page.objects);
            for mut object in objects {
                match object.object_mut() {
                    Ok(o) => {
                        from_metadata(o, resource);
                        page.objects.push(object);
                    }
                    Err(undecodable) => page.skipped.push(undecodable),
                }
            }
        }
        Ok(page)
    }

    pub(super) async fn watch_one(
        &self,
        api: &Api<DynamicObject>,
        resource: &ApiResource,
        params: &WatchParams,
        rv: &str,
    ) -> Result<WatchStream, ListWatchError> {
        let stream =
            wire::watch(api, params, rv, self.metadata_only, self.shard.as_deref()).await?;
        if !self.metadata_only {
            return Ok(stream);
        }
        let resource = resource.clone();
        Ok(stream
            .map_ok(move |e| match e {
                WatchEvent::Added(o) => metadata_event(o, &resource, WatchEvent::Added, false),
                WatchEvent::Modified(o) => {
                    metadata_event(o, &resource, WatchEvent::Modified, false)
                }
                WatchEvent::Deleted(o) => metadata_event(o, &resource, WatchEvent::Deleted, true),
                other => other,
            })
            .boxed())
    }
}

/// The event (`kind`, `deleted` for a delete) of a metadata-only object,
/// decoded as an object of `resource`; skipped when it does not decode.
fn metadata_event(
    mut object: WireObject,
    resource: &ApiResource,
    kind: fn(WireObject) -> WatchEvent,
    deleted: bool,
) -> WatchEvent {
    match object.object_mut() {
        Ok(o) => {
            from_metadata(o, resource);
            kind(object)
        }
        Err(object) => WatchEvent::Skipped { object, deleted },
    }
}

/// A metadata-only object (decoded as `meta.k8s.io/v1
/// PartialObjectMetadata`) as an object of `resource`.
pub(super) fn from_metadata(object: &mut DynamicObject, resource: &ApiResource) {
    object.types = Some(TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    object.data = serde_json::Value::Object(serde_json::Map::new());
}

impl ListWatch for ApiListWatch {
    fn list(&self, params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        let this = self.clone();
        let params = params.clone();
        async move {
            let (resource, apis) = this.target()?;
            if let [api] = apis.as_slice() {
                this.list_one(api, &resource, &params).await
            } else {
                this.list_several(apis, resource, params).await
            }
        }
        .boxed()
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        let this = self.clone();
        let params = params.clone();
        let rv = resource_version.to_owned();
        async move {
            let (resource, apis) = this.target()?;
            if let [api] = apis.as_slice() {
                this.watch_one(api, &resource, &params, &rv).await
            } else {
                this.watch_several(apis, resource, params, rv).await
            }
        }
        .boxed()
    }

    fn list_shard(
        &self,
        params: &ListParams,
        shard: &ShardSelector,
    ) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        let mut this = self.clone();
        this.shard = Some(shard.to_string().into());
        this.list(params)
    }

    fn watch_shard(
        &self,
        params: &WatchParams,
        resource_version: &str,
        shard: &ShardSelector,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        let mut this = self.clone();
        this.shard = Some(shard.to_string().into());
        this.watch(params, resource_version)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            streaming_list: !matches!(&self.namespaces, Namespaces::Only(set) if set.len() > 1),
        }
    }

    fn availability(&self) -> Option<watch::Receiver<ResourceAvailability>> {
        self.follows_discovery.then(|| self.availability.clone())
    }

    /// The uid of the `kube-system` namespace, which lives as long as the
    /// cluster.
    fn cluster_identity(&self) -> BoxFuture<'static, Result<String, String>> {
        let api =
            kube_client::Api::<k8s_openapi::api::core::v1::Namespace>::all(self.client.clone());
        Box::pin(async move {
            let ns = api
                .get("kube-system")
                .await
                .map_err(|e| format!("reading the uid of namespace kube-system: {e}"))?;
            ns.metadata
                .uid
                .ok_or_else(|| "namespace kube-system has no uid".to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_objects_keep_the_resource_kind() {
        let resource = ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
        };
        let mut obj = wire::decode_object(
            &serde_json::json!({
                "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                "metadata": { "name": "a", "namespace": "x", "labels": { "k": "v" } }
            })
            .to_string(),
        )
        .unwrap();
        from_metadata(&mut obj, &resource);
        assert_eq!(obj.types.as_ref().unwrap().kind, "ConfigMap");
        assert_eq!(obj.types.as_ref().unwrap().api_version, "v1");
        assert_eq!(obj.metadata.labels.unwrap()["k"], "v");
        assert_eq!(obj.data, serde_json::json!({}));
    }
}
