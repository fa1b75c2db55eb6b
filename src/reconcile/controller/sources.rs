//! Where a controller's keys come from: the handlers it registers on the
//! informers it watches and owns, the members of resource sets as they
//! come and go, and the periodic requeue of everything; and the registry
//! of those informers, which the workers read objects and listers from.

use std::sync::Arc;
use std::time::Duration;

use kube_client::Client;
use parking_lot::{Mutex, RwLock};
#[cfg(feature = "config")]
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::cache::lister::Lister;
use crate::cache::store::CachedObject;
#[cfg(feature = "config")]
use crate::declarative::{ResourceSet, SetEvent, SetMember};
use crate::factory::InformerHandle;
use crate::informer::{HandlerOptions, Registration};
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::scope::Scope;

use super::super::key::ObjectRef;
use super::super::queue::WorkQueue;
use super::{OwnsOptions, ShutdownHandle};

/// How often a running controller looks after itself: the queue's gauges
/// of unfinished work are refreshed as often as client-go's (500 ms).
const UPKEEP_EVERY: Duration = Duration::from_millis(500);

/// One source a controller was built with.
pub(super) enum Source {
    Watch {
        handle: InformerHandle,
        options: HandlerOptions,
    },
    Owns {
        handle: InformerHandle,
        options: OwnsOptions,
    },
    #[cfg(feature = "config")]
    Set(ResourceSet),
}

impl Source {
    /// The client of the factory the source's informers come from.
    pub(super) fn client(&self) -> Client {
        match self {
            Source::Watch { handle, .. } | Source::Owns { handle, .. } => handle.client().clone(),
            #[cfg(feature = "config")]
            Source::Set(set) => set.factory().client().clone(),
        }
    }
}

/// What an informer is to a controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Its objects' keys are reconciled.
    Watched,
    /// Its objects' events queue their owners.
    Owned,
}

/// Where an entry of the registry comes from: the builder, or member
/// `(entry, resource)` of resource set number `set`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Origin {
    Builder,
    #[cfg_attr(not(feature = "config"), allow(dead_code))]
    Member {
        set: usize,
        entry: String,
        resource: String,
    },
}

struct Entry {
    handle: InformerHandle,
    role: Role,
    origin: Origin,
    /// A set member that left: kept, so that the keys of its objects still
    /// queued are reconciled (as absent), until the queue is idle.
    retired: bool,
}

/// The informers of a running controller.
#[derive(Default)]
pub(super) struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// The informer of `resource` for a key, and its object `key` in its
    /// cache: the first current informer that holds it, else the first
    /// current one, else one that left (with no object).
    pub(super) fn find(
        &self,
        resource: &ResourceKey,
        key: &str,
    ) -> Option<(InformerHandle, Option<CachedObject>)> {
        let mut current = None;
        let mut left = None;
        for e in self.entries.iter().filter(|e| e.role == Role::Watched) {
            if e.handle.resource() != *resource {
                continue;
            }
            if e.retired {
                left.get_or_insert(&e.handle);
                continue;
            }
            if let Some(object) = e.handle.lister().get(key) {
                return Some((e.handle.clone(), Some(object)));
            }
            current.get_or_insert(&e.handle);
        }
        current.or(left).map(|h| (h.clone(), None))
    }

    /// The lister of a current informer of `resource`, watched or owned.
    pub(super) fn lister(&self, resource: &ResourceKey) -> Option<Lister> {
        self.entries
            .iter()
            .find(|e| !e.retired && e.handle.resource() == *resource)
            .map(|e| e.handle.lister())
    }

    /// The kinds of the watched resources, as owner references name them.
    fn owner_kinds(&self) -> Vec<OwnerKind> {
        let mut kinds: Vec<OwnerKind> = Vec::new();
        for e in &self.entries {
            if e.role != Role::Watched || e.retired {
                continue;
            }
            let (Some(served), Some(scope)) = (e.handle.api_resource(), e.handle.scope()) else {
                continue;
            };
            let kind = OwnerKind {
                resource: ResourceKey::from(&served),
                group: served.group,
                kind: served.kind,
                namespaced: scope == Scope::Namespaced,
            };
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds
    }

    fn watched(&self) -> impl Iterator<Item = &InformerHandle> {
        self.entries
            .iter()
            .filter(|e| e.role == Role::Watched && !e.retired)
            .map(|e| &e.handle)
    }
}

/// A resource whose objects can own others: the group and kind owner
/// references name it by (their version may be another one of the same
/// group, as Kubernetes' garbage collector and controller-runtime allow).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct OwnerKind {
    pub(super) group: String,
    pub(super) kind: String,
    pub(super) resource: ResourceKey,
    pub(super) namespaced: bool,
}

