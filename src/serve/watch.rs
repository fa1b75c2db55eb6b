//! Watches, served from a bounded history of each served cache's changes.
//!
//! A handler on the informer records every change after the cache's list
//! (adds, updates and deletes, not resyncs) with its resourceVersion. A
//! watch from resourceVersion R gets the recorded changes after R, then
//! each new one as it comes; R older than the history (or a history reset
//! by a relist of the cache) is 410 `Expired`, as from the API server, and
//! the client lists again. A watcher that falls so far behind that the
//! changes it still needs leave the history gets the same 410: memory stays
//! bounded whatever the clients do.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::cache::CachedObject;
use crate::informer::{Event, EventHandler, HandlerOptions, Registration};

use super::ServedResource;
use super::list::resource_name;
use super::represent::{Representation, shown, shown_object, write_object};
use super::request::{Query, Target};
use super::status::Refusal;

/// Changes kept per served resource by default.
pub(super) const HISTORY: usize = 10_000;

/// How often an idle watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(30);

/// Changes taken from the history at a time.
const CHUNK: usize = 100;

/// A watch's events are handed to its connection in chunks of at most
/// about this many bytes, one at a time: a client that reads slowly (a
/// hundred informers syncing at once) holds a few of them in the server, not
/// its whole initial list.
const CHUNK_BYTES: usize = 8 * 1024;

/// The events of a watch being gathered into one chunk, sent before the
/// next event would overflow it (as far as the last one tells), so that a
/// chunk stays in the allocation it was given.
struct Chunk {
    bytes: Vec<u8>,
    /// The size of the event written last.
    last: usize,
}

impl Chunk {
    fn new() -> Self {
        Chunk {
            bytes: Vec::with_capacity(CHUNK_BYTES),
            last: 0,
        }
    }

    /// Whether another event like the last one would not fit.
    fn is_full(&self) -> bool {
        self.bytes.len() + self.last > CHUNK_BYTES
    }

    fn take(&mut self) -> Vec<u8> {
        std::mem::replace(&mut self.bytes, Vec::with_capacity(CHUNK_BYTES))
    }
}

/// One recorded change.
#[derive(Clone)]
struct Change {
    resource_version: u64,
    kind: &'static str,
    object: Recorded,
}

/// A changed object as kept: the cache's own handle when it holds this very
/// state (sharing its memory), else its JSON with what watches select by.
#[derive(Clone)]
enum Recorded {
    Cached(CachedObject),
    Json(Arc<Written>),
}

/// A state the cache no longer holds (a deleted object, or one changed
/// since): its JSON as served, and its namespace, name and labels.
struct Written {
    json: Bytes,
    namespace: Option<String>,
    name: Option<String>,
    labels: std::collections::BTreeMap<String, String>,
}

/// The history of one served resource.
pub(super) struct History {
    inner: Mutex<Inner>,
    /// Woken at each change recorded and at each reset.
    changed: Notify,
    capacity: usize,
    /// The cache's objects that watches starting now send as their initial
    /// events, shared by every watch that starts while the cache stays as
    /// it was (a hundred clients syncing at once hold one list, not a
    /// hundred).
    initial: Mutex<Option<Initial>>,
}

/// A list of the cache's objects, and the cache's state it shows.
struct Initial {
    resource_version: Option<Arc<str>>,
    lists: u64,
    objects: Weak<Vec<CachedObject>>,
}

struct Inner {
    /// Every change after this resourceVersion is recorded; `None` until
    /// the recording handler has had the cache's list (and after a reset).
    floor: Option<u64>,
    /// The reflector's list count when `floor` was set: a later list (a
    /// relist) resets the history.
    lists: u64,
    changes: VecDeque<Change>,
    /// The sequence number of `changes[0]`.
    first: u64,
    /// Bumped by each reset: watches of an older generation end with 410.
    generation: u64,
}

