//! Watching from a resourceVersion, and what is admitted to the cache:
//! objects that decode, in the shard, transformed.

use super::*;

/// An event's object, as the reflector takes it in.
// Moved once, not stored: boxing the decoded object would cost an
// allocation per event.
#[allow(clippy::large_enum_variant)]
pub(super) enum Incoming {
    /// Built from its JSON in the cache's compact form.
    Built(crate::cache::compact::CompactObject),
    /// Decoded.
    Decoded(DynamicObject),
}

/// How long a watch from a snapshot's resourceVersion must stay open
/// without an item before the snapshot counts as accepted: three times
/// what opening it took (a server that no longer has the resourceVersion
/// says so as it opens the watch), within these bounds.
const SNAPSHOT_GRACE: (std::time::Duration, std::time::Duration) = (
    std::time::Duration::from_millis(50),
    std::time::Duration::from_secs(1),
);

impl Reflector {
    pub(super) fn start_watch(
        &self,
        params: &WatchParams,
        from: &str,
    ) -> futures::future::BoxFuture<
        'static,
        Result<crate::wire::list_watch::WatchStream, ListWatchError>,
    > {
        match &self.active_shard {
            Some(shard) => self.lw.watch_shard(params, from, shard),
            None => self.lw.watch(params, from),
        }
    }

    pub(super) fn watch_params(&self) -> WatchParams {
        let min = self.options.watch.min_watch_timeout.as_secs().max(1);
        let timeout = min + rand::random_range(0..=min);
        WatchParams {
            label_selector: self.options.watch.label_selector.clone(),
            field_selector: self.options.watch.field_selector.clone(),
            timeout: Some(u32::try_from(timeout).unwrap_or(u32::MAX)),
            bookmarks: true,
            send_initial_events: false,
        }
    }

