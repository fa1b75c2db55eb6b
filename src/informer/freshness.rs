//! Reading one's own writes through the cache: waiting until the cache
//! reflects a resourceVersion.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::time::Duration;

use kube_core::{ApiResource, DynamicObject, Resource};

use super::SharedInformer;
use crate::cache::CacheError;
use crate::cache::store::{SyncPoint, compare_resource_versions};
use crate::informer::InformerError;
use crate::informer::status::InformerStatus;

/// An object a write returned, as the freshness waits
/// ([`SharedInformer::wait_for_object`],
/// [`InformerFactory::wait_for_object`](crate::factory::InformerFactory::wait_for_object))
/// read it: its apiVersion and kind, namespace and resourceVersion.
///
/// Implemented for [`DynamicObject`] and for every typed object whose kind
/// is known at compile time (`k8s_openapi` types such as `ConfigMap`, and
/// types derived with kube's `CustomResource`), so the object a typed
/// `Api::create` returns is passed as it is:
///
/// ```no_run
/// # async fn demo(client: kube_client::Client, informer: kube_dynamic_informer::informer::SharedInformer) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_client::api::{Api, PostParams};
///
/// let api: Api<ConfigMap> = Api::namespaced(client, "shop");
/// let mut map = ConfigMap::default();
/// map.metadata.name = Some("prices".into());
/// let created = api.create(&PostParams::default(), &map).await?;
/// informer.wait_for_object(&created, Duration::from_secs(5)).await?;
/// # Ok(()) }
/// ```
pub trait WrittenObject {
    /// The object's `apiVersion` and `kind`, when it says them (a
    /// [`DynamicObject`] may not).
    fn api_version_and_kind(&self) -> Option<(Cow<'_, str>, Cow<'_, str>)>;
    /// `metadata.namespace`.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
}

impl<K> WrittenObject for K
where
    K: Resource,
    K::DynamicType: ObjectTypes<K>,
{
    fn api_version_and_kind(&self) -> Option<(Cow<'_, str>, Cow<'_, str>)> {
        K::DynamicType::of(self)
    }

    fn namespace(&self) -> Option<&str> {
        self.meta().namespace.as_deref()
    }

    fn resource_version(&self) -> Option<&str> {
        self.meta().resource_version.as_deref()
    }
}

/// Where the `apiVersion` and `kind` of an object of type `K` come from,
/// chosen by `K`'s [`Resource::DynamicType`]: from the type itself for typed
/// objects (`()`), from the object's own fields for a [`DynamicObject`]
/// ([`ApiResource`]). What lets [`WrittenObject`] cover both.
pub trait ObjectTypes<K> {
    /// The apiVersion and kind of `object`, when known.
    fn of(object: &K) -> Option<(Cow<'_, str>, Cow<'_, str>)>;
}

impl<K: Resource<DynamicType = ()>> ObjectTypes<K> for () {
    fn of(_: &K) -> Option<(Cow<'_, str>, Cow<'_, str>)> {
        Some((K::api_version(&()), K::kind(&())))
    }
}

impl ObjectTypes<DynamicObject> for ApiResource {
    fn of(object: &DynamicObject) -> Option<(Cow<'_, str>, Cow<'_, str>)> {
        object.types.as_ref().map(|t| {
            (
                Cow::from(t.api_version.as_str()),
                Cow::from(t.kind.as_str()),
            )
        })
    }
}

impl SharedInformer {
    /// The resourceVersion the cache reflects (see
    /// [`Store::sync_point`](crate::cache::store::Store::sync_point)).
    #[must_use]
    pub fn synced_resource_version(&self) -> Option<String> {
        self.shared
            .store
            .resource_version()
            .map(|rv| rv.to_string())
    }

