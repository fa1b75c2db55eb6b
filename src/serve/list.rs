//! `get` and `list` from a cache: which objects, at which resourceVersion,
//! in which pages, written as JSON.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::cache::store::compare_resource_versions;
use crate::cache::{CacheError, CachedObject, Redaction};
use crate::informer::NotSynced;

use super::ServedResource;
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
pub(super) fn get(served: &ServedResource, target: &Target) -> Result<Vec<u8>, Refusal> {
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
    let mut out = Vec::with_capacity(2048);
    write_object(served.redaction, &object, &mut out)?;
    Ok(out)
}

/// The JSON of a list of `served`'s objects as `query` selects them.
pub(super) async fn list(
    served: &ServedResource,
    pages: &Pages,
    target: &Target,
    query: &Query,
) -> Result<Vec<u8>, Refusal> {
    if let Some(token) = &query.continue_token {
        let (id, offset) = parse_token(token)
            .ok_or_else(|| Refusal::bad_request(format!("invalid continue token {token:?}")))?;
        let snapshot = pages
            .find(id)
            .filter(|s| s.resource == served.key().to_string())
            .ok_or_else(|| Refusal::expired(TOO_OLD))?;
        return Ok(page(served, &snapshot, id, offset, query.limit));
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
            Ok(page(served, &snapshot, id, 0, Some(limit)))
        }
        _ => Ok(write_list(served, &snapshot, &snapshot.objects, None)),
    }
}

/// The page of `snapshot` from `offset`, at most `limit` objects.
fn page(
    served: &ServedResource,
    snapshot: &Snapshot,
    id: u64,
    offset: usize,
    limit: Option<usize>,
) -> Vec<u8> {
    let offset = offset.min(snapshot.objects.len());
    let end = limit.map_or(snapshot.objects.len(), |l| {
        (offset + l).min(snapshot.objects.len())
    });
    let more =
        (end < snapshot.objects.len()).then(|| (token(id, end), snapshot.objects.len() - end));
    write_list(served, snapshot, &snapshot.objects[offset..end], more)
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

/// The list's JSON: its kind, resourceVersion, continue token and the
/// number of objects after this page.
fn write_list(
    served: &ServedResource,
    snapshot: &Snapshot,
    objects: &[CachedObject],
    more: Option<(String, usize)>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + objects.len() * 2048);
    let mut metadata = serde_json::json!({ "resourceVersion": snapshot.resource_version });
    if let Some((token, remaining)) = more {
        metadata["continue"] = token.into();
        metadata["remainingItemCount"] = remaining.into();
    }
    let head = serde_json::json!({
        "kind": served.list_kind(),
        "apiVersion": served.known.key().api_version(),
        "metadata": metadata,
    });
    let head = head.to_string();
    // `{"apiVersion":..,"kind":..,"metadata":{..}` then the items.
    out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
    out.extend_from_slice(b",\"items\":[");
    let mut first = true;
    for object in objects {
        let mark = out.len();
        if !first {
            out.push(b',');
        }
        if write_object(served.redaction, object, &mut out).is_ok() {
            first = false;
        } else {
            out.truncate(mark);
        }
    }
    out.extend_from_slice(b"]}");
    out
}

/// Appends `object`'s JSON, redacted as `redaction` says.
pub(super) fn write_object(
    redaction: Redaction,
    object: &CachedObject,
    out: &mut Vec<u8>,
) -> Result<(), Refusal> {
    let failed = |e: serde_json::Error| {
        Refusal::internal(format!("writing {}: {e}", object.key().unwrap_or_default()))
    };
    if redaction == Redaction::None {
        return object.write_json(out).map_err(failed);
    }
    serde_json::to_writer(&mut *out, &shown(redaction, &*object.object())).map_err(failed)
}

/// `object` as `redaction` shows it, in the types of the API: a Secret's
/// `data` holds base64, so each redacted value (`<redacted: 7 bytes>`, as
/// `kdi get` prints it) is sent base64-encoded, and a client that decodes
/// the Secret reads that note.
pub(super) fn shown(redaction: Redaction, object: &impl serde::Serialize) -> serde_json::Value {
    use base64::Engine as _;
    let mut shown = redaction.object(object);
    if redaction == Redaction::SecretData
        && let Some(data) = shown
            .get_mut("data")
            .and_then(serde_json::Value::as_object_mut)
    {
        for value in data.values_mut() {
            if let Some(note) = value.as_str() {
                *value = base64::engine::general_purpose::STANDARD
                    .encode(note)
                    .into();
            }
        }
    }
    shown
}
