//! Following CRDs and APIServices as they come and go.

use std::collections::HashSet;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};

use kube_core::{ApiResource, DynamicObject, GroupVersionKind};

use super::DiscoverySnapshot;
use crate::vocabulary::resource::ResourceKey;

/// The next event of a stream, or never once it ended. True for an event.
pub(super) async fn next_or_pending(stream: &mut Option<crate::informer::EventStream>) -> bool {
    let Some(s) = stream else {
        return futures::future::pending().await;
    };
    match s.next().await {
        Some(_) => true,
        None => {
            *stream = None;
            futures::future::pending().await
        }
    }
}

/// Takes every event queued now; true if there was one.
pub(super) fn drain(stream: &mut Option<crate::informer::EventStream>) -> bool {
    let Some(s) = stream else { return false };
    std::iter::from_fn(|| s.next().now_or_never().flatten()).count() > 0
}

/// What the CRDs say discovery should hold.
#[derive(Default)]
pub(super) struct CrdExpectation {
    /// Served versions of established CRDs.
    pub(super) served: HashSet<ResourceKey>,
    /// Versions of CRDs that are not established, or not served.
    pub(super) not_served: HashSet<ResourceKey>,
    /// Versions of CRDs being deleted: either way is fine.
    pub(super) terminating: HashSet<ResourceKey>,
}

impl CrdExpectation {
    pub(super) fn from_store(crds: &[Arc<DynamicObject>]) -> Self {
        let mut this = CrdExpectation::default();
        for crd in crds {
            let Some((group, plural)) = group_and_plural(crd) else {
                continue;
            };
            let spec = &crd.data["spec"];
            let established = crd.data["status"]["conditions"]
                .as_array()
                .is_some_and(|conds| {
                    conds
                        .iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                });
            let terminating = crd.metadata.deletion_timestamp.is_some();
            for version in spec["versions"].as_array().into_iter().flatten() {
                let Some(name) = version["name"].as_str() else {
                    continue;
                };
                let key = ResourceKey::new(group, name, plural);
                if terminating {
                    this.terminating.insert(key);
                } else if established && version["served"].as_bool() == Some(true) {
                    this.served.insert(key);
                } else {
                    this.not_served.insert(key);
                }
            }
        }
        this
    }

    /// A description of the first disagreement with `snapshot`, if any.
    /// `seen` holds every key any CRD ever had: those of CRDs now gone must
    /// have left discovery.
    pub(super) fn mismatch(
        &self,
        snapshot: &DiscoverySnapshot,
        seen: &HashSet<ResourceKey>,
    ) -> Option<String> {
        if let Some(missing) = self.served.iter().find(|k| snapshot.get(k).is_none()) {
            return Some(format!("{missing} is established but not in discovery yet"));
        }
        seen.iter()
            .filter(|k| !self.served.contains(*k) && !self.terminating.contains(*k))
            .find(|k| snapshot.get(k).is_some())
            .map(|stale| {
                format!("{stale} is still in discovery although its CRD no longer serves it")
            })
    }
}

/// Drops what discovery does not need from a CRD: schemas and managed fields
/// are most of its size.
pub(super) fn slim_crd(mut crd: DynamicObject) -> DynamicObject {
    crd.metadata.managed_fields = None;
    if let Some(versions) = crd.data["spec"]["versions"].as_array_mut() {
        for v in versions {
            if let Some(v) = v.as_object_mut() {
                v.remove("schema");
                v.remove("additionalPrinterColumns");
            }
        }
    }
    crd
}

pub(super) fn crd_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    ApiResource::from_gvk_with_plural(&gvk, "customresourcedefinitions")
}

pub(super) fn api_service_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService");
    ApiResource::from_gvk_with_plural(&gvk, "apiservices")
}

/// `(group, plural)` of every resource the CRDs define.
pub(super) fn custom_resources(crds: &[Arc<DynamicObject>]) -> HashSet<(String, String)> {
    crds.iter()
        .filter_map(|crd| group_and_plural(crd))
        .map(|(group, plural)| (group.to_string(), plural.to_string()))
        .collect()
}

/// The group and plural of the resource a CRD defines.
fn group_and_plural(crd: &DynamicObject) -> Option<(&str, &str)> {
    let spec = &crd.data["spec"];
    Some((spec["group"].as_str()?, spec["names"]["plural"].as_str()?))
}
