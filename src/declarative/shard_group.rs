//! [`ShardGroup`]: replicas that split resources between them, coordinated
//! by `coordination.k8s.io/v1` Leases.
//!
//! The [layer docs](crate::declarative) say more.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube_client::Client;
use kube_client::api::{
    Api, DeleteParams, ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams,
};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::vocabulary::shard::{ShardAssignment, ShardRange, ShardSource, fnv1a_64};

/// Label on every Lease of a group: its name.
pub const SHARD_GROUP_LABEL: &str = "kube-dynamic-informer.io/shard-group";

/// Label on every Lease of a group: `member` or `slot`.
pub const SHARD_ROLE_LABEL: &str = "kube-dynamic-informer.io/shard-role";

/// The most slots a group may have.
pub const MAX_SLOTS: u32 = 1024;

/// How to join a shard group.
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::declarative::ShardGroupConfig;
///
/// let config = ShardGroupConfig::new("inventory", "monitoring", "replica-0")
///     .lease_duration(Duration::from_secs(15));
/// config.validate()?;
/// # Ok::<(), kube_dynamic_informer::declarative::ShardGroupError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShardGroupConfig {
    /// The group's name: a DNS label (lowercase letters, digits, `-`; at
    /// most 40 characters), the prefix of its Leases' names and the value
    /// of their [`SHARD_GROUP_LABEL`].
    pub name: String,
    /// The namespace of the group's Leases.
    pub namespace: String,
    /// This member's identity, unique in the group (a pod name, say).
    pub identity: String,
    /// How long a Lease stays valid without renewal; Leases are renewed
    /// every third of it. Default 15 s (client-go's leader election).
    pub lease_duration: Duration,
    /// How many slots the hash space is cut into; every member of a group
    /// must use the same number. Default 32.
    pub slots: u32,
}

impl ShardGroupConfig {
    /// Member `identity` of group `name`, its Leases in `namespace`, with a
    /// 15 s lease duration and 32 slots.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        namespace: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            slots: 32,
        }
    }

    /// Sets the lease duration.
    #[must_use]
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// Sets the number of slots.
    #[must_use]
    pub fn slots(mut self, slots: u32) -> Self {
        self.slots = slots;
        self
    }

    /// Checks the name, namespace, identity, duration and slot count.
    ///
    /// # Errors
    /// The first field that is not valid, and why.
    pub fn validate(&self) -> Result<(), ShardGroupError> {
        let bad = |field: &'static str, value: &str, why: &str| ShardGroupError::Invalid {
            field,
            value: value.to_owned(),
            reason: why.to_owned(),
        };
        if !is_dns_label(&self.name, 40) {
            return Err(bad(
                "name",
                &self.name,
                "must be 1 to 40 lowercase letters, digits or '-', starting and ending with a letter or digit (it prefixes the names of the group's Leases)",
            ));
        }
        if !is_dns_label(&self.namespace, 63) {
            return Err(bad("namespace", &self.namespace, "is not a namespace name"));
        }
        if self.identity.trim().is_empty() || self.identity.len() > 253 {
            return Err(bad(
                "identity",
                &self.identity,
                "must be 1 to 253 characters",
            ));
        }
        if self.lease_duration < Duration::from_secs(1) {
            return Err(bad(
                "leaseDuration",
                &format!("{:?}", self.lease_duration),
                "must be at least 1s (Leases count in whole seconds)",
            ));
        }
        if self.slots == 0 || self.slots > MAX_SLOTS {
            return Err(bad(
                "slots",
                &self.slots.to_string(),
                &format!("must be 1 to {MAX_SLOTS}"),
            ));
        }
        Ok(())
    }

    /// The name of this member's Lease.
    #[must_use]
    pub fn member_lease_name(&self) -> String {
        format!(
            "{}-member-{:016x}",
            self.name,
            fnv1a_64(self.identity.as_bytes())
        )
    }

    /// The name of slot `slot`'s Lease.
    #[must_use]
    pub fn slot_lease_name(&self, slot: u32) -> String {
        format!("{}-slot-{slot}", self.name)
    }

    fn renew_interval(&self) -> Duration {
        self.lease_duration / 3
    }

    /// A held slot is given up once its last renewal is this old.
    fn renew_deadline(&self) -> Duration {
        self.lease_duration * 2 / 3
    }
}

