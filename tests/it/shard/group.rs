//! Shard groups: members that share a resource through Leases, joining,
//! losing their Leases and taking over, while objects come and go.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube_client::Client;
use kube_client::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube_dynamic_informer::declarative::{MemberStatus, ShardGroup, ShardGroupConfig};
use kube_dynamic_informer::informer::{Event, SharedInformer};
use kube_dynamic_informer::vocabulary::Scope;
use tokio_util::sync::CancellationToken;

use super::{admin, admin_config, configmaps};
use crate::support::proxy::Proxy;
use crate::support::{self, User};

const LEASE: Duration = Duration::from_secs(3);
const SLOTS: u32 = 16;

/// What one member's handler was told.
#[derive(Debug, Default)]
struct Told {
    /// The objects the handler believes this member holds.
    holds: BTreeSet<String>,
    /// Adds of an object the handler believed held, deletes of one it did
    /// not: each a broken promise.
    inconsistencies: Vec<String>,
    /// Objects that left the shard, and entered it after the first list.
    left: Vec<String>,
    entered: Vec<String>,
    /// Objects of the first list.
    initial: Vec<String>,
    /// Deletes not marked as leaving the shard.
    deleted: Vec<String>,
}

/// Which member's handlers hold each object, across members: a member's
/// handler taking an object another's still holds is two writers at once.
#[derive(Debug, Default)]
struct Ledger {
    holder: HashMap<String, String>,
    /// Members whose process died: their handlers hold nothing.
    dead: BTreeSet<String>,
    overlaps: Vec<String>,
    /// Objects that left a member's handlers with `leftShard`.
    handed_over: usize,
}

impl Ledger {
    fn enter(&mut self, member: &str, object: &str) {
        if self.dead.contains(member) {
            return;
        }
        if let Some(other) = self.holder.insert(object.to_owned(), member.to_owned())
            && other != member
        {
            self.overlaps.push(format!(
                "{object} reached {member}'s handler while {other}'s held it"
            ));
        }
    }

    fn leave(&mut self, member: &str, object: &str, left_shard: bool) {
        if self.holder.get(object).is_some_and(|h| h == member) {
            self.holder.remove(object);
            self.handed_over += usize::from(left_shard);
        }
    }

    /// The member's process died: whatever its handlers held is free.
    fn die(&mut self, member: &str) {
        self.dead.insert(member.to_owned());
        self.holder.retain(|_, h| h != member);
    }

    fn revive(&mut self, member: &str) {
        self.dead.remove(member);
    }
}

struct Member {
    name: String,
    group: ShardGroup,
    informer: SharedInformer,
    told: Arc<Mutex<Told>>,
    cancel: CancellationToken,
}

impl Member {
    fn join(client: Client, ns: &str, name: &str) -> Member {
        Self::join_with(client, ns, name, &Arc::default(), Duration::ZERO)
    }

    /// Joins, recording in `ledger` what its handler holds; the handler
    /// works `work` on each object that leaves (a controller's cleanup).
    fn join_with(
        client: Client,
        ns: &str,
        name: &str,
        ledger: &Arc<Mutex<Ledger>>,
        work: Duration,
    ) -> Member {
        let group = ShardGroup::join(
            client.clone(),
            ShardGroupConfig::new("widgets", ns, name)
                .lease_duration(LEASE)
                .slots(SLOTS),
        )
        .unwrap();
        let informer = SharedInformer::new(
            client,
            configmaps(),
            Scope::Namespaced,
            support::options().namespace(ns).shard_group(group.clone()),
        )
        .unwrap();
        let told = Arc::new(Mutex::new(Told::default()));
        let log = told.clone();
        let (ledger, member) = (ledger.clone(), name.to_owned());
        informer.add_handler(move |e: Event| {
            let name = e.object().name().unwrap_or_default().to_owned();
            match &e {
                Event::Add { .. } => ledger.lock().unwrap().enter(&member, &name),
                Event::Update { .. } => {}
                Event::Delete { left_shard, .. } => {
                    if *left_shard {
                        std::thread::sleep(work);
                    }
                    ledger.lock().unwrap().leave(&member, &name, *left_shard);
                }
            }
            let mut t = log.lock().unwrap();
            match e {
                Event::Add {
                    entered_shard,
                    in_initial_list,
                    ..
                } => {
                    if !t.holds.insert(name.clone()) {
                        t.inconsistencies.push(format!("add of held {name}"));
                    }
                    if entered_shard {
                        t.entered.push(name);
                    } else if in_initial_list {
                        t.initial.push(name);
                    }
                }
                Event::Update { .. } => {}
                Event::Delete { left_shard, .. } => {
                    if !t.holds.remove(&name) {
                        t.inconsistencies.push(format!("delete of unheld {name}"));
                    }
                    if left_shard {
                        t.left.push(name);
                    } else {
                        t.deleted.push(name);
                    }
                }
            }
        });
        let cancel = CancellationToken::new();
        informer.start(cancel.clone()).unwrap();
        Member {
            name: name.to_owned(),
            group,
            informer,
            told,
            cancel,
        }
    }