impl History {
    fn new(capacity: usize) -> Arc<Self> {
        Arc::new(History {
            inner: Mutex::new(Inner {
                floor: None,
                lists: 0,
                changes: VecDeque::new(),
                first: 0,
                generation: 0,
            }),
            changed: Notify::new(),
            capacity,
            initial: Mutex::new(None),
        })
    }

    /// The objects of `resource`'s cache, as a watch starting now sends
    /// them: the list another watch holds when the cache has not changed
    /// since it was taken, else a new one.
    fn initial_objects(&self, resource: &ServedResource) -> Arc<Vec<CachedObject>> {
        let informer = resource.informer.informer();
        let store = informer.store();
        let mut initial = self.initial.lock();
        let resource_version = store.resource_version();
        let lists = informer.stats().lists.load(AtomicOrdering::Relaxed);
        if let Some(held) = initial.as_ref()
            && held.resource_version == resource_version
            && held.lists == lists
            && let Some(objects) = held.objects.upgrade()
        {
            return objects;
        }
        let objects = Arc::new(store.list_all());
        *initial = Some(Initial {
            resource_version,
            lists,
            objects: Arc::downgrade(&objects),
        });
        objects
    }

    /// Records `change`, made after the reflector's `lists`-th list.
    fn record(&self, change: Change, lists: u64) {
        {
            let mut inner = self.inner.lock();
            if inner.floor.is_some() && inner.lists != lists {
                // The cache listed again (after 410 Gone): the changes
                // between were never seen, only the difference of the two
                // lists, which is no history. Watches end; clients list.
                inner.reset();
            }
            if inner
                .floor
                .is_none_or(|floor| change.resource_version <= floor)
            {
                // Before the floor: part of the list the clients get.
                return;
            }
            if inner.changes.len() >= self.capacity
                && let Some(dropped) = inner.changes.pop_front()
            {
                inner.first += 1;
                inner.floor = Some(dropped.resource_version);
            }
            inner.changes.push_back(change);
        }
        self.changed.notify_waiters();
    }
}

impl Inner {
    /// Forgets everything: the history is set up again at the next watch.
    fn reset(&mut self) {
        self.floor = None;
        self.first += self.changes.len() as u64;
        self.changes.clear();
        self.generation += 1;
    }
}

/// The handler that records an informer's changes into a [`History`].
struct Recorder {
    history: Arc<History>,
    resource: ServedResource,
}

impl EventHandler for Recorder {
    fn on_event(&self, event: Event) {
        let (kind, object) = match event {
            Event::Add {
                in_initial_list: true,
                ..
            }
            | Event::Update {
                is_resync: true, ..
            } => return,
            Event::Add { object, .. } => ("ADDED", object),
            Event::Update { new, .. } => ("MODIFIED", new),
            Event::Delete { object, .. } => ("DELETED", object),
        };
        let Some(resource_version) = object.resource_version().and_then(|rv| rv.parse().ok())
        else {
            return;
        };
        let lists = self
            .resource
            .informer
            .informer()
            .stats()
            .lists
            .load(AtomicOrdering::Relaxed);
        let object = self.recorded(kind, object);
        self.history.record(
            Change {
                resource_version,
                kind,
                object,
            },
            lists,
        );
    }
}

impl Recorder {
    /// The cache's handle of an added or updated object (the event's own),
    /// else the object's JSON (redacted as served).
    fn recorded(&self, kind: &str, object: CachedObject) -> Recorded {
        if kind != "DELETED" {
            return Recorded::Cached(object);
        }
        let object = object.object();
        let shown = shown(self.resource.redaction, &*object);
        let metadata = &object.metadata;
        Recorded::Json(Arc::new(Written {
            json: Bytes::from(shown.to_string()),
            namespace: metadata.namespace.clone(),
            name: metadata.name.clone(),
            labels: metadata.labels.clone().unwrap_or_default(),
        }))
    }
}

/// The history of a served resource and the registration feeding it.
pub(super) struct Feed {
    pub(super) history: Arc<History>,
    registration: Mutex<Option<Registration>>,
}

