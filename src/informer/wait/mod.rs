//! Waiting until a condition holds for objects of one or several
//! informers, answered from their caches as events arrive.
//!
//! The [layer docs](crate::informer) say more.

mod goal;
mod objects;
mod report;
mod tracker;

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::{self, BoxStream, SelectAll};
use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tokio::time::Instant;

pub use goal::{Quantifier, WaitFor};
pub use objects::{ObjectSelection, Objects};
pub use report::{InformerOutcome, ObjectOutcome, ObjectState, WaitProgress, WaitReport};

use super::listener::{Delivery, EventStream, HandlerOptions};
use super::status::InformerStatus;
use super::sync::{NotSynced, SyncPolicy, deadline_passed};
use super::{InformerError, SharedInformer};
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::setters;
use objects::Membership;
use tracker::{MistakeHook, Tracker};

/// How long a wait goes on by default: kubectl's 30 s.
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// How far past its deadline a wait whose events never pause (its stream
/// always has more) reads on before it gives up.
const FLOOD_GRACE: Duration = Duration::from_secs(2);

/// A wait until [`WaitFor`] is true of all, any or none of some objects of
/// one or several informers.
///
/// It is answered from the caches: each informer hands the wait its cached
/// objects, then every change, as it hands them to an event handler (a
/// registration of its own, coalesced, without resync); each object is
/// evaluated as its event arrives, and the wait returns as soon as the
/// event that makes it hold is read. It sends no request of its own and
/// never polls.
///
/// An informer may be one whose resource is not served yet (a factory's
/// informer for a CRD about to be installed): the wait goes on until the
/// resource is served and its objects listed, within the timeout.
///
/// - [`Quantifier::All`] holds once every informer's cache is whole and
///   each object that counts is true; a condition needs at least one
///   object (objects not created yet are waited for), deletion is true of
///   no object at all.
/// - [`Quantifier::Any`] holds as soon as one object is true.
/// - [`Quantifier::None`] holds once every cache is whole and no object is
///   true.
///
/// Which objects count ([`Objects`]): named objects always, in the cache or
/// not (one not there is `missing`, and is what [`WaitFor::Deleted`]
/// waits for); a selection counts the cached objects it picks as they are
/// now, and, waiting for deletion, those it picked at some time during the
/// wait (each true once it is gone, or out of the selection).
///
/// A condition that is not a boolean on an object, or fails on it, counts
/// as not met; it is said once per object (a `tracing` warning, and to the
/// hook of [`on_mistake`](Self::on_mistake)) and counted in the report.
///
/// ```no_run
/// # async fn demo(factory: kube_dynamic_informer::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use kube_dynamic_informer::informer::{ObjectSelection, Objects, Wait, WaitFor};
/// use kube_dynamic_informer::vocabulary::Selector;
///
/// let deployments = factory.for_resource("deployments.apps").await?;
/// let widgets = factory.for_resource("widgets.example.com").await?; // maybe not installed yet
/// factory.start()?;
///
/// let web = ObjectSelection::default().namespace("shop").labels(Selector::parse("app=web")?);
/// let report = Wait::new(WaitFor::condition("status.readyReplicas == spec.replicas")?)
///     .on(&deployments, web.clone())
///     .timeout(Duration::from_secs(120))
///     .run()
///     .await?;
/// println!("{report}"); // all of 3 objects hold 'status.readyReplicas == spec.replicas'
///
/// // Across informers: every Widget ready and no web Deployment paused.
/// Wait::new(WaitFor::parse("condition=Ready")?)
///     .on(&widgets, Objects::all())
///     .run()
///     .await?;
/// Wait::new(WaitFor::condition("spec.paused == `true`")?)
///     .none()
///     .on(&deployments, web)
///     .run()
///     .await?;
/// # Ok(()) }
/// ```
pub struct Wait {
    goal: WaitFor,
    quantifier: Quantifier,
    timeout: Duration,
    policy: SyncPolicy,
    sources: Vec<(SharedInformer, Objects)>,
    progress: watch::Sender<WaitProgress>,
    on_mistake: Option<MistakeHook>,
}