    fn cached(&self) -> BTreeSet<String> {
        self.informer
            .store()
            .list_all()
            .iter()
            .filter_map(|o| o.name().map(str::to_owned))
            .collect()
    }
}

async fn server_names(api: &Api<DynamicObject>) -> BTreeSet<String> {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect()
}

/// Why `members` are not settled: slots not held exactly once, a cache
/// that is not the server's objects of its slots, a handler that was not
/// told its cache.
fn unsettled(members: &[&Member], server: &BTreeSet<String>) -> Option<String> {
    let mut slots: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for m in members {
        match m.group.status() {
            MemberStatus::Active { members: n, .. } if n == members.len() => {}
            other => return Some(format!("{}: {other}", m.name)),
        }
        for s in m.group.slots() {
            slots.entry(s).or_default().push(&m.name);
        }
    }
    if let Some((s, holders)) = slots.iter().find(|(_, h)| h.len() > 1) {
        return Some(format!("slot {s} held by {holders:?}"));
    }
    if slots.len() != SLOTS as usize {
        return Some(format!("{} of {SLOTS} slots held", slots.len()));
    }
    let mut holders: HashMap<String, Vec<&str>> = HashMap::new();
    for m in members {
        if !m.informer.has_synced() {
            return Some(format!("{} not synced", m.name));
        }
        let cached = m.cached();
        if m.told.lock().unwrap().holds != cached {
            return Some(format!(
                "{}: the handler was not told its cache yet",
                m.name
            ));
        }
        for name in cached {
            holders.entry(name).or_default().push(&m.name);
        }
    }
    if let Some((o, h)) = holders.iter().find(|(_, h)| h.len() > 1) {
        return Some(format!("{o} in the caches of {h:?}"));
    }
    let union: BTreeSet<String> = holders.into_keys().collect();
    if &union != server {
        let missing = server.difference(&union).count();
        let extra = union.difference(server).count();
        return Some(format!(
            "union of the caches differs from the server: {missing} missing, {extra} extra"
        ));
    }
    None
}

async fn settle(what: &str, members: &[&Member], api: &Api<DynamicObject>) {
    support::wait_for(what, Duration::from_secs(90), || async {
        let server = server_names(api).await;
        unsettled(members, &server).map_or(Ok(()), Err)
    })
    .await;
}

/// Creates and deletes objects until cancelled; returns the deleted names.
fn churn(api: Api<DynamicObject>, stop: CancellationToken) -> tokio::task::JoinHandle<Vec<String>> {
    tokio::spawn(async move {
        let cm = configmaps();
        let mut deleted = Vec::new();
        let mut i = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        while !stop.is_cancelled() {
            tick.tick().await;
            let name = format!("churn{i}");
            api.create(&PostParams::default(), &DynamicObject::new(&name, &cm))
                .await
                .unwrap();
            if i % 3 == 0 {
                let victim = format!("seed{i}");
                if api.delete(&victim, &DeleteParams::default()).await.is_ok() {
                    deleted.push(victim);
                }
            }
            i += 1;
        }
        deleted
    })
}

