//! The task that keeps a member's Leases: reads the group, claims and
//! renews the slots rendezvous hashing gives it, gives up the others, and
//! publishes the ranges its informers keep.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube_client::Client;
use kube_client::api::{
    Api, DeleteParams, ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams,
};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    Inner, MemberStatus, SHARD_GROUP_LABEL, SHARD_ROLE_LABEL, ShardGroupConfig, rendezvous,
};
use crate::vocabulary::shard::{Handover, ShardRange};

/// What a member last saw of a Lease: its resourceVersion, and when it was
/// first seen at it (by this member's clock).
struct Seen {
    resource_version: String,
    since: Instant,
}

/// The task that keeps a member's Leases.
pub(super) struct Member {
    api: Api<Lease>,
    config: ShardGroupConfig,
    ranges: watch::Sender<Option<Vec<ShardRange>>>,
    handover: Handover,
    status: watch::Sender<MemberStatus>,
    cancel: CancellationToken,
    /// The last hand-over that could not wait for every handler, in words.
    late_handover: Option<String>,
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
    pub(super) fn new(client: Client, inner: &Inner) -> Self {
        Self {
            api: Api::namespaced(client, &inner.config.namespace),
            config: inner.config.clone(),
            ranges: inner.ranges.clone(),
            handover: inner.handover.clone(),
            status: inner.status.clone(),
            cancel: inner.cancel.clone(),
            late_handover: None,
            held: BTreeMap::new(),
            seen: HashMap::new(),
            member_renewed: None,
            claimed: false,
            last_error: None,
        }
    }

    pub(super) async fn run(mut self) {
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
        let mut leaving = Vec::new();
        for slot in 0..self.config.slots {
            let mine = rendezvous(&reading.members, slot) == Some(self.config.identity.as_str());
            let lease = reading.leases.get(&self.config.slot_lease_name(slot));
            if self.held.contains_key(&slot) {
                if mine {
                    if let Err(e) = self.renew_slot(slot, lease, started).await {
                        errors.push(e);
                    }
                } else {
                    self.held.remove(&slot);
                    leaving.push((slot, lease));
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
        // Give the slots up first (the informers stop serving them and
        // tell their handlers), then release them.
        if !leaving.is_empty() {
            self.publish();
            let slots: Vec<u32> = leaving.iter().map(|(slot, _)| *slot).collect();
            self.hand_over(&slots).await;
            for (_, lease) in leaving {
                if let Some(lease) = lease
                    && let Err(e) = self.write_slot(lease, "").await
                {
                    errors.push(e);
                }
            }
        }
        self.claimed = true;
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
        self.status.send_replace(MemberStatus::Active {
            slots: self.held.keys().copied().collect(),
            members: reading.members.len(),
            late_handover: self.late_handover.clone(),
        });
        Ok(())
    }

    /// Waits, for at most a renew interval, until the handlers of every
    /// informer following this member were told that the objects of
    /// `slots` left; says so in the status when they were not.
    async fn hand_over(&mut self, slots: &[u32]) {
        let deadline = Instant::now() + self.config.renew_interval();
        let ranges = self.ranges_of(slots.iter());
        match self.handover.released(&ranges, deadline).await {
            Ok(()) => self.late_handover = None,
            Err(behind) => {
                let late = format!(
                    "slots {slots:?} released before the handlers of {behind} informer(s) received their leftShard deletes (waited {:?})",
                    self.config.renew_interval()
                );
                tracing::warn!(group = %self.config.name, identity = %self.config.identity, "shard group: {late}");
                self.late_handover = Some(late);
            }
        }
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
            if self
                .seen
                .get(&name)
                .is_none_or(|s| s.resource_version != rv)
            {
                let seen = Seen {
                    resource_version: rv,
                    since: now,
                };
                self.seen.insert(name.clone(), seen);
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

    /// A new Lease of the group, `role` (`member` or `slot`), held by this
    /// member.
    fn new_lease(&self, name: &str, role: &str) -> Lease {
        let labels = [
            (SHARD_GROUP_LABEL.to_owned(), self.config.name.clone()),
            (SHARD_ROLE_LABEL.to_owned(), role.to_owned()),
        ];
        Lease {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(labels.into()),
                ..ObjectMeta::default()
            },
            spec: Some(self.spec(&self.config.identity)),
        }
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
        let params = PostParams::default();
        let result = match reading.leases.get(&name) {
            Some(lease) => {
                let mut lease = lease.clone();
                lease.spec = Some(self.spec(&self.config.identity));
                self.api.replace(&name, &params, &lease).await
            }
            None => {
                self.api
                    .create(&params, &self.new_lease(&name, "member"))
                    .await
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
        if self.write_slot(lease, &self.config.identity).await? {
            self.held.insert(slot, started);
        } else {
            self.held.remove(&slot);
        }
        Ok(())
    }

    /// Writes `holder` into a slot Lease, on condition that it is as read.
    /// False when it changed meanwhile (a conflict).
    async fn write_slot(&self, lease: &Lease, holder: &str) -> Result<bool, String> {
        let name = lease.metadata.name.clone().unwrap_or_default();
        let mut lease = lease.clone();
        let old = lease.spec.take().unwrap_or_default();
        let changes_hands = old.holder_identity.as_deref() != Some(holder);
        let mut spec = self.spec(holder);
        let taken = i32::from(changes_hands && !holder.is_empty());
        spec.lease_transitions = Some(old.lease_transitions.unwrap_or(0) + taken);
        if !changes_hands {
            spec.acquire_time = old.acquire_time;
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
        let lease = self.new_lease(&name, "slot");
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
        self.handover
            .publish(&self.ranges, self.ranges_of(self.held.keys()));
    }

    /// The hash ranges of `slots`.
    fn ranges_of<'a>(&self, slots: impl Iterator<Item = &'a u32>) -> Vec<ShardRange> {
        slots
            .filter_map(|s| ShardRange::part(*s, self.config.slots).ok())
            .collect()
    }

    async fn leave(mut self) {
        let held: Vec<u32> = std::mem::take(&mut self.held).into_keys().collect();
        self.handover.publish(&self.ranges, Vec::new());
        self.hand_over(&held).await;
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