impl Feed {
    /// Starts recording `resource`'s changes.
    pub(super) fn start(resource: &ServedResource, capacity: usize) -> Arc<Feed> {
        let history = History::new(capacity);
        let recorder = Recorder {
            history: history.clone(),
            resource: resource.clone(),
        };
        let registration = resource.informer.informer().add_handler_with(
            recorder,
            // Changes only: no replay of the cache, no resync.
            HandlerOptions::default()
                .name(format!("kdi-serve {}", resource_name(resource)))
                .skip_replay(true)
                .resync(Duration::ZERO),
        );
        Arc::new(Feed {
            history,
            registration: Mutex::new(Some(registration)),
        })
    }

    /// Stops recording; open watches end.
    pub(super) fn stop(&self) {
        if let Some(registration) = self.registration.lock().take() {
            registration.remove();
        }
        self.history.inner.lock().reset();
        self.history.changed.notify_waiters();
    }

    /// Where the history stands for `resource`: its floor and generation,
    /// set once the recording handler has had the list, reset when the
    /// cache has listed again since. `None` while it is not established.
    pub(super) fn establish(&self, resource: &ServedResource) -> Option<(u64, u64)> {
        let informer = resource.informer.informer();
        let lists = informer.stats().lists.load(AtomicOrdering::Relaxed);
        let synced = self
            .registration
            .lock()
            .as_ref()
            .is_some_and(Registration::has_synced);
        let current: Option<u64> = informer
            .synced_resource_version()
            .and_then(|rv| rv.parse().ok());
        let relisting = informer.store().sync_point().relisting;
        let mut inner = self.history.inner.lock();
        if inner.floor.is_some() && inner.lists != lists {
            inner.reset();
            self.history.changed.notify_waiters();
        }
        if inner.floor.is_none() && synced && !relisting {
            // Every change after the cache's resourceVersion now reaches
            // the recorder after this point.
            inner.floor = current;
            inner.lists = lists;
        }
        inner.floor.map(|floor| (floor, inner.generation))
    }
}

/// Starts a watch of `resource` as `query` asks, its events' objects in
/// `representation`; the response body's receiver.
pub(super) fn watch(
    resource: &ServedResource,
    feed: &Arc<Feed>,
    target: &Target,
    query: &Query,
    representation: Representation,
    cancel: &CancellationToken,
) -> Result<mpsc::Receiver<Bytes>, Refusal> {
    super::list::ready(resource)?;
    let Some((floor, generation)) = feed.establish(resource) else {
        return Err(Refusal::unavailable(format!(
            "the watch history of {} is being set up (the cache is relisting or its handler catching up); retry",
            resource_name(resource)
        )));
    };
    let initial = match (query.resource_version.as_deref(), query.send_initial_events) {
        (_, Some(initial)) => initial,
        (None | Some("0"), None) => true,
        (Some(_), None) => false,
    };
    let from = match query.resource_version.as_deref() {
        None | Some("0") => None,
        Some(rv) => Some(
            rv.parse::<u64>()
                .map_err(|_| Refusal::bad_request(format!("invalid resource version: {rv:?}")))?,
        ),
    };
    if let Some(from) = from
        && from < floor
        && !initial
    {
        return Err(Refusal::expired(format!(
            "too old resource version: {from} ({floor})"
        )));
    }
    // One chunk waits while the connection writes the one before.
    let (tx, rx) = mpsc::channel(1);
    let watcher = Watcher {
        resource: resource.clone(),
        history: feed.history.clone(),
        namespace: target.namespace.clone(),
        name: target.name.clone(),
        query: WatchQuery::of(query),
        representation,
        headers: AtomicBool::new(true),
        generation,
        tx,
    };
    let timeout = query.timeout_seconds.map(Duration::from_secs);
    let cancel = cancel.clone();
    tokio::spawn(async move {
        let open = metrics::gauge!("kdi_serve_watches");
        open.increment(1.0);
        let run = watcher.run(initial, from, floor);
        tokio::select! {
            () = run => {}
            () = cancel.cancelled() => {}
            () = sleep_or_forever(timeout) => {}
        }
        open.decrement(1.0);
    });
    Ok(rx)
}