/// Samples the slots every member says it holds until `stop`, and returns
/// each moment two of them held the same slot.
fn overlap_watch(
    groups: Arc<Mutex<Vec<(String, ShardGroup)>>>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<Vec<String>> {
    tokio::spawn(async move {
        let mut overlaps = Vec::new();
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        while !stop.is_cancelled() {
            tick.tick().await;
            let groups = groups.lock().unwrap().clone();
            let mut holder: BTreeMap<u32, &str> = BTreeMap::new();
            for (name, group) in &groups {
                for slot in group.slots() {
                    if let Some(other) = holder.insert(slot, name) {
                        overlaps.push(format!("slot {slot} held by {other} and {name}"));
                    }
                }
            }
        }
        overlaps
    })
}

/// A namespace of its own with 300 ConfigMaps `seed0`..`seed299`.
async fn seeded(client: &Client, prefix: &str) -> (String, Api<DynamicObject>) {
    let ns = support::namespace(client, prefix).await;
    let cm = configmaps();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &cm);
    support::create_many(
        &api,
        (0..300)
            .map(|i| DynamicObject::new(&format!("seed{i}"), &cm))
            .collect(),
        16,
    )
    .await;
    (ns, api)
}

async fn group_scenario(gate: bool) {
    let Some(config) = admin_config(gate).await else {
        return;
    };
    let client = admin(gate).await.unwrap();
    let (ns, api) = seeded(&client, if gate { "group-on" } else { "group-off" }).await;

    let a = Member::join(Client::try_from(config.clone()).unwrap(), &ns, "member-a");
    let b = Member::join(Client::try_from(config.clone()).unwrap(), &ns, "member-b");
    let c = Member::join(Client::try_from(config.clone()).unwrap(), &ns, "member-c");
    settle("three members to share the slots", &[&a, &b, &c], &api).await;
    let groups = Arc::new(Mutex::new(
        [&a, &b, &c]
            .iter()
            .map(|m| (m.name.clone(), m.group.clone()))
            .collect::<Vec<_>>(),
    ));
    let stop_watching = CancellationToken::new();
    let overlaps = overlap_watch(groups.clone(), stop_watching.clone());

    let stop = CancellationToken::new();
    let churning = churn(api.clone(), stop.clone());

    // A fourth member joins, through a proxy that can cut it off.
    let proxy = Proxy::start(crate::reliability::server_addr(&config)).await;
    let mut via_proxy = config.clone();
    via_proxy.cluster_url = proxy.url().parse().unwrap();
    let d = Member::join(Client::try_from(via_proxy).unwrap(), &ns, "member-d");
    groups
        .lock()
        .unwrap()
        .push((d.name.clone(), d.group.clone()));
    settle("a fourth member to take its share", &[&a, &b, &c, &d], &api).await;
    let d_slots = d.group.slots();
    assert!(!d_slots.is_empty(), "the fourth member holds slots");
    // The seed objects the fourth member took came from the others' shards
    // (objects created meanwhile may enter its shard straight away). It
    // gets them in its first list when its first claim finds their slots
    // released already, and as entered adds after that.
    let entered_d: BTreeSet<String> = {
        let t = d.told.lock().unwrap();
        t.entered
            .iter()
            .chain(&t.initial)
            .filter(|n| n.starts_with("seed"))
            .cloned()
            .collect()
    };
    assert!(
        !entered_d.is_empty(),
        "objects entered the fourth member's shard"
    );
    let left_others: BTreeSet<String> = [&a, &b, &c]
        .iter()
        .flat_map(|m| m.told.lock().unwrap().left.clone())
        .collect();
    let not_left: Vec<_> = entered_d.difference(&left_others).collect();
    assert!(
        not_left.is_empty(),
        "objects entered the fourth member's shard without leaving another's: {not_left:?}"
    );
    let moved_to_d = entered_d.len();

    // The fourth member can no longer reach the server: it loses its
    // Leases and gives its slots up; the others take them once they expire.
    proxy.set_refusing(true);
    proxy.cut();
    let cut_at = Instant::now();
    support::wait_for(
        "the cut-off member to report its lost lease",
        Duration::from_secs(60),
        || {
            let status = d.group.status();
            async move {
                match status {
                    MemberStatus::LostLease { .. } => Ok(()),
                    other => Err(other.to_string()),
                }
            }
        },
    )
    .await;
    support::wait_for(
        "the cut-off member's cache to empty",
        Duration::from_secs(60),
        || {
            let n = d.cached().len();
            async move {
                if n == 0 {
                    Ok(())
                } else {
                    Err(format!("{n} cached"))
                }
            }
        },
    )
    .await;
    support::wait_for(
        "the others to take the cut-off member's slots",
        LEASE * 2 + Duration::from_secs(30),
        || {
            let held: BTreeSet<u32> = [&a, &b, &c].iter().flat_map(|m| m.group.slots()).collect();
            let d_slots = d_slots.clone();
            async move {
                let open: Vec<_> = d_slots.iter().filter(|s| !held.contains(s)).collect();
                if open.is_empty() {
                    Ok(())
                } else {
                    Err(format!("slots {open:?} unheld"))
                }
            }
        },
    )
    .await;
    eprintln!(
        "slots of the cut-off member taken {:?} after the cut (lease duration {LEASE:?})",
        cut_at.elapsed()
    );
    stop.cancel();
    let deleted: BTreeSet<String> = churning.await.unwrap().into_iter().collect();
    settle(
        "the three members to hold everything again",
        &[&a, &b, &c],
        &api,
    )
    .await;
    stop_watching.cancel();
    let overlaps = overlaps.await.unwrap();
    assert!(
        overlaps.is_empty(),
        "two members held a slot at once: {overlaps:?}"
    );

    // Handlers: never an add of a held object or a delete of an unheld one
    // (so every object that stayed was seen once); objects that were never
    // deleted on the server only ever left shards, never were deleted.
    for m in [&a, &b, &c, &d] {
        let t = m.told.lock().unwrap();
        assert!(
            t.inconsistencies.is_empty(),
            "{}: {:?}",
            m.name,
            t.inconsistencies
        );
        let wrongly_deleted: Vec<_> = t.deleted.iter().filter(|n| !deleted.contains(*n)).collect();
        assert!(
            wrongly_deleted.is_empty(),
            "{}: objects still on the server delivered as deleted: {wrongly_deleted:?}",
            m.name
        );
    }
    // Its handler runs behind its cache: wait until it holds nothing either.
    support::wait_for(
        "the cut-off member's handler to let go of every object",
        Duration::from_secs(60),
        || {
            let held = d.told.lock().unwrap().holds.len();
            async move {
                if held == 0 {
                    Ok(())
                } else {
                    Err(format!("{held} held"))
                }
            }
        },
    )
    .await;
    let left = d.told.lock().unwrap().left.len();
    assert!(
        moved_to_d == 0 || left > 0,
        "the cut-off member's objects left its shard ({left} left, {moved_to_d} had moved to it)"
    );
    for m in [a, b, c, d] {
        m.cancel.cancel();
        m.group.leave().await;
    }
}

