//! Resource sets: the informers a config declares, kept in step with the
//! cluster's discovery and with the config itself while they run.
//!
//! The [layer docs](crate::declarative) say more.

mod access;
mod follow;
mod plan;
mod reload;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kube_client::Client;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cache::index::IndexFn;
use crate::cache::{ChangePredicate, Condition};
use crate::declarative::DeclarativeError;
pub use access::{AccessPolicy, SkippedMember};
pub use follow::ReloadTriggers;
pub use reload::ReloadStatus;

use crate::declarative::config::{
    Compiled, ConfigProblem, InformerSet, ShardGroupSpec, pointer_path, position_of, read_text,
};
use crate::declarative::shard_group::ShardGroup;
use crate::factory::access::{AccessCheck, AccessTable, Allowed};
use crate::factory::{FactoryError, InformerFactory, InformerHandle};
use crate::informer::options::{InformerOptions, WhenNotServed};
use crate::informer::{HandlerOptions, InformerStatus, NotSynced};
use crate::vocabulary::error_chain;
use crate::vocabulary::resource::ResourceKey;

/// One informer of a set: the entry of the config it comes from, the
/// resource, and the informer.
#[derive(Clone, Debug)]
pub struct SetMember {
    /// The name of the config entry: an informer's name, or a pattern's.
    pub entry: String,
    /// The resource: as written for an informer named one by one
    /// (`deploy`, `widgets.example.com`), or the key a pattern selected
    /// (`widgets.v1.example.com`).
    pub resource: String,
    /// Whether a pattern selected it.
    pub from_pattern: bool,
    /// The informer and its lister (shared with every other entry whose
    /// options build the same cache).
    pub informer: InformerHandle,
    /// Whether the entry marks its objects sensitive (see
    /// [`Redaction`](crate::cache::Redaction)): a mark of the entry, not of
    /// the informer it shares.
    pub sensitive: bool,
    /// Its indexes, compiled from the entry's JMESPath expressions.
    pub indexes: BTreeMap<String, IndexFn>,
    /// The objects its handlers want (the entry's `filter`): a mark of the
    /// entry, not of the informer it shares.
    pub filter: Option<Condition>,
    /// The updates its handlers want (the entry's `changes`).
    pub changes: Option<ChangePredicate>,
}

impl SetMember {
    /// The options a handler of this member registers with to receive what
    /// its entry asks for: its [`filter`](Self::filter) and
    /// [`changes`](Self::changes) (the rest as
    /// [`HandlerOptions::default`]; set them on what this returns).
    ///
    /// ```no_run
    /// # async fn demo(set: kube_dynamic_informer::declarative::ResourceSet) {
    /// use kube_dynamic_informer::informer::Event;
    ///
    /// for member in set.members().await {
    ///     let options = member.handler_options().name("audit");
    ///     member
    ///         .informer
    ///         .informer()
    ///         .add_handler_with(|e: Event| println!("{}", e.kind()), options);
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn handler_options(&self) -> HandlerOptions {
        let mut options = HandlerOptions::default();
        options.filter = self.filter.clone();
        options.changes = self.changes.clone();
        options
    }
}

/// Why a member left the set.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Removal {
    /// Its pattern no longer selects the resource: the CRD was deleted,
    /// another version became the preferred one, or its categories changed.
    NoLongerSelected,
    /// A reload removed its entry, or changed it so that the informer was
    /// replaced (a [`SetEvent::Added`] follows for the new one).
    Reloaded,
    /// Access was checked and the user may no longer list or watch it
    /// ([`AccessPolicy::Skip`]).
    Forbidden(String),
}

impl fmt::Display for Removal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Removal::NoLongerSelected => f.write_str("no longer selected by its pattern"),
            Removal::Reloaded => f.write_str("changed or removed by a reload"),
            Removal::Forbidden(why) => write!(f, "access denied: {why}"),
        }
    }
}