/// The keys of the owners of `object` among `kinds`: its controller, or
/// with `all_owners` every owner. A namespaced owner is in the object's
/// namespace; a cluster-scoped object has no namespaced owner.
pub(super) fn owners_of(
    object: &CachedObject,
    all_owners: bool,
    kinds: &[OwnerKind],
) -> Vec<ObjectRef> {
    let mut owners: Vec<ObjectRef> = Vec::new();
    for reference in object.owner_references() {
        if !all_owners && reference.controller() != Some(true) {
            continue;
        }
        let api_version = reference.api_version();
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let Some(kind) = kinds
            .iter()
            .find(|k| k.group == group && k.kind == reference.kind())
        else {
            continue;
        };
        let namespace = match (kind.namespaced, object.namespace()) {
            (true, None) => continue,
            (true, ns) => ns,
            (false, _) => None,
        };
        let owner = ObjectRef::new(kind.resource.clone(), namespace, reference.name());
        if !reference.name().is_empty() && !owners.contains(&owner) {
            owners.push(owner);
        }
    }
    owners
}

/// What every part of a running controller shares.
pub(super) struct Shared {
    pub(super) name: String,
    pub(super) queue: WorkQueue<ObjectRef>,
    pub(super) client: Client,
    pub(super) registry: RwLock<Registry>,
    /// Workers reconciling a key now.
    pub(super) busy: std::sync::atomic::AtomicUsize,
}