fn is_dns_label(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Why a shard group could not be joined.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardGroupError {
    /// A field of the [`ShardGroupConfig`] is not valid.
    #[error("shard group {field} {value:?} {reason}")]
    Invalid {
        /// The field: `name`, `namespace`, `identity`, `leaseDuration`, `slots`.
        field: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No tokio runtime to run the member on.
    #[error("joining shard group {group}: no tokio runtime is running")]
    NoRuntime {
        /// The group.
        group: String,
    },
}

/// Where a member of a shard group stands.
///
/// ```no_run
/// # async fn demo(group: kube_dynamic_informer::declarative::ShardGroup) {
/// use kube_dynamic_informer::declarative::MemberStatus;
///
/// let mut status = group.watch_status();
/// while status.changed().await.is_ok() {
///     if let MemberStatus::LostLease { reason } = &*status.borrow() {
///         eprintln!("holding no slot: {reason}");
///     }
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberStatus {
    /// Writing its member Lease and reading the group's.
    Joining {
        /// Why the last try failed (a 403 without the Role
        /// [`rbac_role`] prints, say).
        last_error: Option<String>,
    },
    /// Renewing its Leases.
    Active {
        /// The slots it holds.
        slots: Vec<u32>,
        /// The live members it sees, itself included.
        members: usize,
    },
    /// It could not renew its Leases in time and gave up its slots; it
    /// keeps trying.
    LostLease {
        /// The last error.
        reason: String,
    },
    /// It left the group (its slots released, its member Lease deleted).
    Left,
}

impl fmt::Display for MemberStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemberStatus::Joining { last_error: None } => f.write_str("joining"),
            MemberStatus::Joining {
                last_error: Some(e),
            } => write!(f, "joining, failing: {e}"),
            MemberStatus::Active { slots, members } => {
                write!(f, "active: {} slots, {members} members", slots.len())
            }
            MemberStatus::LostLease { reason } => {
                write!(f, "lost its lease, holds no slot: {reason}")
            }
            MemberStatus::Left => f.write_str("left the group"),
        }
    }
}

struct Inner {
    config: ShardGroupConfig,
    ranges: watch::Sender<Option<Vec<ShardRange>>>,
    status: watch::Sender<MemberStatus>,
    cancel: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// This process's membership in a shard group; see the
/// [module docs](crate::declarative). Informers join through
/// [`InformerOptions::shard_group`](crate::informer::options::InformerOptions::shard_group)
/// and keep the slots the member holds.
///
/// Cheap to clone; clones are the same member. Two handles are equal when
/// they name the same group, namespace and identity.
///
/// ```no_run
/// # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use kube_dynamic_informer::InformerFactory;
/// use kube_dynamic_informer::informer::InformerOptions;
/// use kube_dynamic_informer::declarative::{ShardGroup, ShardGroupConfig};
///
/// let identity = std::env::var("POD_NAME")?;
/// let group = ShardGroup::join(
///     client.clone(),
///     ShardGroupConfig::new("inventory", "monitoring", identity),
/// )?;
/// let factory = InformerFactory::with_options(
///     client,
///     InformerOptions::default().shard_group(group.clone()),
/// );
/// let pods = factory.for_resource("pods").await?;
/// factory.start()?;
/// // ...
/// group.leave().await; // hand the slots over at once
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ShardGroup {
    inner: Arc<Inner>,
}

impl fmt::Debug for ShardGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardGroup")
            .field("name", &self.inner.config.name)
            .field("namespace", &self.inner.config.namespace)
            .field("identity", &self.inner.config.identity)
            .field("status", &*self.inner.status.borrow())
            .finish()
    }
}