async fn sleep_or_forever(timeout: Option<Duration>) {
    match timeout {
        Some(timeout) => tokio::time::sleep(timeout).await,
        None => std::future::pending().await,
    }
}

/// What of a query a watcher keeps.
struct WatchQuery {
    label_selector: Option<crate::vocabulary::selector::Selector>,
    field_selector: Vec<super::request::FieldTerm>,
    bookmarks: bool,
}

impl WatchQuery {
    fn of(query: &Query) -> Self {
        WatchQuery {
            label_selector: query.label_selector.clone(),
            field_selector: query.field_selector.clone(),
            bookmarks: query.allow_bookmarks,
        }
    }
}

/// One watch: writes events into its channel until the client goes.
struct Watcher {
    resource: ServedResource,
    history: Arc<History>,
    namespace: Option<String>,
    name: Option<String>,
    query: WatchQuery,
    representation: Representation,
    /// Whether the next table still carries its column definitions: only
    /// the first event's does, as from the API server.
    headers: AtomicBool,
    generation: u64,
    tx: mpsc::Sender<Bytes>,
}

impl Watcher {
    async fn run(self, initial: bool, from: Option<u64>, floor: u64) {
        // Where in the history to start, and the resourceVersion after
        // which changes are sent.
        let (mut next, mut after) = {
            let inner = self.history.inner.lock();
            (inner.first, from.unwrap_or(floor))
        };
        if initial {
            match self.initial_events(floor).await {
                Some(current) => after = current.max(after),
                None => return,
            }
            if self.query.bookmarks && !self.bookmark(after, true).await {
                return;
            }
        }
        loop {
            let notified = self.history.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let Some(batch) = self.next_changes(&mut next) else {
                let status = Refusal::expired(
                    "the watch's history is gone (the cache relisted, or the client fell behind); list again",
                )
                .status();
                let line = json!({ "type": "ERROR", "object": status }).to_string() + "\n";
                let _ = self.tx.send(Bytes::from(line)).await;
                return;
            };
            if !batch.is_empty() {
                if !self.send_changes(&batch, &mut after).await {
                    return;
                }
                continue;
            }
            let idle = if self.query.bookmarks {
                BOOKMARK_EVERY
            } else {
                Duration::from_secs(3600)
            };
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep(idle) => {
                    if self.query.bookmarks && !self.bookmark(after, false).await {
                        return;
                    }
                }
                () = self.tx.closed() => return,
            }
        }
    }

    /// The next changes of the history from sequence number `next` (moved
    /// past them); `None` when what this watch needs is gone (a relist
    /// reset the history, or it fell behind).
    fn next_changes(&self, next: &mut u64) -> Option<Vec<Change>> {
        let inner = self.history.inner.lock();
        if inner.generation != self.generation || *next < inner.first {
            return None;
        }
        let skip = usize::try_from(*next - inner.first).unwrap_or(usize::MAX);
        let batch: Vec<Change> = inner
            .changes
            .iter()
            .skip(skip)
            .take(CHUNK)
            .cloned()
            .collect();
        *next += batch.len() as u64;
        Some(batch)
    }

    /// Sends the changes of `batch` after resourceVersion `after` that the
    /// watch selects, moving `after` past them; false once the client has
    /// gone.
    async fn send_changes(&self, batch: &[Change], after: &mut u64) -> bool {
        let mut chunk = Chunk::new();
        for change in batch {
            if change.resource_version <= *after {
                continue;
            }
            if self.selects(&change.object) {
                self.write_event(&mut chunk, change.kind, &change.object);
            }
            *after = change.resource_version;
            if chunk.is_full() && !self.send(chunk.take()).await {
                return false;
            }
        }
        chunk.bytes.is_empty() || self.send(chunk.bytes).await
    }

    /// Sends the cache as it is, as ADDED events; returns the
    /// resourceVersion they show (`None` once the client has gone).
    async fn initial_events(&self, floor: u64) -> Option<u64> {
        let current: u64 = self
            .resource
            .informer
            .informer()
            .synced_resource_version()
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(floor);
        let objects = self.history.initial_objects(&self.resource);
        let mut chunk = Chunk::new();
        for object in objects.iter() {
            if self.selects_cached(object) {
                self.write_event(&mut chunk, "ADDED", &Recorded::Cached(object.clone()));
            }
            if chunk.is_full() && !self.send(chunk.take()).await {
                return None;
            }
        }
        drop(objects);
        if !chunk.bytes.is_empty() && !self.send(chunk.bytes).await {
            return None;
        }
        Some(current)
    }

    /// Whether this event's table carries the column definitions: the
    /// first's only.
    fn take_headers(&self) -> bool {
        self.headers.swap(false, AtomicOrdering::Relaxed)
    }

    async fn send(&self, chunk: Vec<u8>) -> bool {
        self.tx.send(Bytes::from(chunk)).await.is_ok()
    }

    /// A BOOKMARK at `resource_version`; `end_of_initial` marks the end of
    /// the initial events (`k8s.io/initial-events-end`).
    async fn bookmark(&self, resource_version: u64, end_of_initial: bool) -> bool {
        let mut metadata = json!({ "resourceVersion": resource_version.to_string() });
        if end_of_initial {
            metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let object = json!({
            "kind": self.resource.known.kind,
            "apiVersion": self.resource.known.key().api_version(),
            "metadata": metadata,
        });
        let object = self
            .representation
            .bookmark_object(object, self.take_headers());
        let line = json!({ "type": "BOOKMARK", "object": object }).to_string() + "\n";
        self.send(line.into_bytes()).await
    }

    fn selects_cached(&self, object: &CachedObject) -> bool {
        self.selects_parts(object.namespace(), object.name(), &object.labels())
    }

    fn selects(&self, object: &Recorded) -> bool {
        match object {
            Recorded::Cached(object) => self.selects_cached(object),
            Recorded::Json(written) => self.selects_parts(
                written.namespace.as_deref(),
                written.name.as_deref(),
                &written.labels,
            ),
        }
    }

    /// Whether an object of `namespace`, `name` and `labels` is watched.
    fn selects_parts(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        labels: &(impl crate::vocabulary::selector::Labels + ?Sized),
    ) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| namespace == Some(ns))
            && self.name.as_deref().is_none_or(|n| name == Some(n))
            && self
                .query
                .label_selector
                .as_ref()
                .is_none_or(|s| s.matches(labels))
            && self
                .query
                .field_selector
                .iter()
                .all(|t| t.admits(namespace, name))
    }

    fn write_event(&self, chunk: &mut Chunk, kind: &str, object: &Recorded) {
        let out = &mut chunk.bytes;
        let mark = out.len();
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        let written = match (&self.representation, object) {
            (Representation::Objects, Recorded::Cached(object)) => {
                write_object(self.resource.redaction, object, out).is_ok()
            }
            (Representation::Objects, Recorded::Json(written)) => {
                out.extend_from_slice(&written.json);
                true
            }
            (representation, object) => {
                let shown = match object {
                    Recorded::Cached(object) => shown_object(self.resource.redaction, object),
                    Recorded::Json(written) => {
                        serde_json::from_slice(&written.json).unwrap_or_default()
                    }
                };
                let headers = self.take_headers();
                let converted = representation.event_object(&shown, headers);
                converted
                    .map(|value| serde_json::to_writer(&mut *out, &value))
                    .is_some_and(|written| written.is_ok())
            }
        };
        if written {
            out.extend_from_slice(b"}\n");
            chunk.last = out.len() - mark;
        } else {
            out.truncate(mark);
        }
    }
}
