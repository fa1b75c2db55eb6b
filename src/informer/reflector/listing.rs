//! Listing: pages with continue tokens (and a full list when a token
//! expires), or a streaming list where the server offers one.

use super::*;

impl Reflector {
    pub(super) fn list_page(
        &self,
        params: &ListParams,
    ) -> futures::future::BoxFuture<
        'static,
        Result<crate::wire::list_watch::ListPage, ListWatchError>,
    > {
        match &self.active_shard {
            Some(shard) => self.lw.list_shard(params, shard),
            None => self.lw.list(params),
        }
    }

    pub(super) fn list_params(&self) -> ListParams {
        ListParams {
            label_selector: self.options.watch.label_selector.clone(),
            field_selector: self.options.watch.field_selector.clone(),
            limit: (self.options.watch.page_size > 0).then_some(self.options.watch.page_size),
            ..ListParams::default()
        }
    }

    /// Reports listing progress: objects listed so far, as syncing the
    /// first time and as relisting a cache that had synced.
    pub(super) fn listing(&self, objects: usize, listed_before: bool) {
        self.set_status(if listed_before {
            InformerStatus::Relisting { listed: objects }
        } else {
            InformerStatus::Syncing { listed: objects }
        });
    }

    /// A complete list, page by page. An expired continue token (410) falls
    /// back to one unpaged list.
    pub(super) async fn paged_list(
        &mut self,
        cancel: &CancellationToken,
        listed_before: bool,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> ListOutcome {
        let mut params = self.list_params();
        let mut listed = 0;
        self.listing(0, listed_before);
        sink(Delta::ListBegin);
        loop {
            ReflectorStats::inc(&self.stats.list_requests);
            self.metrics.list_requests.increment(1);
            let page = tokio::select! {
                _ = cancel.cancelled() => return ListOutcome::Cancelled,
                page = self.list_page(&params) => page,
            };
            let page = match page {
                Ok(page) => page,
                Err(e) if e.is_gone() && params.continue_token.is_some() => {
                    tracing::info!(resource = %self.key, "continue token expired during a paged list; listing again in one request");
                    listed = 0;
                    sink(Delta::ListBegin);
                    params = ListParams {
                        limit: None,
                        continue_token: None,
                        ..params
                    };
                    continue;
                }
                Err(source) => {
                    return ListOutcome::Failed(InformerError::List {
                        resource: self.key.clone(),
                        source: Box::new(source),
                    });
                }
            };
            self.metrics.list_bytes.increment(page.bytes as u64);
            for skipped in &page.skipped {
                self.note_skipped(skipped);
            }
            let dropped_before = self.stats.shard_objects_dropped.load(Ordering::Relaxed);
            let received = page.objects.len();
            let objects: Vec<ListItem> = page
                .objects
                .into_iter()
                .filter_map(|o| self.take_listed(o))
                .collect();
            if self.active_shard.is_some() {
                // The server says so with shardInfo, on built-in resources;
                // v1.37 filters custom resources without saying so. A page
                // with objects of other shards was not filtered; an empty one
                // tells nothing.
                let dropped =
                    self.stats.shard_objects_dropped.load(Ordering::Relaxed) != dropped_before;
                if page.shard_info.is_some() || (received > 0 && !dropped) {
                    self.stats.record_filtering(ShardFiltering::Server);
                } else if dropped {
                    self.stats.record_filtering(ShardFiltering::Client);
                }
            }
            listed += objects.len();
            sink(Delta::ListPage(objects));
            self.listing(listed, listed_before);
            match page.continue_token {
                Some(token) => params.continue_token = Some(token),
                None => return ListOutcome::Listed(page.resource_version, Vec::new()),
            }
        }
    }

    /// Opens the watch of a streaming list; the outcome instead when there
    /// is none: cancelled, refused by the server (then a paged list), or
    /// failed.
    async fn open_streaming_list(
        &mut self,
        cancel: &CancellationToken,
        listed_before: bool,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> Result<crate::wire::list_watch::WatchStream, ListOutcome> {
        self.listing(0, listed_before);
        let mut params = self.watch_params();
        params.send_initial_events = true;
        ReflectorStats::inc(&self.stats.watch_requests);
        self.metrics.watch_starts.increment(1);
        let stream = tokio::select! {
            _ = cancel.cancelled() => return Err(ListOutcome::Cancelled),
            s = self.start_watch(&params, "") => s,
        };
        match stream {
            Ok(s) => Ok(s),
            Err(e) if refuses_streaming(&e) => {
                tracing::info!(resource = %self.key, error = %e, "server refused a streaming list; using list-then-watch");
                self.streaming_unsupported = true;
                Err(self.paged_list(cancel, listed_before, sink).await)
            }
            Err(source) => Err(ListOutcome::Failed(self.watch_failed(source))),
        }
    }

    /// A streaming list ended before its initial events did. A server or
    /// proxy that ignores `sendInitialEvents` never sends their end, and its
    /// watch ends only at its timeout: list in pages from now on, which
    /// works everywhere.
    fn streaming_list_cut(&mut self) -> ListOutcome {
        tracing::info!(resource = %self.key, "a streaming list ended before its initial-events-end bookmark; listing in pages from now on");
        self.streaming_unsupported = true;
        ListOutcome::Failed(InformerError::StreamingListCut {
            resource: self.key.clone(),
        })
    }

    /// A streaming list: a watch with `sendInitialEvents=true` whose initial
    /// events end with a bookmark annotated `k8s.io/initial-events-end`.
    ///
    /// The initial events are handed on in pages of `page_size` objects (500
    /// when unpaged). An object deleted during the initial events after its
    /// page was handed on is handed on as a delete after the list's end.
    pub(super) async fn streaming_list(
        &mut self,
        cancel: &CancellationToken,
        listed_before: bool,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> ListOutcome {
        let mut stream = match self.open_streaming_list(cancel, listed_before, sink).await {
            Ok(stream) => stream,
            Err(outcome) => return outcome,
        };
        let mut initial = InitialEvents {
            page_size: match self.options.watch.page_size {
                0 => 500,
                n => usize::try_from(n).unwrap_or(usize::MAX),
            },
            ..InitialEvents::default()
        };
        sink(Delta::ListBegin);
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return ListOutcome::Cancelled,
                n = stream.next() => n,
            };
            let event = match next {
                None => return self.streaming_list_cut(),
                Some(Err(source)) => return ListOutcome::Failed(self.watch_failed(source)),
                Some(Ok(e)) => e,
            };
            ReflectorStats::inc(&self.stats.watch_events);
            let (object, deleted) = match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    let page = self.take_listed(o).and_then(|o| initial.put(o));
                    if let Some(page) = page {
                        sink(Delta::ListPage(page));
                        self.listing(initial.listed, listed_before);
                    }
                    continue;
                }
                WatchEvent::Deleted(o) => (o.decode(), true),
                WatchEvent::Skipped { object, deleted } => (Err(object), deleted),
                WatchEvent::Bookmark {
                    resource_version,
                    initial_events_end: true,
                } => {
                    if !initial.page.is_empty() {
                        sink(Delta::ListPage(initial.page.into_values().collect()));
                    }
                    let deleted = initial.deleted.into_values().collect();
                    return ListOutcome::Listed(resource_version, deleted);
                }
                WatchEvent::Bookmark { .. } => continue,
            };
            match object {
                Ok(o) => initial.remove(o),
                Err(object) => {
                    self.note_skipped(&object);
                    if deleted && let Some(stub) = self.stub(&object) {
                        initial.remove(stub);
                    }
                }
            }
        }
    }
}