impl PartialEq for ShardGroup {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.inner.config, &other.inner.config);
        a.name == b.name && a.namespace == b.namespace && a.identity == b.identity
    }
}

impl Eq for ShardGroup {}

impl std::hash::Hash for ShardGroup {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let c = &self.inner.config;
        (&c.name, &c.namespace, &c.identity).hash(state);
    }
}

impl ShardSource for ShardGroup {
    fn identity(&self) -> String {
        let c = &self.inner.config;
        format!(
            "shard group {}/{} member {}",
            c.namespace, c.name, c.identity
        )
    }

    fn ranges(&self) -> watch::Receiver<Option<Vec<ShardRange>>> {
        self.inner.ranges.subscribe()
    }

    fn describe(&self) -> String {
        let c = &self.inner.config;
        format!(
            "member {} of shard group {}: {}",
            c.identity,
            c.name,
            self.status()
        )
    }
}

impl From<ShardGroup> for ShardAssignment {
    fn from(group: ShardGroup) -> Self {
        ShardAssignment::new(group)
    }
}

impl From<&ShardGroup> for ShardAssignment {
    fn from(group: &ShardGroup) -> Self {
        ShardAssignment::new(group.clone())
    }
}

impl ShardGroup {
    /// Joins the group: spawns, on the current tokio runtime, the task that
    /// keeps this member's Leases until [`leave`](Self::leave) (or until
    /// every handle is dropped, which stops renewing without releasing
    /// anything: the other members take the slots when the Leases expire).
    ///
    /// # Errors
    /// An invalid configuration, or no tokio runtime.
    pub fn join(client: Client, config: ShardGroupConfig) -> Result<Self, ShardGroupError> {
        config.validate()?;
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| ShardGroupError::NoRuntime {
                group: config.name.clone(),
            })?;
        let inner = Arc::new(Inner {
            config,
            ranges: watch::Sender::new(None),
            status: watch::Sender::new(MemberStatus::Joining { last_error: None }),
            cancel: CancellationToken::new(),
            task: Mutex::new(None),
        });
        let member = Member::new(client, &inner);
        let task = runtime.spawn(member.run());
        *inner.task.lock() = Some(task);
        Ok(Self { inner })
    }

    /// The configuration it joined with.
    #[must_use]
    pub fn config(&self) -> &ShardGroupConfig {
        &self.inner.config
    }

    /// Where the member stands.
    #[must_use]
    pub fn status(&self) -> MemberStatus {
        self.inner.status.borrow().clone()
    }

    /// A receiver that sees every status change.
    #[must_use]
    pub fn watch_status(&self) -> watch::Receiver<MemberStatus> {
        self.inner.status.subscribe()
    }

    /// The slots this member holds now.
    #[must_use]
    pub fn slots(&self) -> Vec<u32> {
        match &*self.inner.status.borrow() {
            MemberStatus::Active { slots, .. } => slots.clone(),
            _ => Vec::new(),
        }
    }

    /// Leaves the group: gives up every slot (the informers drop their
    /// objects), releases the slot Leases so that the other members take
    /// them at once, and deletes the member Lease.
    pub async fn leave(&self) {
        self.inner.cancel.cancel();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().take() {
            task.abort();
        }
    }
}

/// What a member last saw of a Lease: its resourceVersion, and when it was
/// first seen at it (by this member's clock).
struct Seen {
    resource_version: String,
    since: Instant,
}

