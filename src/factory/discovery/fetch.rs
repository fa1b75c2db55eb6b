//! Reading the server's discovery documents: aggregated first, per group
//! version as the fallback.

use std::time::Duration;

use futures::StreamExt;
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
    let core = client
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
    let mut snapshot = DiscoverySnapshot {
        aggregated: true,
        ..DiscoverySnapshot::default()
    };
    add_aggregated(&mut snapshot, core);
    add_aggregated(&mut snapshot, groups);
    Ok(Some(snapshot))
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
                if !r.categories.is_empty() {
                    snapshot.categories.insert(known.key(), r.categories);
                }
                snapshot.verbs.insert(known.key(), r.verbs);
                snapshot.resources.push(known);
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
    // (group, version, preferred)
    let mut targets: Vec<(String, String, bool)> = Vec::new();
    for (i, v) in core.versions.iter().enumerate() {
        targets.push((String::new(), v.clone(), i == 0));
    }
    for g in &groups.groups {
        let preferred = g.preferred_version.as_ref().map(|p| p.version.as_str());
        for v in &g.versions {
            targets.push((
                g.name.clone(),
                v.version.clone(),
                preferred == Some(v.version.as_str()),
            ));
        }
    }
    let results: Vec<_> = futures::stream::iter(targets.into_iter().map(
        |(group, version, preferred)| async move {
            let request = async {
                if group.is_empty() {
                    client.list_core_api_resources(&version).await
                } else {
                    client
                        .list_api_group_resources(&format!("{group}/{version}"))
                        .await
                }
            };
            let list = match tokio::time::timeout(timeout, request).await {
                Ok(Ok(list)) => Ok(list),
                Ok(Err(err)) => Err(err.to_string()),
                Err(_) => Err(format!(
                    "no answer within {timeout:?} (an aggregated API server that is down answers 503, which the client retries)"
                )),
            };
            (group, version, preferred, list)
        },
    ))
    .buffered(concurrency)
    .collect()
    .await;

    let mut snapshot = DiscoverySnapshot::default();
    for (group, version, preferred, list) in results {
        let list = match list {
            Ok(list) => list,
            Err(reason) => {
                snapshot.unavailable.push(UnavailableGroupVersion {
                    group,
                    version,
                    reason,
                });
                continue;
            }
        };
        for r in list.resources {
            if r.name.is_empty() || r.name.contains('/') {
                continue;
            }
            let known = KnownResource {
                group: group.clone(),
                version: version.clone(),
                plural: r.name,
                singular: r.singular_name,
                kind: r.kind,
                short_names: r.short_names.unwrap_or_default(),
                namespaced: r.namespaced,
                preferred_version: preferred,
            };
            if let Some(categories) = r.categories.filter(|c| !c.is_empty()) {
                snapshot.categories.insert(known.key(), categories);
            }
            snapshot.verbs.insert(known.key(), r.verbs);
            snapshot.resources.push(known);
        }
    }
    Ok(snapshot)
}
