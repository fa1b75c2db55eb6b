//! Reading list and watch responses one object at a time.
//!
//! kube-client decodes a whole list page, or a whole watch line, in one go,
//! so a single object it cannot decode fails all of it: a custom resource
//! nested deeper than serde_json's default limit of 128 levels (the API server
//! stores far deeper ones) made every list of its resource fail, forever, and
//! made a watch meet the same event again on every resume. Here a response is
//! split first — a list into its metadata and each item as raw JSON, a watch
//! line into its `type` and raw `object` — and each object is decoded on its
//! own (a watch event's when the informer takes it in: it is handed on as
//! its JSON, a [`WireObject`], which a cache with compact storage reads
//! straight into its own form):
//!
//! - an object up to [`MAX_OBJECT_DEPTH`] levels deep is decoded in full, deep
//!   or not;
//! - an object that cannot be decoded (deeper than that, or malformed) is left
//!   out and reported as an [`UndecodableObject`], named by what can be read
//!   of its envelope (`metadata.name`, `namespace`, `resourceVersion`, read
//!   without any depth limit). In a watch it still moves the resourceVersion
//!   on (as a bookmark), so the watch never meets it again, and a `DELETED`
//!   event for it still deletes its key.
//!
//! Decoding objects here also avoids serde's buffering of `#[serde(flatten)]`
//! fields — `ObjectList` and `DynamicObject` both have them — which would
//! otherwise copy every page into an intermediate tree before building the
//! objects.

use std::fmt;
use std::sync::Arc;

use futures::{AsyncBufReadExt, StreamExt};
use kube_client::api::{ListParams, WatchParams};
use kube_client::{Api, Client};
use kube_core::watch::Bookmark;
use kube_core::{DynamicObject, ObjectMeta, Status, TypeMeta};
use parking_lot::Mutex;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{
    INITIAL_EVENTS_END_ANNOTATION, ListPage, ListWatchError, UndecodableObject, WatchEvent,
    WatchStream, WireObject,
};

/// The deepest object decoded in full, in levels of JSON objects and arrays
/// (`{"spec": {"a": [1]}}` is 3 deep). Deeper objects are reported as
/// [`UndecodableObject`]s instead: indexing, cloning, comparing, serialising
/// and dropping a `serde_json::Value` all recurse once per level (about
/// 1.3 KB of stack a level in an unoptimised build), and this bound keeps
/// that well within a thread's 2 MiB stack. Real objects stay under a few
/// dozen levels.
pub const MAX_OBJECT_DEPTH: usize = 256;

/// The next page of a paged list, requested while the current one is being
/// decoded, so that the server prepares page *k + 1* while the client decodes
/// page *k* instead of both taking turns. It answers the next list call whose
/// request is the same (same URL, selectors and continue token); any other
/// call drops it, which cancels it. Shared by the clones of one list-watch.
#[derive(Clone, Debug, Default)]
pub(super) struct PageAhead(Arc<Mutex<Option<Ahead>>>);

/// A page request in flight, by the URI it asked for.
#[derive(Debug)]
struct Ahead {
    uri: String,
    task: tokio::task::JoinHandle<Result<String, kube_client::Error>>,
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PageAhead {
    /// The page requested ahead for `uri`, if that is the one in flight;
    /// whatever else is in flight is cancelled.
    fn take(&self, uri: &str) -> Option<Ahead> {
        let ahead = self.0.lock().take()?;
        (ahead.uri == uri).then_some(ahead)
    }

    fn put(&self, ahead: Ahead) {
        *self.0.lock() = Some(ahead);
    }
}

fn list_request(
    api: &Api<DynamicObject>,
    params: &ListParams,
    metadata_only: bool,
    shard: Option<&str>,
) -> Result<http::Request<Vec<u8>>, kube_client::Error> {
    let request = kube_core::Request::new(api.resource_url());
    let built = if metadata_only {
        request.list_metadata(params)
    } else {
        request.list(params)
    };
    finish_request(built, "list", shard)
}

/// A list or watch request as built, named `verb` (for kube-client's
/// layers), with `shard` added as `shardSelector` to its query
/// (kube-client's parameters do not have it yet).
fn finish_request(
    built: Result<http::Request<Vec<u8>>, kube_core::request::Error>,
    verb: &'static str,
    shard: Option<&str>,
) -> Result<http::Request<Vec<u8>>, kube_client::Error> {
    let mut req = built.map_err(kube_client::Error::BuildRequest)?;
    req.extensions_mut().insert(verb);
    let Some(selector) = shard else {
        return Ok(req);
    };
    let uri = req.uri().to_string();
    let sep = if uri.contains('?') { '&' } else { '?' };
    let mut with = String::with_capacity(uri.len() + selector.len() * 2 + 16);
    with.push_str(&uri);
    with.push(sep);
    with.push_str("shardSelector=");
    for b in selector.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            with.push(char::from(b));
        } else {
            with.push_str(&format!("%{b:02X}"));
        }
    }
    *req.uri_mut() = with.parse().map_err(|e: http::uri::InvalidUri| {
        kube_client::Error::BuildRequest(kube_core::request::Error::BuildRequest(e.into()))
    })?;
    Ok(req)
}