/// The task that keeps a member's Leases.
struct Member {
    api: Api<Lease>,
    config: ShardGroupConfig,
    ranges: watch::Sender<Option<Vec<ShardRange>>>,
    status: watch::Sender<MemberStatus>,
    cancel: CancellationToken,
    /// Held slots, with when their last successful renewal started.
    held: BTreeMap<u32, Instant>,
    seen: HashMap<String, Seen>,
    /// When the member Lease was last renewed.
    member_renewed: Option<Instant>,
    /// A pass after the first has read the group and claimed slots: the
    /// informers may list what it holds.
    claimed: bool,
    last_error: Option<String>,
}

/// One pass's reading of the group.
struct Reading {
    leases: HashMap<String, Lease>,
    members: Vec<String>,
}

impl Member {
    fn new(client: Client, inner: &Inner) -> Self {
        Self {
            api: Api::namespaced(client, &inner.config.namespace),
            config: inner.config.clone(),
            ranges: inner.ranges.clone(),
            status: inner.status.clone(),
            cancel: inner.cancel.clone(),
            held: BTreeMap::new(),
            seen: HashMap::new(),
            member_renewed: None,
            claimed: false,
            last_error: None,
        }
    }

    async fn run(mut self) {
        let changed = Arc::new(tokio::sync::Notify::new());
        // Ends with this task, also when it is aborted.
        let _watching = AbortOnDrop(tokio::spawn(watch_group(
            self.api.clone(),
            self.config.clone(),
            changed.clone(),
        )));
        let mut passes = 0u64;
        loop {
            let started = Instant::now();
            match self.pass(passes).await {
                Ok(()) => self.last_error = None,
                Err(e) => {
                    tracing::warn!(group = %self.config.name, identity = %self.config.identity, error = %e, "shard group: renewal failed");
                    if self.member_renewed.is_none() {
                        self.status.send_replace(MemberStatus::Joining {
                            last_error: Some(e.clone()),
                        });
                    }
                    self.last_error = Some(e);
                }
            }
            passes += 1;
            self.drop_overdue();
            self.publish();
            let next = started + self.config.renew_interval();
            // Wake for the next pass, or earlier to give up a slot whose
            // renewal is overdue.
            let deadline = self
                .held
                .values()
                .map(|t| *t + self.config.renew_deadline())
                .min()
                .map_or(next, |d| d.min(next));
            tokio::select! {
                _ = self.cancel.cancelled() => break,
                _ = tokio::time::sleep_until(deadline) => {}
                // Another member joined or left, or released a slot: act
                // now rather than at the next renewal.
                () = changed.notified() => {}
            }
        }
        self.leave().await;
    }

    /// Reads the group, renews the member Lease, and takes, renews or
    /// releases slots.
    async fn pass(&mut self, pass: u64) -> Result<(), String> {
        let started = Instant::now();
        let reading = self.read().await?;
        self.renew_member(&reading, started).await?;
        // The first pass only announces this member: claiming before seeing
        // who else is starting would move slots twice.
        if pass == 0 {
            self.status
                .send_replace(MemberStatus::Joining { last_error: None });
            return Ok(());
        }
        let mut errors = Vec::new();
        for slot in 0..self.config.slots {
            let owner = rendezvous(&reading.members, slot);
            let mine = owner == Some(self.config.identity.as_str());
            let name = self.config.slot_lease_name(slot);
            let lease = reading.leases.get(&name);
            if self.held.contains_key(&slot) {
                if mine {
                    if let Err(e) = self.renew_slot(slot, lease, started).await {
                        errors.push(e);
                    }
                } else {
                    // Give up first (the informers stop serving it), then
                    // release.
                    self.held.remove(&slot);
                    self.publish();
                    if let Some(lease) = lease
                        && let Err(e) = self.write_slot(lease, "").await
                    {
                        errors.push(e);
                    }
                }
            } else if mine && self.is_free(lease) {
                let taken = match lease {
                    None => self.create_slot(slot).await,
                    Some(lease) => self.write_slot(lease, &self.config.identity).await,
                };
                match taken {
                    Ok(true) => {
                        self.held.insert(slot, started);
                    }
                    Ok(false) => {}
                    Err(e) => errors.push(e),
                }
            }
        }
        self.claimed = true;
        let members = reading.members.len();
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
        self.status.send_replace(MemberStatus::Active {
            slots: self.held.keys().copied().collect(),
            members,
        });
        Ok(())
    }