impl Shared {
    pub(super) fn new(name: String, queue: WorkQueue<ObjectRef>, client: Client) -> Self {
        Shared {
            name,
            queue,
            client,
            registry: RwLock::default(),
            busy: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

/// A running controller's registrations and tasks. Dropped (when `run`
/// returns or its future is dropped), it removes the handlers, stops the
/// queue and the tasks, and says the controller ended.
pub(super) struct Running {
    shared: Arc<Shared>,
    shutdown: ShutdownHandle,
    registrations: Arc<Mutex<Vec<(Origin, Registration)>>>,
    tasks: Vec<JoinHandle<()>>,
    #[cfg_attr(not(feature = "config"), allow(dead_code))]
    sets: usize,
}

impl Running {
    pub(super) fn new(shared: Arc<Shared>, shutdown: ShutdownHandle) -> Self {
        Running {
            shared,
            shutdown,
            registrations: Arc::default(),
            tasks: Vec::new(),
            sets: 0,
        }
    }

    /// Registers `source`'s handlers (for a set, its members' now, and a
    /// task that follows its changes).
    pub(super) async fn add(&mut self, source: Source) {
        match source {
            Source::Watch { handle, options } => {
                register_watched(
                    &self.shared,
                    &self.registrations,
                    handle,
                    options,
                    Origin::Builder,
                );
            }
            Source::Owns { handle, options } => {
                let registration = register_owned(&self.shared, &handle, options);
                self.shared.registry.write().entries.push(Entry {
                    handle,
                    role: Role::Owned,
                    origin: Origin::Builder,
                    retired: false,
                });
                self.registrations
                    .lock()
                    .push((Origin::Builder, registration));
            }
            #[cfg(feature = "config")]
            Source::Set(set) => {
                let number = self.sets;
                self.sets += 1;
                let (members, changes) = set.subscribe().await;
                for member in members {
                    join(&self.shared, &self.registrations, number, member);
                }
                let follow = follow_set(
                    self.shared.clone(),
                    self.registrations.clone(),
                    number,
                    changes,
                );
                self.tasks.push(tokio::spawn(follow));
            }
        }
    }

    /// Starts the periodic work: the queue's gauges, letting go of the
    /// informers of members that left once the queue is idle, and the
    /// requeue of everything every `requeue_every`.
    pub(super) fn spawn_upkeep(&mut self, requeue_every: Option<Duration>) {
        self.tasks.push(tokio::spawn(upkeep(self.shared.clone())));
        if let Some(period) = requeue_every {
            self.tasks
                .push(tokio::spawn(requeue_all(self.shared.clone(), period)));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for (_, registration) in self.registrations.lock().drain(..) {
            registration.remove();
        }
        for task in &self.tasks {
            task.abort();
        }
        self.shared.queue.shut_down();
        self.shared.registry.write().entries.clear();
        self.shutdown.mark_ended();
    }
}

/// The name of a controller's handlers, unless the options name them.
fn named(mut options: HandlerOptions, controller: &str) -> HandlerOptions {
    options
        .name
        .get_or_insert_with(|| format!("reconcile-{controller}"));
    options
}

/// Registers a handler queueing the key of every event's object of
/// `handle`, and its entry in the registry.
fn register_watched(
    shared: &Arc<Shared>,
    registrations: &Mutex<Vec<(Origin, Registration)>>,
    handle: InformerHandle,
    options: HandlerOptions,
    origin: Origin,
) {
    let (queue, resource_of) = (shared.queue.clone(), handle.clone());
    let registration = handle.informer().add_objects_handler(
        move |object: &CachedObject, _: Option<&CachedObject>| {
            if let Some(name) = object.name() {
                queue.add(ObjectRef::new(
                    resource_of.resource(),
                    object.namespace(),
                    name,
                ));
            }
        },
        named(options, &shared.name),
    );
    let mut registry = shared.registry.write();
    // A member that joins again replaces the one that left.
    registry
        .entries
        .retain(|e| !(e.retired && e.origin == origin));
    registry.entries.push(Entry {
        handle,
        role: Role::Watched,
        origin: origin.clone(),
        retired: false,
    });
    drop(registry);
    registrations.lock().push((origin, registration));
}

/// Registers a handler queueing the owners of every event's object of
/// `handle` (of both states of an update).
fn register_owned(
    shared: &Arc<Shared>,
    handle: &InformerHandle,
    options: OwnsOptions,
) -> Registration {
    let weak = Arc::downgrade(shared);
    let all_owners = options.all_owners;
    handle.informer().add_objects_handler(
        move |object: &CachedObject, old: Option<&CachedObject>| {
            let Some(shared) = weak.upgrade() else {
                return;
            };
            let kinds = shared.registry.read().owner_kinds();
            let mut owners = owners_of(object, all_owners, &kinds);
            for owner in old
                .map(|old| owners_of(old, all_owners, &kinds))
                .unwrap_or_default()
            {
                if !owners.contains(&owner) {
                    owners.push(owner);
                }
            }
            for owner in owners {
                shared.queue.add(owner);
            }
        },
        named(options.handler, &shared.name),
    )
}

/// Watches `member` of set number `set`.
#[cfg(feature = "config")]
fn join(
    shared: &Arc<Shared>,
    registrations: &Mutex<Vec<(Origin, Registration)>>,
    set: usize,
    member: SetMember,
) {
    let origin = Origin::Member {
        set,
        entry: member.entry.clone(),
        resource: member.resource.clone(),
    };
    let options = member.handler_options();
    register_watched(shared, registrations, member.informer, options, origin);
}

/// Stops watching `member` of set number `set`: its handler is removed,
/// its informer kept (retired) until the queue is idle.
#[cfg(feature = "config")]
fn leave(
    shared: &Shared,
    registrations: &Mutex<Vec<(Origin, Registration)>>,
    set: usize,
    member: &SetMember,
) {
    let origin = Origin::Member {
        set,
        entry: member.entry.clone(),
        resource: member.resource.clone(),
    };
    let removed: Vec<Registration> = registrations
        .lock()
        .extract_if(.., |(o, _)| *o == origin)
        .map(|(_, r)| r)
        .collect();
    for registration in removed {
        registration.remove();
    }
    for e in shared.registry.write().entries.iter_mut() {
        if e.origin == origin {
            e.retired = true;
        }
    }
}

/// Follows the changes of set number `set` until it or the controller
/// goes.
#[cfg(feature = "config")]
async fn follow_set(
    shared: Arc<Shared>,
    registrations: Arc<Mutex<Vec<(Origin, Registration)>>>,
    set: usize,
    mut changes: mpsc::UnboundedReceiver<SetEvent>,
) {
    while let Some(change) = changes.recv().await {
        match change {
            SetEvent::Added(member) => {
                leave(&shared, &registrations, set, &member);
                join(&shared, &registrations, set, member);
            }
            SetEvent::Removed { member, .. } => leave(&shared, &registrations, set, &member),
            // New indexes in place, a skipped member, a reload: the
            // members that change come as their own events.
            SetEvent::Updated(_) | SetEvent::Skipped(_) | SetEvent::Reloaded(_) => {}
        }
    }
}

/// Every half second: the queue's gauges of unfinished work, and the
/// informers of members that left let go of once the queue is idle (a key
/// of theirs delayed beyond that is dropped when it comes due).
async fn upkeep(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(UPKEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        shared.queue.update_unfinished_work();
        let idle =
            shared.queue.is_empty() && shared.busy.load(std::sync::atomic::Ordering::SeqCst) == 0;
        if idle {
            shared.registry.write().entries.retain(|e| !e.retired);
        }
    }
}

/// Every `period`, queues the key of every object of the watched
/// informers.
async fn requeue_all(shared: Arc<Shared>, period: Duration) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let handles: Vec<InformerHandle> = shared.registry.read().watched().cloned().collect();
        for handle in handles {
            let resource = handle.resource();
            for object in handle.lister().list_all() {
                if let Some(key) = ObjectRef::from_cached(&resource, &object) {
                    shared.queue.add(key);
                }
            }
        }
    }
}
