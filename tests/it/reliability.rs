//! Reliability under faults, load and bad input (issue #7): the informer's
//! cache and what its handlers were told never drift from the server.
//!
//! Every test here ends the same way: the writers stop, and the cache and
//! the handlers' view must equal a fresh list from the server, key by key and
//! resourceVersion by resourceVersion (see [`converge`]). [`Tracker`] is the
//! handler that keeps that view and flags any event that contradicts it — a
//! second Add of an object it already has, an Update or Delete of one it
//! never saw, a resourceVersion going backwards.
//!
//! See RELIABILITY.md for what each file covers and how to run it.

mod bad_objects;
mod compaction;
mod connection_cuts;
mod crash;
mod crd_lifecycle;
mod handlers;
mod load;
mod rbac;
mod security;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube_client::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube_dynamic_informer::informer::BackoffConfig;
use kube_dynamic_informer::informer::{Event, SharedInformer};
use kube_dynamic_informer::vocabulary::object_key;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support;

/// `configmaps.v1`.
pub fn configmaps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    }
}

pub use crate::support::pod_templates;

/// A quick, jitter-free backoff so that recovery is not a wait.
pub fn quick_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_millis(200),
        max: Duration::from_secs(1),
        reset_after: Duration::from_secs(120),
        jitter: 0.0,
    }
}

/// The address of the API server a client configuration points at (a
/// loopback IP and port for testenv).
pub fn server_addr(config: &kube_client::Config) -> SocketAddr {
    let authority = config
        .cluster_url
        .authority()
        .expect("cluster URL has a host and port");
    let text = authority.as_str().replace("localhost", "127.0.0.1");
    text.parse()
        .unwrap_or_else(|e| panic!("server address {text}: {e}"))
}

/// The handlers' view: what a handler was told, per key.
#[derive(Debug, Default)]
pub struct View {
    /// key -> resourceVersion of the objects the handler believes exist.
    pub objects: BTreeMap<String, String>,
    /// Adds per key.
    pub adds: HashMap<String, u32>,
    /// Deletes per key, and how many of them were tombstones.
    pub deletes: HashMap<String, (u32, u32)>,
    /// Events that contradict the view.
    pub problems: Vec<String>,
    /// Non-resync events handled.
    pub events: u64,
    /// Updates (not resyncs) handled.
    pub updates: u64,
}

/// A handler that keeps a [`View`] and checks each event against it.
#[derive(Clone, Default)]
pub struct Tracker(pub Arc<Mutex<View>>);

impl Tracker {
    pub fn handler(&self) -> impl Fn(Event) + Send + Sync + 'static {
        let view = self.0.clone();
        move |e: Event| view.lock().unwrap().apply(&e)
    }

    pub fn objects(&self) -> BTreeMap<String, String> {
        self.0.lock().unwrap().objects.clone()
    }

    pub fn problems(&self) -> Vec<String> {
        self.0.lock().unwrap().problems.clone()
    }

    /// Adds of keys that were added more than once.
    pub fn second_adds(&self) -> Vec<String> {
        let v = self.0.lock().unwrap();
        let mut out: Vec<String> = v
            .adds
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(k, n)| format!("{k} added {n} times"))
            .collect();
        out.sort();
        out
    }

    pub fn deletes_of(&self, key: &str) -> (u32, u32) {
        self.0
            .lock()
            .unwrap()
            .deletes
            .get(key)
            .copied()
            .unwrap_or_default()
    }

    pub fn tombstones(&self) -> u32 {
        self.0.lock().unwrap().deletes.values().map(|d| d.1).sum()
    }

    pub fn events(&self) -> u64 {
        self.0.lock().unwrap().events
    }

    pub fn updates(&self) -> u64 {
        self.0.lock().unwrap().updates
    }
}

fn rv_of(o: &DynamicObject) -> String {
    o.metadata.resource_version.clone().unwrap_or_default()
}

/// resourceVersions are opaque to clients, but testenv's come from etcd
/// revisions: numbers that only grow.
fn rv_number(rv: &str) -> Option<u64> {
    rv.parse().ok()
}