/// A change of a [`ResourceSet`], as [`ResourceSet::subscribe`] delivers it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SetEvent {
    /// A member joined (and its informer started, if the set has).
    Added(SetMember),
    /// A member's informer got new indexes in place (a reload added them);
    /// its cache and watch are unchanged.
    Updated(SetMember),
    /// A member left; its informer was stopped unless another member shares
    /// it.
    Removed {
        /// The member.
        member: SetMember,
        /// Why.
        reason: Removal,
    },
    /// A member was not started, or stopped, because access was refused
    /// ([`AccessPolicy::Skip`]); it is checked again periodically.
    Skipped(SkippedMember),
    /// A reload was applied or refused.
    Reloaded(ReloadStatus),
}

/// A snapshot of a set's state, for status pages.
#[derive(Clone, Debug)]
pub struct SetStatus {
    /// Each member and its informer's status, ordered by entry and
    /// resource.
    pub members: Vec<(SetMember, InformerStatus)>,
    /// Members left out: not served under `whenNotServed: skip`, or
    /// forbidden under [`AccessPolicy::Skip`].
    pub skipped: Vec<SkippedMember>,
    /// The last reload, if any was tried.
    pub last_reload: Option<ReloadStatus>,
}

/// The identity of a member: entry name and resource (as written, or the
/// selected key).
type MemberKey = (String, String);

struct State {
    config: InformerSet,
    members: BTreeMap<MemberKey, SetMember>,
    skipped: Vec<SkippedMember>,
    subscribers: Vec<mpsc::UnboundedSender<SetEvent>>,
    last_reload: Option<ReloadStatus>,
}

struct Inner {
    factory: InformerFactory,
    policy: AccessPolicy,
    /// The config's shard group, joined when the set was made: every
    /// informer without a static shard keeps the slots this member holds.
    shard_group: Option<(ShardGroupSpec, ShardGroup)>,
    state: tokio::sync::Mutex<State>,
    /// A copy of `State::last_reload` readable without waiting.
    last_reload: parking_lot::Mutex<Option<ReloadStatus>>,
    cancel: CancellationToken,
    task: parking_lot::Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The informers of a config, following discovery, reloads and access; see
/// the [module docs](crate::declarative). Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct ResourceSet {
    inner: Arc<Inner>,
}

impl fmt::Debug for ResourceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceSet")
            .field("factory", &self.inner.factory)
            .field("policy", &self.inner.policy)
            .finish_non_exhaustive()
    }
}

/// What planning a config produced.
#[derive(Default)]
struct Plan {
    members: BTreeMap<MemberKey, Planned>,
    skipped: Vec<SkippedMember>,
    /// Informers the factory created while planning, which no current
    /// member holds: stopped again if the plan is refused.
    created: Vec<InformerHandle>,
    errors: Vec<PlanError>,
}

/// Why an entry (or the whole config) could not be planned.
struct PlanError {
    /// Where in the config: a JSON pointer.
    pointer: String,
    message: String,
    /// The entry's name; `None` for an error of the whole config.
    entry: Option<String>,
    /// Why, when it is the cluster's answer (a resource not served under
    /// `whenNotServed: fail`, a refused or failed request) rather than a
    /// mistake in the config.
    answer: Option<NotSynced>,
}

/// Why an entry of a set has no informer in a cluster right now, as
/// [`ResourceSet::converge`] reports it.
#[derive(Clone, Debug)]
pub(crate) struct EntryFailure {
    /// What went wrong, as text.
    pub(crate) error: String,
    /// Why, when it is the cluster's answer.
    pub(crate) answer: Option<NotSynced>,
    /// Whether the entry was skipped (not served under `whenNotServed:
    /// skip`, or forbidden under [`AccessPolicy::Skip`]): the set rechecks
    /// it by itself.
    pub(crate) skipped: bool,
}

/// What one entry asks for, before an informer is had.
struct Want {
    /// The entry's JSON pointer.
    at: String,
    entry: String,
    resource: String,
    target: Target,
    options: InformerOptions,
    /// The resource, when discovery knows it.
    known: Option<crate::vocabulary::resource::KnownResource>,
    /// The entry's indexes, `filter` and `changes`.
    compiled: Compiled,
}

enum Target {
    /// An informer named one by one: its resource as written
    /// ([`Want::resource`]).
    Named,
    /// A resource a pattern selected.
    Key(ResourceKey),
}