/// How a list response's items are handed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ListItems {
    /// Decoded on the thread that reads the response.
    DecodedInPlace,
    /// Decoded on a blocking thread (see `ApiListWatch::decode_lists_apart`).
    DecodedApart,
    /// As their JSON text, read by whoever takes them (see
    /// `ApiListWatch::lists_as_json`).
    Json,
}

/// Lists one page (or everything, without a limit) of the resource `api`
/// points at. With `metadata_only`, objects carry metadata only (and the
/// `PartialObjectMetadata` kind the server gives them).
///
/// When the page has a continue token, the next page is requested before
/// this one is decoded, and kept in `ahead` for the call that asks for it.
pub(super) async fn list(
    api: &Api<DynamicObject>,
    params: &ListParams,
    metadata_only: bool,
    items: ListItems,
    shard: Option<&str>,
    ahead: &PageAhead,
) -> Result<ListPage, ListWatchError> {
    let req = list_request(api, params, metadata_only, shard)?;
    let text = match ahead.take(&req.uri().to_string()) {
        Some(mut prefetched) => match (&mut prefetched.task).await {
            Ok(answer) => answer?,
            // The request ahead panicked: ask again.
            Err(_) => client(api).request_text(req).await?,
        },
        None => client(api).request_text(req).await?,
    };
    if let Some(token) = continue_token(&text) {
        let next = ListParams {
            continue_token: Some(token),
            ..params.clone()
        };
        let req = list_request(api, &next, metadata_only, shard)?;
        let uri = req.uri().to_string();
        let client = client(api);
        let task = tokio::spawn(async move { client.request_text(req).await });
        ahead.put(Ahead { uri, task });
        // Let the request ahead go out before this thread is busy decoding;
        // another worker reads its answer meanwhile.
        tokio::task::yield_now().await;
    }
    // Decoded here rather than on a blocking thread when the cache keeps the
    // decoded objects: they are then allocated by the runtime's threads,
    // which decode watch events later and so reuse the memory that replaced
    // objects free. Decoded on the short-lived blocking threads, a list's
    // objects sat in allocator arenas that nothing allocated from again, and
    // every update grew the process by the object it replaced (+466 MiB over
    // 20,000 updates of 50,000 Widgets). A cache that frees them (compact
    // storage) asks for the opposite: see `ApiListWatch::decode_lists_apart`;
    // or, building its objects from the JSON, for no decoding at all.
    let bytes = text.len();
    let read = match items {
        ListItems::DecodedInPlace => decode_list(&text),
        ListItems::DecodedApart => tokio::task::spawn_blocking(move || decode_list(&text))
            .await
            .map_err(|e| ListWatchError::Client(kube_client::Error::Service(Box::new(e))))?,
        ListItems::Json => list_items(text),
    };
    let mut page = read.map_err(|e| ListWatchError::Client(kube_client::Error::SerdeError(e)))?;
    page.bytes = bytes;
    Ok(page)
}