    /// Watches from `from`; updates `last_rv` as events arrive.
    pub(super) async fn watch(
        &mut self,
        from: &str,
        last_rv: &mut String,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> WatchEnd {
        let opening = std::time::Instant::now();
        let mut stream = match self.open_watch(from, cancel).await {
            Ok(stream) => stream,
            Err(end) => return end,
        };
        let mut first = match self
            .accept_snapshot(&mut stream, from, opening, cancel, sink)
            .await
        {
            Ok(first) => first,
            Err(end) => return end,
        };
        // Synced only now: the cache holds a complete list and a live watch
        // follows it (a watch that cannot be opened is a backoff).
        if self.snapshot_pending.is_none() {
            self.set_status(InformerStatus::Synced);
        }
        let reshard = self.ranges_changed();
        tokio::pin!(reshard);
        loop {
            let next = if let Some(item) = first.take() {
                item
            } else {
                tokio::select! {
                    _ = cancel.cancelled() => return WatchEnd::Cancelled,
                    () = &mut reshard => {
                        tracing::info!(resource = %self.key, "shard ranges changed; listing the new ones");
                        return WatchEnd::Reshard;
                    }
                    n = stream.next() => n,
                }
            };
            match self.watch_event(next) {
                Ok(event) => self.apply_event(event, last_rv, sink),
                Err(end) => return end,
            }
            sink(Delta::ResourceVersion(last_rv.clone()));
        }
    }

    /// Opens a watch from `from`; how the watching ends instead when it
    /// cannot be opened.
    async fn open_watch(
        &mut self,
        from: &str,
        cancel: &CancellationToken,
    ) -> Result<crate::wire::list_watch::WatchStream, WatchEnd> {
        ReflectorStats::inc(&self.stats.watch_requests);
        self.metrics.watch_starts.increment(1);
        let params = self.watch_params();
        let stream = tokio::select! {
            _ = cancel.cancelled() => return Err(WatchEnd::Cancelled),
            s = self.start_watch(&params, from) => s,
        };
        stream.map_err(|e| {
            if e.is_gone() {
                tracing::info!(resource = %self.key, error = %e, "watch resourceVersion expired; listing again");
                WatchEnd::Relist
            } else {
                WatchEnd::Failed(self.watch_failed(e))
            }
        })
    }

    /// The event of an item of the watch stream, or how the watch ends:
    /// resumed at the end of the stream, a relist at a 410.
    fn watch_event(
        &mut self,
        next: Option<Result<WatchEvent, ListWatchError>>,
    ) -> Result<WatchEvent, WatchEnd> {
        if !matches!(&next, Some(Err(e)) if e.is_gone()) {
            self.snapshot_unconfirmed = false;
        }
        match next {
            None => Err(WatchEnd::Resume),
            Some(Err(e)) if e.is_gone() => {
                tracing::info!(resource = %self.key, error = %e, "watch expired; listing again");
                if std::mem::take(&mut self.snapshot_unconfirmed) {
                    // Later than the grace: the snapshot was too old after
                    // all, and the relist reconciles it.
                    self.record_snapshot_start(SnapshotStart::Listed {
                        reason: crate::informer::snapshot::SnapshotRefusal::TooOld,
                    });
                }
                Err(WatchEnd::Relist)
            }
            Some(Err(source)) => Err(WatchEnd::Failed(self.watch_failed(source))),
            Some(Ok(event)) => Ok(event),
        }
    }

    /// A snapshot served as the first list ends once the watch from its
    /// resourceVersion is known to be accepted: at its first item, or after
    /// a grace without one (see [`SNAPSHOT_GRACE`]: a server whose history
    /// no longer reaches the resourceVersion says so at once, as a 410 in
    /// the stream). Returns the item read, to handle first.
    async fn accept_snapshot(
        &mut self,
        stream: &mut crate::wire::list_watch::WatchStream,
        from: &str,
        opening: std::time::Instant,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> Result<Option<Option<Result<WatchEvent, ListWatchError>>>, WatchEnd> {
        if self.snapshot_pending.is_none() {
            return Ok(None);
        }
        let first = tokio::select! {
            _ = cancel.cancelled() => return Err(WatchEnd::Cancelled),
            item = tokio::time::timeout(
                (opening.elapsed() * 3).clamp(SNAPSHOT_GRACE.0, SNAPSHOT_GRACE.1),
                stream.next(),
            ) => item.ok(),
        };
        if !matches!(&first, Some(Some(Err(e))) if e.is_gone())
            && let Some(resumed) = self.snapshot_pending.take()
        {
            sink(Delta::ListEnd);
            sink(Delta::ResourceVersion(from.to_owned()));
            self.record_snapshot_start(resumed);
            // No item yet: a 410 may still be the first.
            self.snapshot_unconfirmed = first.is_none();
        }
        Ok(first)
    }

    /// Hands on what one watch event changes, and moves `last_rv` past it.
    fn apply_event(
        &mut self,
        event: WatchEvent,
        last_rv: &mut String,
        sink: &mut (impl FnMut(Delta) + Send),
    ) {
        ReflectorStats::inc(&self.stats.watch_events);
        let received = match &event {
            WatchEvent::Added(_) => Received::Added,
            WatchEvent::Modified(_) => Received::Modified,
            WatchEvent::Deleted(_) => Received::Deleted,
            WatchEvent::Bookmark { .. } => Received::Bookmark,
            WatchEvent::Skipped { .. } => Received::Skipped,
        };
        self.metrics.received(received);
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                let deleted = matches!(received, Received::Deleted);
                match self.take_in(o, deleted) {
                    Ok(Incoming::Built(built)) => {
                        if let Some(rv) = built.resource_version() {
                            rv.clone_into(last_rv);
                        }
                        if self.admissible(built.name(), built.uid(), built.namespace()) {
                            sink(Delta::UpsertBuilt(built));
                        }
                    }
                    Ok(Incoming::Decoded(o)) => {
                        if let Some(rv) = &o.metadata.resource_version {
                            last_rv.clone_from(rv);
                        }
                        if let Some(o) = self.admit(o) {
                            sink(if deleted {
                                Delta::Delete(o)
                            } else {
                                Delta::Upsert(o)
                            });
                        }
                    }
                    Err(object) => self.skip(&object, deleted, last_rv, sink),
                }
            }
            WatchEvent::Skipped { object, deleted } => self.skip(&object, deleted, last_rv, sink),
            WatchEvent::Bookmark {
                resource_version, ..
            } => {
                *last_rv = resource_version;
            }
        }
    }

    /// An object that could not be decoded: counted, logged and moved past
    /// (so that a resumed watch does not meet it again); when `deleted`, its
    /// key leaves the cache all the same.
    fn skip(
        &self,
        object: &UndecodableObject,
        deleted: bool,
        last_rv: &mut String,
        sink: &mut (impl FnMut(Delta) + Send),
    ) {
        if let Some(rv) = &object.resource_version {
            last_rv.clone_from(rv);
        }
        self.note_skipped(object);
        if deleted && let Some(stub) = self.stub(object) {
            sink(Delta::Delete(stub));
        }
    }