    /// Waits until the cache reflects `resource_version`: the resourceVersion
    /// of a write's response (create, update, patch, delete) of an object of
    /// this resource. Once this returns, a read of the cache shows that
    /// write or a later state, and handlers have been handed its event.
    ///
    /// The cache moves forward with each event and bookmark of its watch, so
    /// a resourceVersion of a write to another resource (or to an object the
    /// informer's selectors leave out) is reached only at the next event or
    /// bookmark (the API server sends one about once a minute on a quiet
    /// watch); [`wait_for_object`](Self::wait_for_object) refuses objects of
    /// other resources.
    ///
    /// ```no_run
    /// # async fn demo(client: kube_client::Client, informer: kube_dynamic_informer::informer::SharedInformer) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use kube_client::api::{Api, PostParams};
    /// use kube_core::{ApiResource, DynamicObject};
    ///
    /// let api: Api<DynamicObject> = Api::namespaced_with(client, "shop", &informer.resource());
    /// let mut widget = DynamicObject::new("w1", &informer.resource()).within("shop");
    /// widget.data = serde_json::json!({ "spec": { "size": 3 } });
    /// let created = api.create(&PostParams::default(), &widget).await?;
    /// informer.wait_for_object(&created, Duration::from_secs(5)).await?;
    /// assert!(informer.store().get("shop/w1").is_some());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`InformerError::WaitTimedOut`] (with where the cache is and the informer's
    /// status), [`InformerError::RelistInProgress`],
    /// [`InformerError::Incomparable`] for a resourceVersion that is not a
    /// number, [`InformerError::Stopped`].
    pub async fn wait_for_resource_version(
        &self,
        resource_version: &str,
        timeout: Duration,
    ) -> Result<(), InformerError> {
        let resource = || self.shared.key.clone();
        let incomparable = |source| InformerError::Incomparable {
            resource: resource(),
            source: Box::new(source),
        };
        // A malformed resourceVersion is refused at once, not after the wait.
        compare_resource_versions(resource_version, "0").map_err(incomparable)?;
        let mut sync = self.shared.store.watch_sync_point();
        let reached = |point: &SyncPoint| -> Result<bool, CacheError> {
            let Some(current) = &point.resource_version else {
                return Ok(false);
            };
            Ok(compare_resource_versions(current, resource_version)? != Ordering::Less)
        };
        let wait = async {
            loop {
                if reached(&sync.borrow_and_update()).map_err(incomparable)? {
                    return Ok(());
                }
                if sync.changed().await.is_err() || matches!(self.status(), InformerStatus::Stopped)
                {
                    return Err(InformerError::Stopped {
                        resource: resource(),
                    });
                }
            }
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(result) => result,
            Err(_) => {
                let point = self.shared.store.sync_point();
                if reached(&point).map_err(incomparable)? {
                    return Ok(());
                }
                let synced_to = point
                    .resource_version
                    .as_deref()
                    .unwrap_or("none")
                    .to_owned();
                if point.relisting {
                    Err(InformerError::RelistInProgress {
                        resource: resource(),
                        wanted: resource_version.to_owned(),
                        synced_to,
                        timeout,
                    })
                } else {
                    Err(InformerError::WaitTimedOut {
                        resource: resource(),
                        wanted: resource_version.to_owned(),
                        synced_to,
                        timeout,
                        status: Box::new(self.status()),
                    })
                }
            }
        }
    }

    /// [`wait_for_resource_version`](Self::wait_for_resource_version) with
    /// the resourceVersion of `object`, an object the server returned from a
    /// write (a [`DynamicObject`] or a typed object, see [`WrittenObject`]);
    /// refuses an object of another resource.
    ///
    /// # Errors
    /// [`InformerError::OtherResource`], [`InformerError::NoResourceVersion`], and
    /// those of `wait_for_resource_version`.
    pub async fn wait_for_object(
        &self,
        object: &impl WrittenObject,
        timeout: Duration,
    ) -> Result<(), InformerError> {
        let resource = self.resource();
        if let Some((api_version, kind)) = object.api_version_and_kind()
            && (api_version != resource.api_version || kind != resource.kind)
        {
            return Err(InformerError::OtherResource {
                resource: self.shared.key.clone(),
                object_api_version: api_version.into_owned(),
                object_kind: kind.into_owned(),
            });
        }
        let Some(rv) = object.resource_version() else {
            return Err(InformerError::NoResourceVersion {
                resource: self.shared.key.clone(),
            });
        };
        self.wait_for_resource_version(rv, timeout).await
    }
}