/// Three members, a fourth joining, one cut off, with objects created and
/// deleted throughout; the server filters by shard.
#[tokio::test]
async fn a_shard_group_shares_a_resource_as_members_join_and_fail() {
    group_scenario(true).await;
}

/// The same with the gate off: the members filter what the server sends.
#[tokio::test]
async fn a_shard_group_shares_a_resource_filtered_on_the_client() {
    group_scenario(false).await;
}

/// A member that may not write Leases says why it cannot join; with the
/// Role `rbac_role` prints (and list and watch on its resource) it joins
/// and holds everything, alone.
#[tokio::test]
async fn a_member_needs_the_printed_role_and_says_so_without_it() {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    if !support::is_testenv() {
        eprintln!("skipped: plays an ordinary user of testenv");
        return;
    }
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "group-rbac").await;
    let cm = configmaps();
    let api = Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &cm);
    support::create_many(
        &api,
        (0..20)
            .map(|i| DynamicObject::new(&format!("cm{i}"), &cm))
            .collect(),
        8,
    )
    .await;
    support::grant_configmap_read(&admin, &ns, User::Alice).await;
    let member = Member::join(support::client(User::Alice).await, &ns, "alice");
    support::wait_for(
        "the member to say it may not write its Lease",
        Duration::from_secs(30),
        || {
            let status = member.group.status();
            async move {
                match &status {
                    MemberStatus::Joining {
                        last_error: Some(e),
                    } if e.contains("forbidden") || e.contains("403") => Ok(()),
                    other => Err(other.to_string()),
                }
            }
        },
    )
    .await;
    assert!(!member.informer.has_synced(), "no ranges, no sync");

    let role: Role =
        serde_saphyr::from_str(&kube_dynamic_informer::declarative::rbac_role(&ns)).unwrap();
    let name = role.metadata.name.clone().unwrap();
    Api::<Role>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": User::Alice.subject_name() }]
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    support::wait_for(
        "the lone member to hold every slot and object",
        Duration::from_secs(60),
        || async {
            let held = member.group.slots().len();
            let cached = member.cached().len();
            if held == SLOTS as usize && cached == 20 && member.informer.has_synced() {
                Ok(())
            } else {
                Err(format!(
                    "{held} slots, {cached} objects, {}",
                    member.group.status()
                ))
            }
        },
    )
    .await;
    member.cancel.cancel();
    member.group.leave().await;
}