impl Plan {
    /// The refusal of a plan with errors, each located in `source`.
    fn refusal(&self, source: Option<(&Path, &str)>) -> Option<DeclarativeError> {
        let reasons: Option<Vec<&'static str>> = self
            .errors
            .iter()
            .map(|e| e.answer.as_ref().map(NotSynced::reason))
            .collect();
        let shared = match reasons.as_deref() {
            Some([first, rest @ ..]) if rest.iter().all(|r| r == first) => *first,
            _ => "failed",
        };
        (!self.errors.is_empty()).then(|| DeclarativeError::Config {
            errors: locate(&self.errors, source),
            reason: shared,
        })
    }

    /// The errors of entries, by entry name (the first of each).
    fn failures(&self) -> BTreeMap<String, EntryFailure> {
        let mut failures = BTreeMap::new();
        for e in &self.errors {
            if let Some(entry) = &e.entry {
                failures
                    .entry(entry.clone())
                    .or_insert_with(|| EntryFailure {
                        error: e.message.clone(),
                        answer: e.answer.clone(),
                        skipped: false,
                    });
            }
        }
        failures
    }
}

struct Planned {
    member: SetMember,
    /// Whether the current member's informer must make way for a new one
    /// (an index was removed or changed).
    replace: bool,
}

impl ResourceSet {
    /// Builds the set of `config` in a new factory whose options are the
    /// config's `defaults`, without starting it (add handlers through
    /// [`subscribe`](Self::subscribe), then [`start`](Self::start)).
    ///
    /// # Errors
    /// Every informer or pattern that cannot be created, located in the
    /// config's entries (no file positions: see
    /// [`from_file`](Self::from_file)).
    pub async fn new(client: Client, config: InformerSet) -> Result<Self, DeclarativeError> {
        Self::with_policy(client, config, AccessPolicy::default()).await
    }