    /// Lists the group's Leases and judges which members are live.
    async fn read(&mut self) -> Result<Reading, String> {
        let params =
            ListParams::default().labels(&format!("{SHARD_GROUP_LABEL}={}", self.config.name));
        let list = self
            .api
            .list(&params)
            .await
            .map_err(|e| format!("listing the Leases of group {}: {e}", self.config.name))?;
        let now = Instant::now();
        let mut leases = HashMap::new();
        for lease in list.items {
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            let rv = lease.metadata.resource_version.clone().unwrap_or_default();
            match self.seen.get_mut(&name) {
                Some(seen) if seen.resource_version == rv => {}
                _ => {
                    self.seen.insert(
                        name.clone(),
                        Seen {
                            resource_version: rv,
                            since: now,
                        },
                    );
                }
            }
            leases.insert(name, lease);
        }
        self.seen.retain(|name, _| leases.contains_key(name));
        let mine = self.config.member_lease_name();
        let mut members: BTreeSet<String> = leases
            .iter()
            .filter(|(name, lease)| {
                role(lease) == Some("member") && (**name == mine || !self.expired(name, now))
            })
            .filter_map(|(_, lease)| holder(lease).map(str::to_owned))
            .collect();
        members.insert(self.config.identity.clone());
        Ok(Reading {
            leases,
            members: members.into_iter().collect(),
        })
    }

    /// Whether a Lease went unrenewed for a whole lease duration, as seen
    /// here.
    fn expired(&self, name: &str, now: Instant) -> bool {
        self.seen
            .get(name)
            .is_some_and(|s| now.duration_since(s.since) >= self.config.lease_duration)
    }

    fn is_free(&self, lease: Option<&Lease>) -> bool {
        let Some(lease) = lease else {
            return true;
        };
        match holder(lease) {
            None => true,
            // Held by an earlier run of this member, which is gone.
            Some(h) if h == self.config.identity => true,
            Some(_) => self.expired(lease.metadata.name.as_deref().unwrap_or(""), Instant::now()),
        }
    }

    fn labels(&self, role: &str) -> std::collections::BTreeMap<String, String> {
        [
            (SHARD_GROUP_LABEL.to_owned(), self.config.name.clone()),
            (SHARD_ROLE_LABEL.to_owned(), role.to_owned()),
        ]
        .into()
    }

