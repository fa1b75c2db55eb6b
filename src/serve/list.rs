//! `get` and `list` from a cache: which objects, at which resourceVersion,
//! in which pages (written as [`Representation`] says).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::cache::store::compare_resource_versions;
use crate::cache::{CacheError, CachedObject};
use crate::informer::NotSynced;

use super::ServedResource;
use super::represent::{ListHead, Representation};
use super::request::{Query, Target, VersionMatch};
use super::status::Refusal;

/// How long a list waits for its cache to reach a resourceVersion it asks
/// for, as the API server's watch cache does.
const VERSION_WAIT: Duration = Duration::from_secs(3);

/// How long the objects of a paged list are kept for its next page.
const PAGE_TTL: Duration = Duration::from_secs(120);

/// Paged lists kept at most; the oldest goes first.
const PAGES_KEPT: usize = 64;

/// The objects of paged lists, kept so that every page of one list shows
/// the cache at the same resourceVersion.
#[derive(Default)]
pub(super) struct Pages {
    /// The number of the next list kept.
    next: AtomicU64,
    held: Mutex<VecDeque<(u64, Arc<Snapshot>)>>,
}

/// One paged list's objects, sorted by key.
struct Snapshot {
    resource: String,
    objects: Vec<CachedObject>,
    resource_version: String,
    made: Instant,
}