/// `metadata.continue` of a list response, read without decoding its items
/// when the metadata comes first (as the API server writes it). `None` when
/// there is none, or when the response cannot be read that way.
fn continue_token(text: &str) -> Option<String> {
    /// The list's metadata, as far as paging goes.
    #[derive(Deserialize)]
    struct Paging {
        #[serde(default, rename = "continue")]
        continue_: Option<String>,
    }

    /// Reads the top-level object up to `metadata`, then stops.
    struct Head<'a>(&'a mut Option<Option<String>>);

    impl<'de> Visitor<'de> for Head<'_> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "metadata" {
                    let paging: Paging = map.next_value()?;
                    *self.0 = Some(paging.continue_);
                    // Enough read: the rest is the items.
                    return Err(serde::de::Error::custom("list metadata read"));
                }
                map.next_value::<serde::de::IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let mut found = None;
    let _ = serde_json::Deserializer::from_str(text).deserialize_map(Head(&mut found));
    found.flatten().filter(|token| !token.is_empty())
}

/// Starts a watch of the resource `api` points at, from `resource_version`.
pub(super) async fn watch(
    api: &Api<DynamicObject>,
    params: &WatchParams,
    resource_version: &str,
    metadata_only: bool,
    shard: Option<&str>,
) -> Result<WatchStream, ListWatchError> {
    let request = kube_core::Request::new(api.resource_url());
    let built = if metadata_only {
        request.watch_metadata(params, resource_version)
    } else {
        request.watch(params, resource_version)
    };
    let mut req = finish_request(built, "watch", shard)?;
    // The API server compresses a watch one gzip member per event, and the
    // client's decompression reads only the first member.
    req.headers_mut()
        .entry(http::header::ACCEPT_ENCODING)
        .or_insert(http::HeaderValue::from_static("identity"));
    let body = client(api).request_stream(req).await?;
    let lines = body.lines();
    Ok(futures::stream::unfold(lines, |mut lines| async move {
        loop {
            let line = match lines.next().await? {
                Ok(line) => line,
                Err(e) if ends_watch(&e) => {
                    tracing::debug!(error = %e, "watch connection ended");
                    return None;
                }
                Err(e) => {
                    return Some((
                        Err(ListWatchError::Client(kube_client::Error::ReadEvents(e))),
                        lines,
                    ));
                }
            };
            if let Some(event) = decode_watch_line(line) {
                return Some((event, lines));
            }
        }
    })
    .boxed())
}

fn client(api: &Api<DynamicObject>) -> Client {
    api.clone().into_client()
}

/// Whether a read error is the end of the connection rather than a failure:
/// the server or a proxy closed it mid-chunk, or the client timed out. The
/// reflector resumes from the last resourceVersion after either.
fn ends_watch(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::{TimedOut, UnexpectedEof};
    let ended = |kind: std::io::ErrorKind| matches!(kind, UnexpectedEof | TimedOut);
    let first: Option<&(dyn std::error::Error + 'static)> = err.get_ref().map(|e| e as _);
    let mut sources = std::iter::successors(first, |&e| e.source());
    ended(err.kind())
        || sources.any(|e| {
            e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| ended(io.kind()))
                || e.to_string().contains("unexpected EOF during chunk")
        })
}

/// A list's metadata: k8s-openapi's `ListMeta` has `shardInfo` only in
/// the releases that know it, and the library leaves the release to the
/// application.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ListHead {
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    continue_: Option<String>,
    shard_info: Option<ShardInfo>,
}

/// `metadata.shardInfo` of a list the server filtered by shard.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ShardInfo {
    selector: String,
}

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(default)]
    metadata: ListHead,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

/// Decodes a list response (`{"kind": "WidgetList", "metadata": ...,
/// "items": [...]}`) the way [`ApiListWatch`](super::ApiListWatch) does: item
/// by item, leaving out (in [`ListPage::skipped`]) the items that cannot be
/// decoded. For a [`ListWatch`](super::ListWatch) of one's own.
///
/// Fails only when the response as a whole is not a list.
///
/// ```
/// let text = r#"{"kind": "ConfigMapList", "apiVersion": "v1",
///     "metadata": {"resourceVersion": "7"},
///     "items": [{"metadata": {"name": "a", "namespace": "x"}, "data": {"k": "v"}}]}"#;
/// let page = kube_dynamic_informer::wire::decode_list(text)?;
/// let object = page.objects[0].decoded().expect("decoded");
/// assert_eq!(object.data["data"]["k"], "v");
/// assert_eq!(page.resource_version, "7");
/// assert!(page.skipped.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// # Errors
/// The response is not a JSON list.
pub fn decode_list(text: &str) -> Result<ListPage, serde_json::Error> {
    // One pass when every item decodes; item by item when one does not.
    if let Ok(list) = serde_json::from_str::<WholeList>(text) {
        return Ok(page(
            list.metadata,
            list.items
                .unwrap_or_default()
                .into_iter()
                .map(|o| o.0.into())
                .collect(),
            Vec::new(),
        ));
    }
    let list: RawList<'_> = serde_json::from_str(text)?;
    let raw_items = list.items.unwrap_or_default();
    let mut items = Vec::with_capacity(raw_items.len());
    let mut skipped = Vec::new();
    for raw in raw_items {
        match decode_object(raw.get()) {
            Ok(object) => items.push(object.into()),
            Err(reason) => skipped.push(describe(raw.get(), reason)),
        }
    }
    Ok(page(list.metadata, items, skipped))
}