/// The initial events of a streaming list, gathered into pages. Keyed so
/// that a Modified or Deleted during the initial events (not expected, but
/// allowed) leaves the right final set.
#[derive(Default)]
struct InitialEvents {
    page: indexmap::IndexMap<String, ListItem>,
    page_size: usize,
    /// Objects in the pages handed on.
    listed: usize,
    /// Keys of the pages handed on, and deletions of them to hand on.
    handed_on: std::collections::HashSet<String>,
    deleted: indexmap::IndexMap<String, DynamicObject>,
}

impl InitialEvents {
    /// Adds or replaces `object`; the page to hand on once it is full.
    fn put(&mut self, object: ListItem) -> Option<Vec<ListItem>> {
        if let Some(key) = object.key() {
            self.deleted.shift_remove(&key);
            self.page.insert(key, object);
        }
        if self.page.len() < self.page_size {
            return None;
        }
        self.listed += self.page.len();
        self.handed_on.extend(self.page.keys().cloned());
        Some(std::mem::take(&mut self.page).into_values().collect())
    }

    /// An object deleted during the initial events: out of the page, and
    /// deleted after the list's end if its page was handed on already.
    fn remove(&mut self, object: DynamicObject) {
        if let Some(key) = object_key(&object) {
            self.page.shift_remove(&key);
            if self.handed_on.contains(&key) {
                self.deleted.insert(key, object);
            }
        }
    }
}