    /// As [`new`](Self::new), with an access policy.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub async fn with_policy(
        client: Client,
        config: InformerSet,
        policy: AccessPolicy,
    ) -> Result<Self, DeclarativeError> {
        let factory = InformerFactory::with_options(client, config.defaults.clone());
        Self::in_factory(factory, config, policy, None).await
    }

    /// Reads a config file and builds its set; see [`new`](Self::new).
    ///
    /// # Errors
    /// Every problem of the file, with file, line and column, including
    /// resources the cluster refuses.
    pub async fn from_file(
        client: Client,
        path: impl AsRef<Path>,
    ) -> Result<Self, DeclarativeError> {
        let path = path.as_ref();
        let text = read_text(path)?;
        let config = InformerSet::load_str(&text, path)?;
        let factory = InformerFactory::with_options(client, config.defaults.clone());
        let source = Some((path, text.as_str()));
        Self::in_factory(factory, config, AccessPolicy::default(), source).await
    }

    /// Builds the set of `config` in `factory`; `source` (file and text)
    /// locates errors, and makes this first load the
    /// [`last_reload`](Self::last_reload).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub async fn in_factory(
        factory: InformerFactory,
        config: InformerSet,
        policy: AccessPolicy,
        source: Option<(&Path, &str)>,
    ) -> Result<Self, DeclarativeError> {
        let join = |spec: &ShardGroupSpec| {
            let client = factory.client().clone();
            let group = spec
                .config()
                .and_then(|c| ShardGroup::join(client, c).map_err(|e| error_chain(&e)));
            group.map(|group| (spec.clone(), group)).map_err(|message| {
                let file = source.map_or_else(|| Path::new("<input>"), |(f, _)| f);
                DeclarativeError::whole_file(file, format!("shardGroup: {message}"))
            })
        };
        let shard_group = config.shard_group.as_ref().map(join).transpose()?;
        let set = ResourceSet {
            inner: Arc::new(Inner {
                factory,
                policy,
                shard_group,
                state: tokio::sync::Mutex::new(State {
                    config: config.clone(),
                    members: BTreeMap::new(),
                    skipped: Vec::new(),
                    subscribers: Vec::new(),
                    last_reload: None,
                }),
                last_reload: parking_lot::Mutex::new(None),
                cancel: CancellationToken::new(),
                task: parking_lot::Mutex::new(None),
            }),
        };
        let mut state = set.inner.state.lock().await;
        let plan = set.plan(&state, &config).await;
        if let Some(err) = plan.refusal(source) {
            set.discard(&state, plan.created).await;
            drop(state);
            set.inner.factory.shutdown().await;
            return Err(err);
        }
        let counts = set.commit(&mut state, plan, Removal::Reloaded).await;
        if let Some((_, text)) = source {
            let status = reload::succeeded(reload::content_hash(text.as_bytes()), &counts);
            set.record_locked(&mut state, status);
        }
        drop(state);
        Ok(set)
    }

    /// The factory holding the informers.
    #[must_use]
    pub fn factory(&self) -> &InformerFactory {
        &self.inner.factory
    }

    /// The current members, and a channel of every change from now on:
    /// together, no change is missed.
    pub async fn subscribe(&self) -> (Vec<SetMember>, mpsc::UnboundedReceiver<SetEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.inner.state.lock().await;
        state.subscribers.push(tx);
        (state.members.values().cloned().collect(), rx)
    }

    /// The current members, ordered by entry and resource.
    pub async fn members(&self) -> Vec<SetMember> {
        let state = self.inner.state.lock().await;
        state.members.values().cloned().collect()
    }

    /// The members with their statuses, the members left out, and the last
    /// reload.
    pub async fn status(&self) -> SetStatus {
        let state = self.inner.state.lock().await;
        SetStatus {
            members: state
                .members
                .values()
                .map(|m| (m.clone(), m.informer.status()))
                .collect(),
            skipped: state.skipped.clone(),
            last_reload: state.last_reload.clone(),
        }
    }

    /// Asks the server whether each member's informer may list and watch
    /// what it watches (see [`crate::factory`]): one row per resource and
    /// namespace. Members whose resource is not served are not asked about.
    /// Whatever the [`AccessPolicy`], this only reports.
    pub async fn check_access(&self) -> AccessTable {
        let members = self.members().await;
        let mut checks: Vec<AccessCheck> = Vec::new();
        for m in &members {
            let (Some(served), Some(scope)) = (m.informer.api_resource(), m.informer.scope())
            else {
                continue;
            };
            let check = AccessCheck::new(
                ResourceKey::from(&served),
                scope == crate::vocabulary::scope::Scope::Namespaced,
                m.informer.options().watch.namespaces.clone(),
            );
            if !checks.contains(&check) {
                checks.push(check);
            }
        }
        AccessTable::check(self.inner.factory.client(), &checks).await
    }

    /// The result of the last reload ([`apply`](Self::apply) or
    /// [`reload_file`](Self::reload_file)): when, the hash of the content,
    /// whether it was applied, and the errors if not. `None` before the
    /// first. Never waits: for metrics and health endpoints.
    #[must_use]
    pub fn last_reload(&self) -> Option<ReloadStatus> {
        self.inner.last_reload.lock().clone()
    }

    /// Starts the factory (every informer, and the discovery watch) and
    /// the task that follows discovery (and rechecks access). Calling it
    /// again does nothing.
    ///
    /// # Errors
    /// [`FactoryError::NoRuntime`] outside a tokio runtime;
    /// [`FactoryError::ShutDown`].
    pub fn start(&self) -> Result<(), FactoryError> {
        self.inner.factory.start()?;
        let mut task = self.inner.task.lock();
        if task.is_none() {
            let weak = Arc::downgrade(&self.inner);
            let cancel = self.inner.cancel.clone();
            let discovery = self.inner.factory.discovery().subscribe();
            let recheck = self.inner.policy.recheck_period();
            *task = Some(tokio::spawn(follow(weak, cancel, discovery, recheck)));
        }
        Ok(())
    }

    /// Stops following, stops every informer and waits for them.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
        self.inner.factory.shutdown().await;
        // The informers are stopped: hand the slots over at once.
        if let Some((_, group)) = &self.inner.shard_group {
            group.leave().await;
        }
    }

    /// Brings pattern members in line with discovery (and access) under the
    /// current config. Resources that fail here are logged and left out:
    /// discovery moves on, and the next change tries again.
    async fn reconcile(&self) {
        let mut state = self.inner.state.lock().await;
        let config = state.config.clone();
        self.converge_locked(&mut state, config, Removal::NoLongerSelected)
            .await;
    }

    /// Makes `config` the set's as far as the cluster allows: unlike
    /// [`apply`](Self::apply), which refuses a config with any error, the
    /// entries that can be had now run, and those that cannot are left out
    /// (members they had stay) and returned, by entry name, to be tried
    /// again.
    pub(crate) async fn converge(&self, config: InformerSet) -> BTreeMap<String, EntryFailure> {
        let mut state = self.inner.state.lock().await;
        self.converge_locked(&mut state, config, Removal::Reloaded)
            .await
    }

    async fn converge_locked(
        &self,
        state: &mut State,
        config: InformerSet,
        reason: Removal,
    ) -> BTreeMap<String, EntryFailure> {
        let plan = self.plan(state, &config).await;
        for e in &plan.errors {
            tracing::warn!(entry = %pointer_path(&e.pointer), error = %e.message, "resource set: left out");
        }
        let failures = plan.failures();
        state.config = config;
        self.commit(state, plan, reason).await;
        failures
    }

    /// Stops the informers a refused plan created.
    async fn discard(&self, state: &State, created: Vec<InformerHandle>) {
        for informer in created {
            if !state.members.values().any(|m| m.informer == informer) {
                self.inner.factory.remove_informer(&informer).await;
            }
        }
    }

    /// Makes `plan` the set: stops what left, replaces what must be, adds
    /// indexes, and tells subscribers.
    async fn commit(&self, state: &mut State, plan: Plan, reason: Removal) -> Counts {
        let mut counts = Counts::default();
        let mut events = Vec::new();
        let mut next: BTreeMap<MemberKey, SetMember> = BTreeMap::new();
        self.remove_leaving(state, &plan, &reason, &mut counts, &mut events)
            .await;
        for (key, planned) in plan.members {
            let (mut member, replace) = (planned.member, planned.replace);
            let current = state.members.get(&key).cloned();
            if replace && let Some(current) = &current {
                let shared = next.values().any(|m| m.informer == current.informer)
                    || state
                        .members
                        .iter()
                        .any(|(k, m)| *k != key && m.informer == current.informer);
                match self.replace(&key, current, shared).await {
                    Some(fresh) => member.informer = fresh,
                    None if shared => {}
                    None => continue,
                }
            }
            let added_indexes = add_indexes(&member);
            match current {
                None => {
                    counts.added += 1;
                    events.push(SetEvent::Added(member.clone()));
                }
                // Another informer, or the same one now shown otherwise
                // (its entry's `sensitive` mark, filter or changes
                // changed): its handlers register again.
                Some(current)
                    if current.informer != member.informer
                        || current.sensitive != member.sensitive
                        || current.filter != member.filter
                        || current.changes != member.changes =>
                {
                    counts.replaced += 1;
                    events.push(SetEvent::Removed {
                        member: current,
                        reason: reason.clone(),
                    });
                    events.push(SetEvent::Added(member.clone()));
                }
                Some(_) => {
                    counts.kept += 1;
                    if added_indexes {
                        events.push(SetEvent::Updated(member.clone()));
                    }
                }
            }
            state.members.remove(&key);
            next.insert(key, member);
        }
        state.members = next;
        // A member skipped now and not before is news.
        let before: BTreeSet<_> = state
            .skipped
            .iter()
            .map(|s| (&s.entry, &s.resource))
            .collect();
        let news = plan
            .skipped
            .iter()
            .filter(|s| !before.contains(&(&s.entry, &s.resource)));
        events.extend(news.cloned().map(SetEvent::Skipped));
        state.skipped = plan.skipped;
        for event in &events {
            send(state, event);
        }
        counts
    }

    /// A new informer for `current`, whose index was removed or changed;
    /// none while another member shares it (it stays until neither needs
    /// it), or when the factory refuses the new one (logged).
    async fn replace(
        &self,
        key: &MemberKey,
        current: &SetMember,
        shared: bool,
    ) -> Option<InformerHandle> {
        if shared {
            tracing::warn!(entry = %key.0, resource = %key.1, "resource set: an index was removed or changed on an informer another entry shares; it stays until neither needs it");
            return None;
        }
        let factory = &self.inner.factory;
        factory.remove_informer(&current.informer).await;
        let options = current.informer.informer().options().clone();
        let resource = current.informer.resource().clone();
        match factory.for_resource_with(resource, |_| options).await {
            Ok(fresh) => Some(fresh),
            Err(e) => {
                tracing::warn!(entry = %key.0, resource = %key.1, error = %error_chain(&e), "resource set: could not replace an informer");
                None
            }
        }
    }

    /// Removes the members the plan no longer has, stopping their informers
    /// unless another planned member shares one; says why each left.
    async fn remove_leaving(
        &self,
        state: &mut State,
        plan: &Plan,
        reason: &Removal,
        counts: &mut Counts,
        events: &mut Vec<SetEvent>,
    ) {
        let (leaving, staying): (BTreeMap<_, _>, _) = std::mem::take(&mut state.members)
            .into_iter()
            .partition(|(key, _)| !plan.members.contains_key(key));
        state.members = staying;
        for (key, member) in leaving {
            if !plan
                .members
                .iter()
                .any(|(k, p)| *k != key && p.member.informer == member.informer)
            {
                self.inner.factory.remove_informer(&member.informer).await;
            }
            let why = match plan
                .skipped
                .iter()
                .find(|s| (s.entry.clone(), s.resource.clone()) == key)
            {
                Some(s) if matches!(self.inner.policy, AccessPolicy::Skip { .. }) => {
                    Removal::Forbidden(s.reason.clone())
                }
                _ => reason.clone(),
            };
            counts.removed += 1;
            events.push(SetEvent::Removed {
                member,
                reason: why,
            });
        }
    }
}