/// A list response with its items left as the JSON text they are in it
/// (each a [`WireObject`] sharing the response's text), for whoever takes
/// them to decode or read.
///
/// Fails only when the response as a whole is not a list.
fn list_items(text: String) -> Result<ListPage, serde_json::Error> {
    let (meta, ranges) = {
        let list: RawList<'_> = serde_json::from_str(&text)?;
        let start = text.as_ptr() as usize;
        let ranges: Vec<std::ops::Range<usize>> = list
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|raw| {
                let at = raw.get().as_ptr() as usize - start;
                at..at + raw.get().len()
            })
            .collect();
        (list.metadata, ranges)
    };
    let text = std::sync::Arc::new(text);
    let objects = ranges
        .into_iter()
        .map(|range| WireObject::within_shared(text.clone(), range))
        .collect();
    Ok(page(meta, objects, Vec::new()))
}

fn page(meta: ListHead, objects: Vec<WireObject>, skipped: Vec<UndecodableObject>) -> ListPage {
    ListPage {
        objects,
        resource_version: meta.resource_version.unwrap_or_default(),
        continue_token: meta.continue_.filter(|c| !c.is_empty()),
        skipped,
        bytes: 0,
        shard_info: meta.shard_info.map(|s| s.selector),
    }
}

/// A list whose items all decode: the common case, read in one pass.
#[derive(Deserialize)]
struct WholeList {
    #[serde(default)]
    metadata: ListHead,
    #[serde(default)]
    items: Option<Vec<Object>>,
}

/// A [`DynamicObject`] decoded by [`ObjectSeed`].
struct Object(DynamicObject);

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ObjectSeed.deserialize(deserializer).map(Object)
    }
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// One watch line as an event; `None` for a line to pass over (empty, or cut
/// short at the end of the connection). An event's object is handed on as
/// the JSON it is in the line (see [`WireObject`]).
fn decode_watch_line(line: String) -> Option<Result<WatchEvent, ListWatchError>> {
    let not_an_event = |e: serde_json::Error| {
        Some(Err(ListWatchError::Client(kube_client::Error::SerdeError(
            e,
        ))))
    };
    if line.trim().is_empty() {
        return None;
    }
    let event: RawEvent<'_> = match serde_json::from_str(&line) {
        Ok(event) => event,
        Err(e) if e.is_eof() => return None,
        Err(e) => {
            // A line that is no event at all may be a Status the server
            // sent instead.
            return match serde_json::from_str::<Status>(&line) {
                Ok(status) if !status.message.is_empty() || status.code != 0 => {
                    Some(Err(super::status_error(status)))
                }
                _ => not_an_event(e),
            };
        }
    };
    let raw = event.object.get();
    let decoded = match event.kind {
        kind @ ("ADDED" | "MODIFIED" | "DELETED") => {
            let start = raw.as_ptr() as usize - line.as_ptr() as usize;
            let kind = match kind {
                "ADDED" => WatchEvent::Added,
                "MODIFIED" => WatchEvent::Modified,
                _ => WatchEvent::Deleted,
            };
            let range = start..start + raw.len();
            let object = match line.get(range.clone()) {
                Some(_) => WireObject::within(line, range),
                // Not expected: the object is borrowed from the line.
                None => WireObject::from_json(raw.to_owned()),
            };
            return Some(Ok(kind(object)));
        }
        "BOOKMARK" => match serde_json::from_str::<Bookmark>(raw) {
            Ok(bookmark) => WatchEvent::Bookmark {
                initial_events_end: bookmark
                    .metadata
                    .annotations
                    .get(INITIAL_EVENTS_END_ANNOTATION)
                    .is_some_and(|v| v == "true"),
                resource_version: bookmark.metadata.resource_version,
            },
            Err(e) => return not_an_event(e),
        },
        "ERROR" => match serde_json::from_str::<Status>(raw) {
            Ok(status) => return Some(Err(super::status_error(status))),
            Err(e) => return not_an_event(e),
        },
        other => {
            return not_an_event(serde::de::Error::custom(format!(
                "unknown watch event type {other:?}"
            )));
        }
    };
    Some(Ok(decoded))
}

