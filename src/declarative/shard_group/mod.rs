//! [`ShardGroup`]: replicas that split resources between them, coordinated
//! by `coordination.k8s.io/v1` Leases.
//!
//! The [layer docs](crate::declarative) say more.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube_client::Client;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::vocabulary::shard::{Handover, ShardAssignment, ShardRange, ShardSource, fnv1a_64};

mod member;

use crate::declarative::DeclarativeError;
use crate::vocabulary::selector::is_dns_label;
use crate::vocabulary::setters;
use member::Member;

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
/// # Ok::<(), kube_dynamic_informer::declarative::DeclarativeError>(())
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

    setters! {
        /// Sets the lease duration.
        lease_duration(duration: Duration) => duration;

        /// Sets the number of slots.
        slots(slots: u32) => slots;
    }

    /// Checks the name, namespace, identity, duration and slot count.
    ///
    /// # Errors
    /// The first field that is not valid, and why.
    pub fn validate(&self) -> Result<(), DeclarativeError> {
        let bad =
            |field: &'static str, value: &str, why: &str| DeclarativeError::InvalidShardGroup {
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
        /// Set when the last hand-over of slots could not wait for every
        /// informer's handlers to receive the `leftShard` deletes (a
        /// handler stuck for a whole renew interval): which slots, and
        /// how many informers were behind.
        late_handover: Option<String>,
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
            MemberStatus::Active {
                slots,
                members,
                late_handover,
            } => {
                write!(f, "active: {} slots, {members} members", slots.len())?;
                late_handover
                    .as_ref()
                    .map_or(Ok(()), |late| write!(f, "; {late}"))
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
    /// What this process's informers' handlers still hold of the ranges.
    handover: Handover,
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

    fn release(&self) -> futures::future::BoxFuture<'static, ()> {
        let group = self.clone();
        Box::pin(async move { group.leave().await })
    }

    fn handover(&self) -> Option<Handover> {
        Some(self.inner.handover.clone())
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
    pub fn join(client: Client, config: ShardGroupConfig) -> Result<Self, DeclarativeError> {
        config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            DeclarativeError::ShardGroupNoRuntime {
                group: config.name.clone(),
            }
        })?;
        let inner = Arc::new(Inner {
            config,
            ranges: watch::Sender::new(None),
            handover: Handover::default(),
            status: watch::Sender::new(MemberStatus::Joining { last_error: None }),
            cancel: CancellationToken::new(),
            task: Mutex::new(None),
        });
        *inner.task.lock() = Some(runtime.spawn(Member::new(client, &inner).run()));
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

#[cfg(test)]
mod tests;