    fn spec(&self, holder: &str) -> LeaseSpec {
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        LeaseSpec {
            holder_identity: (!holder.is_empty()).then(|| holder.to_owned()),
            lease_duration_seconds: Some(
                i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX),
            ),
            renew_time: (!holder.is_empty()).then(|| now.clone()),
            acquire_time: (!holder.is_empty()).then_some(now),
            ..LeaseSpec::default()
        }
    }

    async fn renew_member(&mut self, reading: &Reading, started: Instant) -> Result<(), String> {
        let name = self.config.member_lease_name();
        let result = match reading.leases.get(&name) {
            Some(lease) => {
                let mut lease = lease.clone();
                lease.spec = Some(self.spec(&self.config.identity));
                self.api
                    .replace(&name, &PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        labels: Some(self.labels("member")),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(&self.config.identity)),
                };
                self.api
                    .create(&PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
        };
        result.map_err(|e| format!("renewing member Lease {name}: {e}"))?;
        self.member_renewed = Some(started);
        Ok(())
    }

    async fn renew_slot(
        &mut self,
        slot: u32,
        lease: Option<&Lease>,
        started: Instant,
    ) -> Result<(), String> {
        let still_mine = lease.is_some_and(|l| holder(l) == Some(self.config.identity.as_str()));
        let Some(lease) = lease.filter(|_| still_mine) else {
            // Taken over (or deleted): it is not ours any more.
            tracing::warn!(group = %self.config.name, slot, "shard group: a held slot's Lease changed hands; giving the slot up");
            self.held.remove(&slot);
            return Ok(());
        };
        match self.write_slot(lease, &self.config.identity).await {
            Ok(true) => {
                self.held.insert(slot, started);
                Ok(())
            }
            Ok(false) => {
                self.held.remove(&slot);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Writes `holder` into a slot Lease, on condition that it is as read.
    /// False when it changed meanwhile (a conflict).
    async fn write_slot(&self, lease: &Lease, holder: &str) -> Result<bool, String> {
        let name = lease.metadata.name.clone().unwrap_or_default();
        let mut lease = lease.clone();
        let transitions = lease
            .spec
            .as_ref()
            .and_then(|s| s.lease_transitions)
            .unwrap_or(0);
        let changes_hands = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref())
            != Some(holder);
        let mut spec = self.spec(holder);
        spec.lease_transitions = Some(transitions + i32::from(changes_hands && !holder.is_empty()));
        if !changes_hands {
            spec.acquire_time = lease.spec.as_ref().and_then(|s| s.acquire_time.clone());
        }
        lease.spec = Some(spec);
        match self
            .api
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube_client::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(format!("writing slot Lease {name}: {e}")),
        }
    }

    async fn create_slot(&self, slot: u32) -> Result<bool, String> {
        let name = self.config.slot_lease_name(slot);
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(self.labels("slot")),
                ..ObjectMeta::default()
            },
            spec: Some(self.spec(&self.config.identity)),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube_client::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(format!("creating slot Lease {name}: {e}")),
        }
    }

    /// Gives up the slots whose renewal is overdue, and everything when the
    /// member Lease is.
    fn drop_overdue(&mut self) {
        let now = Instant::now();
        let deadline = self.config.renew_deadline();
        let before = self.held.len();
        let member_overdue = self
            .member_renewed
            .is_none_or(|t| now.duration_since(t) >= deadline);
        if member_overdue {
            self.held.clear();
        } else {
            self.held.retain(|_, t| now.duration_since(*t) < deadline);
        }
        let lost = member_overdue && self.member_renewed.is_some();
        if lost || self.held.len() < before {
            let reason = self
                .last_error
                .clone()
                .unwrap_or_else(|| "renewals overdue".to_owned());
            if lost {
                self.status.send_replace(MemberStatus::LostLease {
                    reason: reason.clone(),
                });
            }
            tracing::warn!(group = %self.config.name, identity = %self.config.identity, %reason, given_up = before - self.held.len(), "shard group: slots given up, their renewal is overdue");
        }
    }

    /// Hands the held slots' ranges to the informers, and says which they
    /// are in the status (a no-op when they did not change).
    fn publish(&self) {
        if !self.claimed {
            return;
        }
        let held: Vec<u32> = self.held.keys().copied().collect();
        self.status.send_if_modified(|status| match status {
            MemberStatus::Active { slots, .. } if *slots != held => {
                slots.clone_from(&held);
                true
            }
            _ => false,
        });
        let ranges: Vec<ShardRange> = self
            .held
            .keys()
            .filter_map(|s| ShardRange::part(*s, self.config.slots).ok())
            .collect();
        self.ranges.send_if_modified(|current| {
            if current.as_ref() == Some(&ranges) {
                false
            } else {
                *current = Some(ranges);
                true
            }
        });
    }

    async fn leave(mut self) {
        let held: Vec<u32> = std::mem::take(&mut self.held).into_keys().collect();
        self.ranges.send_replace(Some(Vec::new()));
        for slot in held {
            let name = self.config.slot_lease_name(slot);
            if let Ok(lease) = self.api.get(&name).await
                && holder(&lease) == Some(self.config.identity.as_str())
            {
                let _ = self.write_slot(&lease, "").await;
            }
        }
        let _ = self
            .api
            .delete(&self.config.member_lease_name(), &DeleteParams::default())
            .await;
        self.status.send_replace(MemberStatus::Left);
    }
}