impl View {
    fn apply(&mut self, e: &Event) {
        let o = e.object();
        let Some(key) = object_key(&o.object()) else {
            self.problems
                .push(format!("{} of an object without a name", e.kind()));
            return;
        };
        let rv = rv_of(&o.object());
        match e {
            Event::Add { .. } => {
                self.events += 1;
                *self.adds.entry(key.clone()).or_default() += 1;
                if let Some(old) = self.objects.insert(key.clone(), rv) {
                    self.problems.push(format!(
                        "Add of {key}, which the handler already had at {old}"
                    ));
                }
            }
            Event::Update {
                is_resync: true, ..
            } => {
                if self.objects.get(&key) != Some(&rv) {
                    self.problems.push(format!(
                        "resync of {key} at {rv}; the handler had {:?}",
                        self.objects.get(&key)
                    ));
                }
            }
            Event::Update { old, .. } => {
                self.events += 1;
                self.updates += 1;
                match self.objects.insert(key.clone(), rv.clone()) {
                    None => self
                        .problems
                        .push(format!("Update of {key}, which the handler never had")),
                    Some(had) => {
                        if had != old.resource_version().unwrap_or_default() {
                            self.problems.push(format!(
                                "Update of {key}: old state {} but the handler had {had}",
                                old.resource_version().unwrap_or_default()
                            ));
                        }
                        if let (Some(a), Some(b)) = (rv_number(&had), rv_number(&rv))
                            && b <= a
                        {
                            self.problems
                                .push(format!("Update of {key} went from {had} back to {rv}"));
                        }
                    }
                }
            }
            Event::Delete {
                final_state_unknown,
                ..
            } => {
                self.events += 1;
                let d = self.deletes.entry(key.clone()).or_default();
                d.0 += 1;
                if *final_state_unknown {
                    d.1 += 1;
                }
                if self.objects.remove(&key).is_none() {
                    self.problems
                        .push(format!("Delete of {key}, which the handler never had"));
                }
            }
        }
    }
}

/// key -> resourceVersion of everything the server has, from a fresh list.
pub async fn server_state(api: &Api<DynamicObject>) -> Result<BTreeMap<String, String>, String> {
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing: {e}"))?;
    Ok(list
        .items
        .iter()
        .map(|o| (object_key(o).expect("server objects have names"), rv_of(o)))
        .collect())
}

/// key -> resourceVersion of everything in the informer's cache.
pub fn cache_state(informer: &SharedInformer) -> BTreeMap<String, String> {
    informer
        .store()
        .list_all()
        .iter()
        .map(|o| {
            (
                o.key().expect("cached objects have names"),
                o.resource_version().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The first differences between two key -> resourceVersion maps.
pub fn diff(what: &str, got: &BTreeMap<String, String>, want: &BTreeMap<String, String>) -> String {
    let mut out = Vec::new();
    for (k, v) in want {
        match got.get(k) {
            None => out.push(format!("{k} missing (server at {v})")),
            Some(g) if g != v => out.push(format!("{k} at {g}, server at {v}")),
            _ => {}
        }
    }
    for (k, v) in got {
        if !want.contains_key(k) {
            out.push(format!("{k} at {v} is not on the server"));
        }
    }
    let n = out.len();
    out.truncate(8);
    format!(
        "{what}: {} objects, server {}; {n} differences: {}",
        got.len(),
        want.len(),
        out.join("; ")
    )
}

/// Waits until the cache and the tracker's view both equal the server's
/// state, resourceVersions included; returns that state.
pub async fn converge(
    informer: &SharedInformer,
    tracker: &Tracker,
    api: &Api<DynamicObject>,
    timeout: Duration,
) -> BTreeMap<String, String> {
    support::wait_for(
        "the cache and the handlers to equal the server",
        timeout,
        || async {
            let server = server_state(api).await?;
            let cache = cache_state(informer);
            if cache != server {
                return Err(diff("cache", &cache, &server));
            }
            let view = tracker.objects();
            if view != server {
                return Err(diff("handler view", &view, &server));
            }
            Ok(server)
        },
    )
    .await
}

/// Counters of a [`churn`].
#[derive(Debug, Default)]
pub struct ChurnStats {
    pub created: AtomicU64,
    pub updated: AtomicU64,
    pub deleted: AtomicU64,
    /// Requests that failed (server down, object already gone, ...).
    pub errors: AtomicU64,
}

impl ChurnStats {
    pub fn ok(&self) -> u64 {
        self.created.load(Ordering::SeqCst)
            + self.updated.load(Ordering::SeqCst)
            + self.deleted.load(Ordering::SeqCst)
    }
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::SeqCst)
    }
}

impl std::fmt::Display for ChurnStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} created, {} updated, {} deleted, {} failed",
            self.created.load(Ordering::SeqCst),
            self.updated.load(Ordering::SeqCst),
            self.deleted.load(Ordering::SeqCst),
            self.errors.load(Ordering::SeqCst)
        )
    }
}