    /// An event's object: built straight into the cache's compact form
    /// when the reflector builds from JSON (see
    /// [`build_from_json`](Self::build_from_json)), it is JSON of this
    /// resource and not a delete (whose last state the cache does not
    /// keep); decoded otherwise.
    pub(super) fn take_in(
        &self,
        object: WireObject,
        deleted: bool,
    ) -> Result<Incoming, UndecodableObject> {
        if !deleted
            && let Some(builder) = &self.builder
            && let Some(json) = object.json()
            && let Some(built) = builder.build(json, self.types())
            && built.api_version() == Some(self.resource.api_version.as_str())
            && built.kind() == Some(self.resource.kind.as_str())
        {
            return Ok(Incoming::Built(built));
        }
        object.decode().map(Incoming::Decoded)
    }

    /// A listed object (or one of a streaming list's initial events) as
    /// the cache takes it: built from its JSON when [`take_in`](Self::take_in)
    /// builds it, decoded and [admitted](Self::admit) otherwise; `None` for
    /// one not to cache (counted and logged).
    pub(super) fn take_listed(&self, object: WireObject) -> Option<ListItem> {
        match self.take_in(object, false) {
            Ok(Incoming::Built(built)) => self
                .admissible(built.name(), built.uid(), built.namespace())
                .then_some(ListItem::Built(built)),
            Ok(Incoming::Decoded(object)) => {
                self.admit(object).map(|o| ListItem::Decoded(Arc::new(o)))
            }
            Err(object) => {
                self.note_skipped(&object);
                None
            }
        }
    }

    /// Counts and logs an object that could not be decoded.
    pub(super) fn note_skipped(&self, object: &UndecodableObject) {
        ReflectorStats::inc(&self.stats.skipped_objects);
        self.metrics.skipped.increment(1);
        tracing::warn!(
            resource = %self.key,
            object = %object,
            "skipping an object that cannot be decoded"
        );
    }

    /// The object that stands in for an undecodable deleted one: its
    /// metadata as far as it could be read, so its key leaves the cache.
    pub(super) fn stub(&self, object: &UndecodableObject) -> Option<DynamicObject> {
        object.name.as_ref()?;
        Some(DynamicObject {
            types: Some(self.type_meta()),
            metadata: ObjectMeta {
                name: object.name.clone(),
                namespace: object.namespace.clone(),
                resource_version: object.resource_version.clone(),
                ..ObjectMeta::default()
            },
            data: serde_json::Value::Object(serde_json::Map::new()),
        })
    }

    /// The apiVersion and kind every object of the resource carries.
    /// The apiVersion and kind every object of the resource carries.
    fn types(&self) -> (&str, &str) {
        (&self.resource.api_version, &self.resource.kind)
    }

    fn type_meta(&self) -> TypeMeta {
        TypeMeta {
            api_version: self.resource.api_version.clone(),
            kind: self.resource.kind.clone(),
        }
    }

    /// Whether an object of this resource with this name, uid and
    /// namespace is cached: it has a name and is in the shard. Counts and
    /// logs those that are not.
    fn admissible(&self, name: Option<&str>, uid: Option<&str>, namespace: Option<&str>) -> bool {
        if name.unwrap_or("").is_empty() {
            ReflectorStats::inc(&self.stats.skipped_objects);
            tracing::warn!(resource = %self.key, "skipping an object without a name");
            return false;
        }
        if let Some(shard) = &self.active_shard
            && !shard.matches_parts(uid, namespace)
        {
            ReflectorStats::inc(&self.stats.shard_objects_dropped);
            return false;
        }
        true
    }

    /// Fills in apiVersion and kind when missing (list items carry none) and
    /// skips objects that belong to another resource or have no name.
    pub(super) fn admit(&self, mut obj: DynamicObject) -> Option<DynamicObject> {
        match &obj.types {
            None => obj.types = Some(self.type_meta()),
            Some(t) if t.api_version.is_empty() && t.kind.is_empty() => {
                obj.types = Some(self.type_meta());
            }
            Some(t)
                if t.api_version != self.resource.api_version || t.kind != self.resource.kind =>
            {
                ReflectorStats::inc(&self.stats.skipped_objects);
                tracing::warn!(
                    resource = %self.key,
                    got_api_version = %t.api_version,
                    got_kind = %t.kind,
                    name = obj.metadata.name.as_deref().unwrap_or(""),
                    "skipping an object of another apiVersion/kind"
                );
                return None;
            }
            Some(_) => {}
        }
        let meta = &obj.metadata;
        if !self.admissible(
            meta.name.as_deref(),
            meta.uid.as_deref(),
            meta.namespace.as_deref(),
        ) {
            return None;
        }
        Some(match &self.transform {
            Some(transform) => transform(obj),
            None => obj,
        })
    }
}