impl Wait {
    /// A wait for `goal` to be true of all objects, of no informer yet
    /// (add them with [`on`](Self::on)), for at most
    /// [`DEFAULT_WAIT_TIMEOUT`], through every failure to sync
    /// ([`SyncPolicy::KeepWaiting`]).
    #[must_use]
    pub fn new(goal: impl Into<WaitFor>) -> Self {
        Wait {
            goal: goal.into(),
            quantifier: Quantifier::All,
            timeout: DEFAULT_WAIT_TIMEOUT,
            policy: SyncPolicy::KeepWaiting,
            sources: Vec::new(),
            progress: watch::Sender::new(WaitProgress::default()),
            on_mistake: None,
        }
    }

    setters! {
        /// Of how many objects the goal must be true.
        quantifier(quantifier: Quantifier) => quantifier;

        /// How long to wait. `Duration::ZERO` checks once, against the caches
        /// as they are (their objects are handed to the wait at once; an
        /// informer not synced yet has not got them all). [`Duration::MAX`]
        /// waits for ever.
        timeout(timeout: Duration) => timeout;
    }

    /// [`Quantifier::All`] (the default).
    #[must_use]
    pub fn all(self) -> Self {
        self.quantifier(Quantifier::All)
    }

    /// [`Quantifier::Any`].
    #[must_use]
    pub fn any(self) -> Self {
        self.quantifier(Quantifier::Any)
    }

    /// [`Quantifier::None`].
    #[must_use]
    pub fn none(self) -> Self {
        self.quantifier(Quantifier::None)
    }