/// Decodes one object, in full if it is at most [`MAX_OBJECT_DEPTH`] deep.
pub(crate) fn decode_object(raw: &str) -> Result<DynamicObject, String> {
    let mut de = serde_json::Deserializer::from_str(raw);
    match ObjectSeed
        .deserialize(&mut de)
        .and_then(|object| de.end().map(|()| object))
    {
        Ok(object) => Ok(object),
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
            let depth = json_depth(raw.as_bytes());
            if depth > MAX_OBJECT_DEPTH {
                return Err(format!(
                    "nested {depth} levels deep, more than the {MAX_OBJECT_DEPTH} decoded in full"
                ));
            }
            decode_deep(raw)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Decodes an object deeper than serde_json's default limit, on a thread of
/// its own with room for [`MAX_OBJECT_DEPTH`] levels of recursion (an
/// unoptimised build needs about 2.5 KB a level, more than the caller's
/// stack may have left). Such objects are rare, so the thread costs little.
fn decode_deep(raw: &str) -> Result<DynamicObject, String> {
    const STACK: usize = 16 << 20;
    std::thread::scope(|scope| {
        let decoder = std::thread::Builder::new()
            .name("kdi-decode-deep".into())
            .stack_size(STACK)
            .spawn_scoped(scope, || {
                let mut de = serde_json::Deserializer::from_str(raw);
                de.disable_recursion_limit();
                ObjectSeed
                    .deserialize(&mut de)
                    .and_then(|object| de.end().map(|()| object))
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| format!("could not start a thread to decode a deep object: {e}"))?;
        decoder
            .join()
            .unwrap_or_else(|_| Err("decoding a deep object panicked".into()))
    })
}

/// How deeply JSON objects and arrays nest in `json`, read without
/// recursion. Brackets inside strings do not count.
fn json_depth(json: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// What can be read of an object that cannot be decoded: serde_json skips
/// the other fields without recursing, so any depth is fine.
pub(super) fn describe(raw: &str, reason: String) -> UndecodableObject {
    let Envelope { metadata } = serde_json::from_str(raw).unwrap_or_default();
    UndecodableObject {
        namespace: metadata.namespace,
        name: metadata.name,
        resource_version: metadata.resource_version,
        reason,
    }
}

#[derive(Default, Deserialize)]
struct Envelope {
    #[serde(default)]
    metadata: EnvelopeMeta,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvelopeMeta {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
}

/// Decodes a [`DynamicObject`] field by field: `apiVersion`, `kind` and
/// `metadata` into their types, everything else into `data`.
struct ObjectSeed;

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = DynamicObject;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<DynamicObject, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed {
    type Value = DynamicObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DynamicObject, A::Error> {
        let mut api_version: Option<String> = None;
        let mut kind: Option<String> = None;
        let mut metadata: Option<ObjectMeta> = None;
        let mut data = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => api_version = Some(map.next_value()?),
                "kind" => kind = Some(map.next_value()?),
                "metadata" => metadata = map.next_value()?,
                _ => {
                    let value: serde_json::Value = map.next_value()?;
                    data.insert(key, value);
                }
            }
        }
        let types = match (api_version, kind) {
            (Some(api_version), Some(kind)) => Some(TypeMeta { api_version, kind }),
            (api_version, kind) => {
                // Half a TypeMeta is no TypeMeta; keep what there was.
                if let Some(v) = api_version {
                    data.insert("apiVersion".into(), v.into());
                }
                if let Some(k) = kind {
                    data.insert("kind".into(), k.into());
                }
                None
            }
        };
        Ok(DynamicObject {
            types,
            metadata: metadata.unwrap_or_default(),
            data: serde_json::Value::Object(data),
        })
    }
}

#[cfg(test)]
mod tests;