/// Members whose handlers do some work for each object that leaves them:
/// over a join, a graceful leave, a kill and a rejoin, an object never
/// reaches a member's handler while another member's handler holds it (the
/// old holder's `leftShard` delete comes first).
#[tokio::test]
async fn handlers_of_two_members_never_hold_an_object_at_once() {
    let Some(config) = admin_config(false).await else {
        return;
    };
    let client = admin(false).await.unwrap();
    let (ns, api) = seeded(&client, "handover").await;
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let work = Duration::from_millis(2);
    let join = |client: Client, name: &str| Member::join_with(client, &ns, name, &ledger, work);
    let direct = || Client::try_from(config.clone()).unwrap();
    let proxy = Proxy::start(crate::reliability::server_addr(&config)).await;
    let mut via_proxy = config.clone();
    via_proxy.cluster_url = proxy.url().parse().unwrap();

    let a = join(direct(), "member-a");
    let b = join(direct(), "member-b");
    settle("two members", &[&a, &b], &api).await;
    let c = join(Client::try_from(via_proxy).unwrap(), "member-c");
    settle("a third member joining", &[&a, &b, &c], &api).await;
    let d = join(direct(), "member-d");
    settle("a fourth member joining", &[&a, &b, &c, &d], &api).await;

    // A graceful leave: the group first, so that the handlers are told.
    let d_slots: BTreeSet<u32> = d.group.slots().into_iter().collect();
    let leaving = Instant::now();
    d.group.leave().await;
    d.cancel.cancel();
    support::wait_for(
        "the others to take the leaving member's slots",
        Duration::from_secs(30),
        || {
            let held: BTreeSet<u32> = [&a, &b, &c].iter().flat_map(|m| m.group.slots()).collect();
            let open = d_slots.difference(&held).count();
            async move {
                if open == 0 {
                    Ok(())
                } else {
                    Err(format!("{open} slots unheld"))
                }
            }
        },
    )
    .await;
    eprintln!(
        "hand-over after a graceful leave: {} slots held by the others {:?} after the leave began",
        d_slots.len(),
        leaving.elapsed()
    );
    settle("the fourth member leaving", &[&a, &b, &c], &api).await;

    // A kill: the process is gone with its handlers, its Leases expire.
    proxy.set_refusing(true);
    proxy.cut();
    c.cancel.cancel();
    ledger.lock().unwrap().die("member-c");
    settle("the third member killed", &[&a, &b], &api).await;

    // It comes back under the same name.
    ledger.lock().unwrap().revive("member-c");
    let c2 = join(direct(), "member-c");
    settle("the third member rejoining", &[&a, &b, &c2], &api).await;

    let (overlaps, handed_over) = {
        let ledger = ledger.lock().unwrap();
        (ledger.overlaps.clone(), ledger.handed_over)
    };
    assert!(
        overlaps.is_empty(),
        "{} objects reached a handler while another member's held them, e.g. {:?}",
        overlaps.len(),
        &overlaps[..overlaps.len().min(5)]
    );
    assert!(
        handed_over > 100,
        "objects were handed over between members ({handed_over})"
    );
    eprintln!("{handed_over} objects handed over between members");
    for m in [a, b, c2] {
        m.group.leave().await;
        m.cancel.cancel();
    }
    c.group.leave().await;
}