/// A task that ends when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Watches the group's Leases and wakes the member when another member's
/// Lease appears or goes, or a slot Lease is released — not on renewals,
/// which the passes see anyway. Restarts after a failure, a renew interval
/// later.
async fn watch_group(api: Api<Lease>, config: ShardGroupConfig, changed: Arc<tokio::sync::Notify>) {
    let label = format!("{SHARD_GROUP_LABEL}={}", config.name);
    loop {
        let started = async {
            let list = api
                .list(&ListParams::default().labels(&label).limit(1))
                .await?;
            let rv = list.metadata.resource_version.unwrap_or_default();
            api.watch(&WatchParams::default().labels(&label), &rv).await
        };
        match started.await {
            Err(e) => {
                // The passes still read the group at each renewal.
                tracing::debug!(group = %config.name, error = %e, "shard group: cannot watch Leases");
            }
            Ok(stream) => {
                let mut stream = std::pin::pin!(stream);
                while let Some(Ok(event)) = stream.next().await {
                    let news = match &event {
                        WatchEvent::Added(l) | WatchEvent::Deleted(l) => {
                            role(l) == Some("member") && holder(l) != Some(config.identity.as_str())
                        }
                        WatchEvent::Modified(l) => role(l) == Some("slot") && holder(l).is_none(),
                        WatchEvent::Bookmark(_) => false,
                        WatchEvent::Error(_) => break,
                    };
                    if news {
                        changed.notify_one();
                    }
                }
            }
        }
        tokio::time::sleep(config.renew_interval()).await;
    }
}

fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .as_deref()
        .filter(|h| !h.is_empty())
}

fn role(lease: &Lease) -> Option<&str> {
    lease
        .metadata
        .labels
        .as_ref()?
        .get(SHARD_ROLE_LABEL)
        .map(String::as_str)
}

/// Mixes the bits of a hash (MurmurHash3's finaliser): FNV-1a of strings
/// that differ in their last bytes differ mostly in low bits.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The member that owns `slot` by rendezvous hashing: the one with the
/// highest score for it (ties to the greater identity). `None` without
/// members.
///
/// ```
/// use kube_dynamic_informer::declarative::rendezvous;
/// let members = ["pod-a", "pod-b", "pod-c"];
/// let owner = rendezvous(&members, 7).unwrap();
/// // Another member leaving moves only its own slots.
/// let others: Vec<&str> = members.iter().copied().filter(|m| *m != "pod-b").collect();
/// if owner != "pod-b" {
///     assert_eq!(rendezvous(&others, 7), Some(owner));
/// }
/// ```
#[must_use]
pub fn rendezvous<S: AsRef<str>>(members: &[S], slot: u32) -> Option<&str> {
    members.iter().map(AsRef::as_ref).max_by_key(|m| {
        let mut key = Vec::with_capacity(m.len() + 12);
        key.extend_from_slice(m.as_bytes());
        key.push(0);
        key.extend_from_slice(slot.to_string().as_bytes());
        (mix(fnv1a_64(&key)), *m)
    })
}

/// The Role a member of a group in `namespace` needs for its Leases, as
/// YAML. Its informers need `list` and `watch` on their resources besides.
///
/// ```
/// let role = kube_dynamic_informer::declarative::rbac_role("monitoring");
/// assert!(role.contains("coordination.k8s.io"));
/// ```
#[must_use]
pub fn rbac_role(namespace: &str) -> String {
    format!(
        "\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: kube-dynamic-informer-shard-group
  namespace: {namespace}
rules:
  # The group's member and slot Leases.
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, list, watch, create, update, delete]
# Each sharded informer also needs list and watch on its resource, as an
# unsharded one does.
"
    )
}