    /// Whether a cache the server refuses (403, 401) ends the wait at once
    /// ([`SyncPolicy::GiveUpWhenRefused`]) or is waited for until the
    /// timeout, access being perhaps granted meanwhile (the default).
    #[must_use]
    pub fn sync_policy(mut self, policy: SyncPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Adds `objects` of `informer` (a [`SharedInformer`] or a factory's
    /// [`InformerHandle`](crate::factory::InformerHandle)).
    #[must_use]
    pub fn on(
        mut self,
        informer: &impl AsRef<SharedInformer>,
        objects: impl Into<Objects>,
    ) -> Self {
        self.sources
            .push((informer.as_ref().clone(), objects.into()));
        self
    }

    /// Adds the same `objects` of each informer: a factory's or a resource
    /// set's informers waited for together.
    ///
    /// ```no_run
    /// # async fn demo(set: kube_dynamic_informer::declarative::ResourceSet) -> Result<(), Box<dyn std::error::Error>> {
    /// use kube_dynamic_informer::informer::{Objects, Wait, WaitFor};
    ///
    /// let members = set.members().await;
    /// Wait::new(WaitFor::condition("status.ready")?)
    ///     .on_each(members.iter().map(|m| &m.informer), Objects::all())
    ///     .run()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_each<I>(mut self, informers: I, objects: impl Into<Objects>) -> Self
    where
        I: IntoIterator,
        I::Item: AsRef<SharedInformer>,
    {
        let objects = objects.into();
        for informer in informers {
            self.sources
                .push((informer.as_ref().clone(), objects.clone()));
        }
        self
    }

    /// Calls `hook` with each object the condition is a mistake on (not a
    /// boolean, or failing), once per object, as it is found: for a
    /// program that says so where its user looks (`kdi wait` on stderr).
    /// Such an object counts as not met; it is also said in a `tracing`
    /// warning and counted in the report.
    ///
    /// ```
    /// use kube_dynamic_informer::informer::{Wait, WaitFor};
    ///
    /// let wait = Wait::new(WaitFor::condition("status.phase")?).on_mistake(|object| {
    ///     eprintln!("{} {}: {}", object.resource, object.key, object.state);
    /// });
    /// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
    /// ```
    #[must_use]
    pub fn on_mistake(mut self, hook: impl Fn(&ObjectOutcome) + Send + Sync + 'static) -> Self {
        self.on_mistake = Some(std::sync::Arc::new(hook));
        self
    }

    /// Where the wait stands, updated as it runs (how many objects are
    /// true of how many, how many caches it has whole): for a progress
    /// report.
    #[must_use]
    pub fn progress(&self) -> watch::Receiver<WaitProgress> {
        self.progress.subscribe()
    }

    /// Waits.
    ///
    /// # Errors
    /// - [`InformerError::ConditionTimedOut`] when the timeout passed
    ///   first, with the [`WaitReport`]: every object that counted and why
    ///   it was not true, and every cache that had not synced and why;
    /// - [`InformerError::Index`] at once for a selection by an index the
    ///   informer does not have;
    /// - [`InformerError::NotSynced`] at the first refusal (403, 401) of a
    ///   cache not synced, under [`SyncPolicy::GiveUpWhenRefused`];
    /// - [`InformerError::Stopped`] when an informer stops.
    pub async fn run(self) -> Result<WaitReport, InformerError> {
        let started = Instant::now();
        let deadline = started.checked_add(self.timeout);
        let mut trackers = Vec::with_capacity(self.sources.len());
        let mut deliveries: SelectAll<BoxStream<'static, (usize, Option<Delivery>)>> =
            SelectAll::new();
        let mut statuses: SelectAll<BoxStream<'static, usize>> = SelectAll::new();
        for (i, (informer, objects)) in self.sources.iter().enumerate() {
            let resource = informer.shared.key.clone();
            let membership = Membership::new(objects, &informer.store(), &resource)?;
            trackers.push(Tracker::new(
                resource,
                membership,
                &self.goal,
                self.on_mistake.clone(),
            ));
            let events = informer.events_with(
                HandlerOptions::default()
                    .name("wait")
                    .coalesce(true)
                    .resync(Duration::ZERO),
            );
            deliveries.push(
                Deliveries(events)
                    .map(move |d| (i, Some(d)))
                    .chain(stream::once(async move { (i, None) }))
                    .boxed(),
            );
            statuses.push(
                stream::unfold(informer.watch_status(), move |mut rx| async move {
                    rx.changed().await.ok()?;
                    Some((i, rx))
                })
                .boxed(),
            );
        }
        for i in 0..self.sources.len() {
            self.check_status(&trackers, i)?;
        }
        let mut sleep = std::pin::pin!(deadline_passed(deadline));
        loop {
            self.publish(&trackers);
            if self.holds(&trackers) {
                return Ok(self.report(&trackers, true, started));
            }
            let overdue = deadline
                .and_then(|d| d.checked_add(FLOOD_GRACE))
                .is_some_and(|d| Instant::now() >= d);
            if overdue {
                break;
            }
            // Events first: a wait whose time is up still reads what its
            // caches have already handed it (all of it, for a zero
            // timeout) before it gives up.
            tokio::select! {
                biased;
                Some((i, delivery)) = deliveries.next(), if !deliveries.is_empty() => match delivery {
                    Some(Delivery::Event(event)) => trackers[i].apply(&event),
                    Some(Delivery::Synced) => trackers[i].synced = true,
                    None => {
                        return Err(InformerError::Stopped { resource: trackers[i].resource.clone() });
                    }
                },
                Some(i) = statuses.next() => self.check_status(&trackers, i)?,
                () = &mut sleep => break,
            }
        }
        self.publish(&trackers);
        let report = self.report(&trackers, self.holds(&trackers), started);
        if report.holds {
            return Ok(report);
        }
        Err(InformerError::ConditionTimedOut {
            report: Box::new(report),
        })
    }

    /// Whether the goal holds, by the quantifier's rules.
    fn holds(&self, trackers: &[Tracker]) -> bool {
        let synced = trackers.iter().all(|t| t.synced);
        let objects: usize = trackers.iter().map(|t| t.objects).sum();
        let holding: usize = trackers.iter().map(|t| t.holding).sum();
        match self.quantifier {
            Quantifier::All => {
                synced
                    && holding == objects
                    && (objects > 0 || matches!(self.goal, WaitFor::Deleted))
            }
            // A named object not there counts as deleted only once the
            // cache is whole.
            Quantifier::Any => trackers
                .iter()
                .any(|t| t.holding > 0 && (t.synced || !matches!(self.goal, WaitFor::Deleted))),
            Quantifier::None => synced && holding == 0,
        }
    }

    /// What the status of informer `i` ends: the wait, when it stopped
    /// (its registration may have come after it closed its handlers);
    /// under [`SyncPolicy::GiveUpWhenRefused`], a refusal of its cache
    /// when the wait does not have it whole.
    fn check_status(&self, trackers: &[Tracker], i: usize) -> Result<(), InformerError> {
        let status = self.sources[i].0.status();
        if status == InformerStatus::Stopped {
            return Err(InformerError::Stopped {
                resource: trackers[i].resource.clone(),
            });
        }
        if self.policy != SyncPolicy::GiveUpWhenRefused || trackers[i].synced {
            return Ok(());
        }
        match NotSynced::from_status(&status, self.timeout) {
            Some(why) if why.is_refused() => Err(InformerError::NotSynced {
                resource: trackers[i].resource.clone(),
                reason: why,
            }),
            _ => Ok(()),
        }
    }

    fn publish(&self, trackers: &[Tracker]) {
        let now = WaitProgress {
            objects: trackers.iter().map(|t| t.objects).sum(),
            holding: trackers.iter().map(|t| t.holding).sum(),
            synced: trackers.iter().filter(|t| t.synced).count(),
            informers: trackers.len(),
        };
        self.progress.send_if_modified(|p| {
            let changed = *p != now;
            *p = now;
            changed
        });
    }

    fn report(&self, trackers: &[Tracker], holds: bool, started: Instant) -> WaitReport {
        let waited = started.elapsed();
        WaitReport {
            goal: self.goal.clone(),
            quantifier: self.quantifier,
            holds,
            objects: trackers
                .iter()
                .zip(&self.sources)
                .flat_map(|(t, (informer, _))| t.outcomes(&ResourceKey::from(&informer.resource())))
                .collect(),
            informers: trackers
                .iter()
                .zip(&self.sources)
                .map(|(t, (informer, _))| InformerOutcome {
                    resource: ResourceKey::from(&informer.resource()),
                    not_synced: if t.synced {
                        None
                    } else {
                        NotSynced::from_status(&informer.status(), waited)
                    },
                    objects: t.objects,
                    holding: t.holding,
                    mistakes: t.mistakes,
                })
                .collect(),
            waited,
        }
    }
}

impl fmt::Debug for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait")
            .field("goal", &self.goal)
            .field("quantifier", &self.quantifier)
            .field("timeout", &self.timeout)
            .field("policy", &self.policy)
            .field(
                "informers",
                &self
                    .sources
                    .iter()
                    .map(|(i, o)| (i.shared.key.to_string(), o))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// An event stream read with its synced mark.
struct Deliveries(EventStream);

impl Stream for Deliveries {
    type Item = Delivery;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        Pin::new(&mut self.0).poll_delivery(cx)
    }
}

impl AsRef<SharedInformer> for SharedInformer {
    fn as_ref(&self) -> &SharedInformer {
        self
    }
}

impl SharedInformer {
    /// Waits until `goal` is true of all of `objects` of this informer,
    /// for at most `timeout`: a [`Wait`] on this informer alone (which
    /// says how).
    ///
    /// ```no_run
    /// # async fn demo(informer: kube_dynamic_informer::informer::SharedInformer) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use kube_dynamic_informer::informer::WaitFor;
    ///
    /// let minute = Duration::from_secs(60);
    /// informer.wait_until("shop/web", WaitFor::parse("condition=Available")?, minute).await?;
    /// informer.wait_until("shop/old", WaitFor::Deleted, minute).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Those of [`Wait::run`].
    pub async fn wait_until(
        &self,
        objects: impl Into<Objects>,
        goal: impl Into<WaitFor>,
        timeout: Duration,
    ) -> Result<WaitReport, InformerError> {
        Wait::new(goal)
            .timeout(timeout)
            .on(self, objects)
            .run()
            .await
    }
}

#[cfg(test)]
mod tests;
