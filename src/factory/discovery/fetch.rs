//! Reading the server's discovery documents: aggregated first, per group
//! version as the fallback.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList, APIVersions};
use kube_client::Client;
use kube_core::discovery::v2::APIGroupDiscoveryList;

use super::{DiscoveryConfig, DiscoverySnapshot, UnavailableGroupVersion};
use crate::factory::FactoryError;
use crate::vocabulary::error_chain;
use crate::vocabulary::resource::KnownResource;

/// One discovery pass.
pub(super) async fn fetch(
    client: &Client,
    config: &DiscoveryConfig,
) -> Result<DiscoverySnapshot, FactoryError> {
    if config.aggregated {
        match fetch_aggregated(client).await {
            Ok(Some(snapshot)) => return Ok(snapshot),
            Ok(None) => {
                tracing::debug!(
                    "the server does not offer aggregated discovery; reading each group version"
                );
            }
            Err(err) => {
                tracing::debug!(error = %error_chain(&err), "aggregated discovery failed; reading each group version");
            }
        }
    }
    fetch_per_group(client, config.concurrency.max(1), config.group_timeout).await
}

fn request_error(path: &str) -> impl FnOnce(kube_client::Error) -> FactoryError + '_ {
    move |source| FactoryError::Discovery {
        path: path.to_owned(),
        source,
    }
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2`); `None` when the server
/// answered with the plain documents instead (which parse as an empty list:
/// the aggregated `/api` always holds the core group).
pub(super) async fn fetch_aggregated(
    client: &Client,
) -> Result<Option<DiscoverySnapshot>, FactoryError> {
    let mut core = client
        .list_core_api_versions_aggregated()
        .await
        .map_err(request_error("/api"))?;
    if core.items.is_empty() {
        return Ok(None);
    }
    let groups = client
        .list_api_groups_aggregated()
        .await
        .map_err(request_error("/apis"))?;
    core.items.extend(groups.items);
    Ok(Some(DiscoverySnapshot::from_aggregated(core, None)))
}

pub(super) fn add_aggregated(snapshot: &mut DiscoverySnapshot, list: APIGroupDiscoveryList) {
    for group in list.items {
        let group_name = group.metadata.and_then(|m| m.name).unwrap_or_default();
        for (position, version) in group.versions.into_iter().enumerate() {
            let version_name = version.version.unwrap_or_default();
            if version.freshness.as_deref() == Some("Stale") {
                snapshot.unavailable.push(UnavailableGroupVersion {
                    group: group_name.clone(),
                    version: version_name,
                    reason: "its API server did not answer discovery (freshness Stale)".into(),
                });
                continue;
            }
            for r in version.resources {
                let Some(plural) = r.resource.filter(|p| !p.is_empty() && !p.contains('/')) else {
                    continue;
                };
                let known = KnownResource {
                    group: group_name.clone(),
                    version: version_name.clone(),
                    plural,
                    singular: r.singular_resource.unwrap_or_default(),
                    kind: r.response_kind.and_then(|k| k.kind).unwrap_or_default(),
                    short_names: r.short_names,
                    namespaced: r.scope.as_deref() == Some("Namespaced"),
                    // Versions come in order of preference.
                    preferred_version: position == 0,
                };
                snapshot.add(known, r.categories, r.verbs);
            }
        }
    }
}

/// The per-group-version documents: `/api`, `/apis`, then each
/// `/api/<v>` and `/apis/<g>/<v>`.
pub(super) async fn fetch_per_group(
    client: &Client,
    concurrency: usize,
    timeout: Duration,
) -> Result<DiscoverySnapshot, FactoryError> {
    let core = client
        .list_core_api_versions()
        .await
        .map_err(request_error("/api"))?;
    let groups = client
        .list_api_groups()
        .await
        .map_err(request_error("/apis"))?;
    let results: Vec<_> = futures::stream::iter(group_versions(&core, &groups).into_iter().map(
        |gv| async move {
            let list = fetch_group_version(client, &gv, timeout).await;
            (gv, list)
        },
    ))
    .buffered(concurrency)
    .collect()
    .await;
    let mut snapshot = DiscoverySnapshot::default();
    for (gv, list) in results {
        match list {
            Ok(list) => add_group_version(&mut snapshot, &gv, list),
            Err(reason) => snapshot.unavailable.push(UnavailableGroupVersion {
                group: gv.group,
                version: gv.version,
                reason,
            }),
        }
    }
    Ok(snapshot)
}

/// A group version the server lists in `/api` or `/apis`.
struct GroupVersion {
    /// Empty for the core group.
    group: String,
    version: String,
    /// The group's preferred version.
    preferred: bool,
}

/// Every group version of `/api` (the first preferred) and `/apis`.
fn group_versions(core: &APIVersions, groups: &APIGroupList) -> Vec<GroupVersion> {
    let core = core.versions.iter().enumerate().map(|(i, v)| GroupVersion {
        group: String::new(),
        version: v.clone(),
        preferred: i == 0,
    });
    let groups = groups.groups.iter().flat_map(|g| {
        let preferred = g.preferred_version.as_ref().map(|p| p.version.as_str());
        g.versions.iter().map(move |v| GroupVersion {
            group: g.name.clone(),
            version: v.version.clone(),
            preferred: preferred == Some(v.version.as_str()),
        })
    });
    core.chain(groups).collect()
}

/// The resources of one group version, or why there are none.
async fn fetch_group_version(
    client: &Client,
    gv: &GroupVersion,
    timeout: Duration,
) -> Result<APIResourceList, String> {
    let request = async {
        if gv.group.is_empty() {
            client.list_core_api_resources(&gv.version).await
        } else {
            client
                .list_api_group_resources(&format!("{}/{}", gv.group, gv.version))
                .await
        }
    };
    match tokio::time::timeout(timeout, request).await {
        Ok(Ok(list)) => Ok(list),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!(
            "no answer within {timeout:?} (an aggregated API server that is down answers 503, which the client retries)"
        )),
    }
}

/// Adds the resources of one group version's document (not its
/// subresources).
fn add_group_version(snapshot: &mut DiscoverySnapshot, gv: &GroupVersion, list: APIResourceList) {
    for r in list.resources {
        if r.name.is_empty() || r.name.contains('/') {
            continue;
        }
        let known = KnownResource {
            group: gv.group.clone(),
            version: gv.version.clone(),
            plural: r.name,
            singular: r.singular_name,
            kind: r.kind,
            short_names: r.short_names.unwrap_or_default(),
            namespaced: r.namespaced,
            preferred_version: gv.preferred,
        };
        snapshot.add(known, r.categories.unwrap_or_default(), r.verbs);
    }
}

impl DiscoverySnapshot {
    /// Adds a resource, with its categories (if any) and verbs.
    fn add(&mut self, known: KnownResource, categories: Vec<String>, verbs: Vec<String>) {
        if !categories.is_empty() {
            self.categories.insert(known.key(), categories);
        }
        self.verbs.insert(known.key(), verbs);
        self.resources.push(known);
    }
}