/// Builds the body of a new object: `(resource, name, round)`.
pub type MakeObject = Arc<dyn Fn(&ApiResource, &str, u64) -> DynamicObject + Send + Sync>;

/// A ConfigMap with `data.n = round` and `pad` bytes of padding.
pub fn config_map_maker(pad: usize) -> MakeObject {
    Arc::new(move |ar, name, n| {
        let mut o = DynamicObject::new(name, ar);
        o.data = json!({ "data": { "n": n.to_string(), "pad": "x".repeat(pad) } });
        o
    })
}

/// A PodTemplate labelled `n = round`.
pub fn pod_template_maker() -> MakeObject {
    Arc::new(|ar, name, n| {
        let mut o = DynamicObject::new(name, ar);
        o.metadata.labels = Some([("n".to_string(), n.to_string())].into());
        o.data = json!({
            "template": { "spec": { "containers": [{ "name": "c", "image": "busybox" }] } }
        });
        o
    })
}

/// Creates, updates and deletes objects named `<prefix>-<n>` until `stop`
/// fires, with `workers` requests in flight. Names are never reused, so each
/// object is created at most once: a second Add is always a bug. Errors are
/// counted and the work goes on (the server may be down).
pub fn churn(
    api: Api<DynamicObject>,
    ar: ApiResource,
    prefix: &str,
    initial: Vec<String>,
    make: MakeObject,
    workers: usize,
    stop: CancellationToken,
) -> (Arc<ChurnStats>, tokio::task::JoinHandle<()>) {
    let stats = Arc::new(ChurnStats::default());
    let live = Arc::new(Mutex::new(initial));
    let next = Arc::new(AtomicU64::new(0));
    let prefix = prefix.to_string();
    let s = stats.clone();
    let task = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..workers {
            let (api, ar, prefix, make) = (api.clone(), ar.clone(), prefix.clone(), make.clone());
            let (stats, live, next, stop) = (s.clone(), live.clone(), next.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                while !stop.is_cancelled() {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    let pick = {
                        let live = live.lock().unwrap();
                        (!live.is_empty()).then(|| live[rand::random_range(0..live.len())].clone())
                    };
                    let dice = rand::random_range(0..10);
                    let result = match pick {
                        Some(name) if dice < 5 => api
                            .patch(
                                &name,
                                &PatchParams::default(),
                                &Patch::Merge(&make(&ar, &name, n)),
                            )
                            .await
                            .map(|_| &stats.updated),
                        Some(name) if dice < 7 => {
                            live.lock().unwrap().retain(|l| *l != name);
                            api.delete(&name, &DeleteParams::default())
                                .await
                                .map(|_| &stats.deleted)
                        }
                        _ => {
                            let name = format!("{prefix}-{n}");
                            let r = api
                                .create(&PostParams::default(), &make(&ar, &name, n))
                                .await
                                .map(|_| &stats.created);
                            if r.is_ok() {
                                live.lock().unwrap().push(name);
                            }
                            r
                        }
                    };
                    match result {
                        Ok(counter) => {
                            counter.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(_) => {
                            stats.errors.fetch_add(1, Ordering::SeqCst);
                            // The server may be down: do not spin.
                            tokio::select! {
                                _ = stop.cancelled() => {}
                                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                            }
                        }
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    (stats, task)
}

/// Waits until `stats` counts at least `ok` successful operations.
pub async fn churn_until(stats: &ChurnStats, ok: u64, timeout: Duration) {
    support::wait_for(&format!("{ok} successful writes"), timeout, || async {
        if stats.ok() >= ok {
            Ok(())
        } else {
            Err(stats.to_string())
        }
    })
    .await
}

/// A directory for a control plane's data, under target/.
pub fn tempdir(prefix: &str) -> std::path::PathBuf {
    let dir = support::controlplane::repo_root()
        .join("target/testenv/tmp")
        .join(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            support::suffix()
        ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Bytes the allocator has handed out and not yet had back, in KiB: what the
/// process holds, without the freed memory the allocator keeps (glibc only;
/// `None` elsewhere).
pub fn heap_in_use_kib() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's statistics.
        let info = unsafe { libc::mallinfo2() };
        Some(((info.uordblks + info.hblkhd) / 1024) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// VmRSS of this process, in KiB.
pub fn rss_kib() -> u64 {
    support::proc_status("self", "VmRSS:")
}