#[derive(Default)]
pub(super) struct Counts {
    kept: usize,
    added: usize,
    removed: usize,
    replaced: usize,
}

/// Adds the member's indexes its informer lacks; true if any was added.
fn add_indexes(member: &SetMember) -> bool {
    let have = member.informer.informer().store().index_names();
    let mut added = false;
    for (name, func) in member
        .indexes
        .iter()
        .filter(|(name, _)| !have.contains(name))
    {
        match member
            .informer
            .informer()
            .add_index(name.clone(), func.clone())
        {
            Ok(()) => added = true,
            Err(e) => {
                tracing::warn!(entry = %member.entry, index = %name, error = %error_chain(&e), "resource set: could not add an index")
            }
        }
    }
    added
}

fn send(state: &mut State, event: &SetEvent) {
    state
        .subscribers
        .retain(|tx| tx.send(event.clone()).is_ok());
}

/// Where in an entry a factory error belongs.
fn error_pointer(at: &str, e: &FactoryError) -> String {
    match e {
        FactoryError::ClusterScoped(_) => format!("{at}/namespaces"),
        FactoryError::Selector { .. } => format!("{at}/labelSelector"),
        _ => format!("{at}/resource"),
    }
}

/// Planning errors as config errors, with positions when the text is known.
fn locate(errors: &[PlanError], source: Option<(&Path, &str)>) -> Vec<ConfigProblem> {
    errors
        .iter()
        .map(|e| ConfigProblem {
            file: source.map_or_else(|| "<config>".into(), |(p, _)| p.to_path_buf()),
            position: source.and_then(|(_, text)| position_of(text, &e.pointer)),
            path: pointer_path(&e.pointer),
            message: e.message.clone(),
        })
        .collect()
}

/// Follows discovery (and rechecks access) until `cancel`.
async fn follow(
    inner: std::sync::Weak<Inner>,
    cancel: CancellationToken,
    mut discovery: tokio::sync::watch::Receiver<Arc<crate::factory::discovery::DiscoverySnapshot>>,
    recheck: Option<Duration>,
) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            changed = discovery.changed() => if changed.is_err() { return },
            () = crate::factory::sleep_or_never(recheck) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        ResourceSet { inner }.reconcile().await;
    }
}

#[cfg(test)]
mod tests;