impl Pages {
    fn keep(&self, snapshot: Snapshot) -> (u64, Arc<Snapshot>) {
        let mut held = self.held.lock();
        held.retain(|(_, s)| s.made.elapsed() < PAGE_TTL);
        while held.len() >= PAGES_KEPT {
            held.pop_front();
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let snapshot = Arc::new(snapshot);
        held.push_back((id, snapshot.clone()));
        (id, snapshot)
    }

    fn find(&self, id: u64) -> Option<Arc<Snapshot>> {
        self.held
            .lock()
            .iter()
            .find(|(held, s)| *held == id && s.made.elapsed() < PAGE_TTL)
            .map(|(_, s)| s.clone())
    }
}

/// A continue token: `kdi.<list>.<offset>`.
fn token(id: u64, offset: usize) -> String {
    format!("kdi.{id}.{offset}")
}

fn parse_token(token: &str) -> Option<(u64, usize)> {
    let rest = token.strip_prefix("kdi.")?;
    let (id, offset) = rest.split_once('.')?;
    Some((id.parse().ok()?, offset.parse().ok()?))
}

/// The message the API server gives for a continue token it no longer
/// honours.
const TOO_OLD: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.";

/// The JSON of one object of `served`, or a 404.
pub(super) fn get(
    served: &ServedResource,
    target: &Target,
    representation: &Representation,
) -> Result<Vec<u8>, Refusal> {
    ready(served)?;
    let name = target.name.as_deref().unwrap_or_default();
    let lister = served.informer.lister();
    let found = match (&target.namespace, served.known.namespaced) {
        (Some(namespace), true) => lister
            .namespace(namespace.clone())
            .map_err(|e| refusal(served, &e))?
            .get(name),
        (None, false) => lister.get(name),
        (Some(_), false) | (None, true) => None,
    };
    let object = found.ok_or_else(|| {
        Refusal::not_found(format!("{} \"{name}\" not found", resource_name(served)))
    })?;
    representation.object(served, &object)
}

/// The JSON of a list of `served`'s objects as `query` selects them.
pub(super) async fn list(
    served: &ServedResource,
    pages: &Pages,
    target: &Target,
    query: &Query,
    representation: &Representation,
) -> Result<Vec<u8>, Refusal> {
    if let Some(token) = &query.continue_token {
        let (id, offset) = parse_token(token)
            .ok_or_else(|| Refusal::bad_request(format!("invalid continue token {token:?}")))?;
        let snapshot = pages
            .find(id)
            .filter(|s| s.resource == served.key().to_string())
            .ok_or_else(|| Refusal::expired(TOO_OLD))?;
        return Ok(page(
            served,
            &snapshot,
            id,
            offset,
            query.limit,
            representation,
        ));
    }
    let resource_version = fresh_enough(served, query).await?;
    let objects = select(served, target, query)?;
    // A list at "0" (any version) is answered whole, as the API server's
    // cache did: the clients that ask for it (informers) take it so.
    let limit = query
        .limit
        .filter(|_| query.resource_version.as_deref() != Some("0"));
    let snapshot = Snapshot {
        resource: served.key().to_string(),
        objects,
        resource_version,
        made: Instant::now(),
    };
    match limit {
        Some(limit) if limit < snapshot.objects.len() => {
            let (id, snapshot) = pages.keep(snapshot);
            Ok(page(served, &snapshot, id, 0, Some(limit), representation))
        }
        _ => {
            let head = ListHead {
                resource_version: &snapshot.resource_version,
                more: None,
            };
            Ok(representation.list(served, &head, &snapshot.objects))
        }
    }
}

/// The page of `snapshot` from `offset`, at most `limit` objects.
fn page(
    served: &ServedResource,
    snapshot: &Snapshot,
    id: u64,
    offset: usize,
    limit: Option<usize>,
    representation: &Representation,
) -> Vec<u8> {
    let offset = offset.min(snapshot.objects.len());
    let end = limit.map_or(snapshot.objects.len(), |l| {
        (offset + l).min(snapshot.objects.len())
    });
    let more =
        (end < snapshot.objects.len()).then(|| (token(id, end), snapshot.objects.len() - end));
    let head = ListHead {
        resource_version: &snapshot.resource_version,
        more,
    };
    representation.list(served, &head, &snapshot.objects[offset..end])
}

/// The objects `query` selects, sorted by key (the API server's order).
fn select(
    served: &ServedResource,
    target: &Target,
    query: &Query,
) -> Result<Vec<CachedObject>, Refusal> {
    let lister = served.informer.lister();
    let mut objects = match (&target.namespace, &query.index) {
        (Some(namespace), index) => {
            let view = lister
                .namespace(namespace.clone())
                .map_err(|e| refusal(served, &e))?;
            match index {
                Some((index, value)) => view.by_index(index, value),
                None => Ok(view.list_all()),
            }
        }
        (None, Some((index, value))) => lister.by_index(index, value),
        (None, None) => Ok(lister.list_all()),
    }
    .map_err(|e| refusal(served, &e))?;
    if let Some(selector) = &query.label_selector {
        objects.retain(|o| selector.matches(&o.labels()));
    }
    if !query.field_selector.is_empty() {
        objects.retain(|o| {
            query
                .field_selector
                .iter()
                .all(|t| t.admits(o.namespace(), o.name()))
        });
    }
    objects.sort_by_cached_key(|o| o.key().unwrap_or_default());
    Ok(objects)
}

/// Refuses a cache that has not synced, saying why (the informer's own
/// words).
pub(super) fn ready(served: &ServedResource) -> Result<(), Refusal> {
    if served.informer.has_synced() {
        return Ok(());
    }
    let status = served.informer.status();
    let why = match NotSynced::from_status(&status, Duration::ZERO) {
        Some(not_synced) => not_synced.to_string(),
        None => status.to_string(),
    };
    Err(Refusal::unavailable(format!(
        "the cache of {} is not synced: {why}",
        resource_name(served)
    )))
}

/// The resourceVersion a list answers at, once the cache is there: the
/// cache's own for `""` and `"0"`; for `NotOlderThan` (or a version
/// without a match) the cache's once it reaches the one asked for, waiting
/// up to [`VERSION_WAIT`]; for `Exact` only the cache's own.
async fn fresh_enough(served: &ServedResource, query: &Query) -> Result<String, Refusal> {
    ready(served)?;
    let informer = served.informer.informer();
    let current = || informer.synced_resource_version().unwrap_or_default();
    let Some(wanted) = query.resource_version.as_deref() else {
        return Ok(current());
    };
    if wanted == "0" {
        if query.version_match == Some(VersionMatch::Exact) {
            return Err(Refusal::bad_request(
                "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        return Ok(current());
    }
    let invalid = |_| Refusal::bad_request(format!("invalid resource version: {wanted:?}"));
    compare_resource_versions(wanted, "0").map_err(invalid)?;
    let behind = |now: &str| compare_resource_versions(now, wanted).map(|o| o.is_lt());
    if behind(&current()).map_err(invalid)? {
        let reached = informer
            .wait_for_resource_version(wanted, VERSION_WAIT)
            .await;
        if reached.is_err() {
            return Err(Refusal::timeout(format!(
                "Too large resource version: {wanted}, current: {}",
                current()
            )));
        }
    }
    let now = current();
    if query.version_match == Some(VersionMatch::Exact) && now != wanted {
        return Err(Refusal::expired(format!(
            "too old resource version: {wanted} ({now}): kdi answers an exact list only at its cache's resourceVersion"
        )));
    }
    Ok(now)
}

/// `plural` or `plural.group`, as the API server names a resource in its
/// messages.
pub(super) fn resource_name(served: &ServedResource) -> String {
    if served.known.group.is_empty() {
        served.known.plural.clone()
    } else {
        format!("{}.{}", served.known.plural, served.known.group)
    }
}

fn refusal(served: &ServedResource, e: &CacheError) -> Refusal {
    match e {
        CacheError::NamespaceNotWatched { .. } => Refusal::forbidden(format!(
            "kdi does not cache {} in this namespace: {e}",
            resource_name(served)
        )),
        // An unknown index, a selector that does not parse.
        _ => Refusal::bad_request(e.to_string()),
    }
}
