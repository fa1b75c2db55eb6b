//! How a wait ended: each object and each informer as they stood.

use std::fmt;
use std::time::Duration;

use super::goal::{Quantifier, WaitFor};
use crate::cache::condition::Verdict;
use crate::informer::sync::NotSynced;
use crate::vocabulary::resource::ResourceKey;

/// How many blocking objects a report's text names before it says how
/// many more there are.
const NAMED_IN_TEXT: usize = 5;

/// One object of a wait, as it stood when the wait ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectOutcome {
    /// The resource of its informer.
    pub resource: ResourceKey,
    /// Its cache key: `namespace/name`, or `name`.
    pub key: String,
    /// Where it stood.
    pub state: ObjectState,
    /// Whether [`WaitFor`] was true of it.
    pub holds: bool,
}

impl ObjectOutcome {
    /// Its namespace, `None` for a cluster-scoped object.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.key.split_once('/').map(|(namespace, _)| namespace)
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.key.split_once('/').map_or(&self.key, |(_, name)| name)
    }

    /// Its state in one camelCase word ([`ObjectState::reason`]).
    #[must_use]
    pub fn reason(&self) -> &'static str {
        self.state.reason()
    }
}

/// Where an object of a wait stood.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObjectState {
    /// In the cache (and picked by the wait's selection); for a condition,
    /// what it gave there.
    Present {
        /// The condition's verdict; `None` when waiting for deletion.
        verdict: Option<Verdict>,
    },
    /// In the cache under its name, but another object (another uid) than
    /// the one the wait first saw, which was deleted.
    Replaced,
    /// Not in the cache: not created yet, deleted, or (for a selection)
    /// out of it.
    Absent,
}

impl ObjectState {
    /// The state in one camelCase word, for JSON and tables: the
    /// [verdict's](Verdict::reason) (`met`, `notMet`, `null`, `notBoolean`,
    /// `failed`), `exists` (waiting for deletion), `replaced` or `missing`.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            ObjectState::Present { verdict: Some(v) } => v.reason(),
            ObjectState::Present { verdict: None } => "exists",
            ObjectState::Replaced => "replaced",
            ObjectState::Absent => "missing",
        }
    }
}

impl fmt::Display for ObjectState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectState::Present { verdict: Some(v) } => v.fmt(f),
            ObjectState::Present { verdict: None } => f.write_str("exists"),
            ObjectState::Replaced => f.write_str("deleted and created again"),
            ObjectState::Absent => f.write_str("missing"),
        }
    }
}

/// One informer of a wait, as it stood when the wait ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct InformerOutcome {
    /// Its resource.
    pub resource: ResourceKey,
    /// Why its cache had not synced; `None` when it had (the wait had its
    /// whole cache).
    pub not_synced: Option<NotSynced>,
    /// Its objects that counted.
    pub objects: usize,
    /// Of those, how many [`WaitFor`] was true of.
    pub holding: usize,
    /// Objects the condition was not a boolean on, or failed on (each said
    /// once, in a `tracing` warning).
    pub mistakes: u64,
}

/// Where a wait stands while it runs: what `kdi wait` reports as progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WaitProgress {
    /// Objects that count, across the informers.
    pub objects: usize,
    /// Of those, how many [`WaitFor`] is true of.
    pub holding: usize,
    /// Informers whose cache the wait has whole.
    pub synced: usize,
    /// Informers of the wait.
    pub informers: usize,
}

/// How a [`Wait`](super::Wait) ended: whether it held, every object that
/// counted and where it stood, every informer and whether its cache had
/// synced.
///
/// ```
/// # async fn demo(informer: kube_dynamic_informer::informer::SharedInformer) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use kube_dynamic_informer::informer::{InformerError, Objects, Wait, WaitFor};
///
/// let wait = Wait::new(WaitFor::condition("status.ready")?)
///     .on(&informer, Objects::all())
///     .timeout(Duration::from_secs(60));
/// match wait.run().await {
///     Ok(report) => println!("{report}"),
///     Err(InformerError::ConditionTimedOut { report }) => {
///         for object in report.blocking() {
///             eprintln!("{} {}: {}", object.resource, object.key, object.state);
///         }
///     }
///     Err(other) => return Err(other.into()),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WaitReport {
    pub(in crate::informer) goal: WaitFor,
    pub(in crate::informer) quantifier: Quantifier,
    pub(in crate::informer) holds: bool,
    pub(in crate::informer) objects: Vec<ObjectOutcome>,
    pub(in crate::informer) informers: Vec<InformerOutcome>,
    pub(in crate::informer) waited: Duration,
}

impl WaitReport {
    /// Whether what was waited for held.
    #[must_use]
    pub fn holds(&self) -> bool {
        self.holds
    }

    /// What was waited for.
    #[must_use]
    pub fn goal(&self) -> &WaitFor {
        &self.goal
    }

    /// Of how many objects.
    #[must_use]
    pub fn quantifier(&self) -> Quantifier {
        self.quantifier
    }

    /// Every object that counted, by informer, then key.
    #[must_use]
    pub fn objects(&self) -> &[ObjectOutcome] {
        &self.objects
    }

    /// The objects [`WaitFor`] was true of.
    pub fn holding(&self) -> impl Iterator<Item = &ObjectOutcome> {
        self.objects.iter().filter(|o| o.holds)
    }

    /// The objects that kept the wait from holding, each with why: those
    /// not true yet (waiting for all, or for any: then every object), or
    /// those true (waiting for none). Empty when it held.
    pub fn blocking(&self) -> impl Iterator<Item = &ObjectOutcome> {
        let quantifier = self.quantifier;
        let held = self.holds;
        self.objects.iter().filter(move |o| {
            !held
                && match quantifier {
                    Quantifier::All | Quantifier::Any => !o.holds,
                    Quantifier::None => o.holds,
                }
        })
    }

    /// Every informer of the wait.
    #[must_use]
    pub fn informers(&self) -> &[InformerOutcome] {
        &self.informers
    }

    /// The informers whose cache had not synced, with why.
    pub fn not_synced(&self) -> impl Iterator<Item = (&ResourceKey, &NotSynced)> {
        self.informers
            .iter()
            .filter_map(|i| Some((&i.resource, i.not_synced.as_ref()?)))
    }

    /// How long the wait took.
    #[must_use]
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// What was waited for, in words: `'status.ready'`, `deletion`.
    fn goal_words(&self) -> String {
        match &self.goal {
            WaitFor::Condition(condition) => format!("'{condition}'"),
            WaitFor::Deleted => "deletion".to_owned(),
        }
    }
}

/// One sentence: how many objects held, and, when it did not hold, the
/// first few that kept it from holding and the caches not synced.
///
/// `all of 3 objects hold 'status.ready'`; `1 of 3 objects does not hold
/// 'status.ready': shop/w2 (not met)`; `no object for 'status.ready' yet`.
impl fmt::Display for WaitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.objects.len();
        let holding = self.objects.iter().filter(|o| o.holds).count();
        let goal = self.goal_words();
        let of = |n: usize| format!("{n} of {total} object{}", if total == 1 { "" } else { "s" });
        let verb = |n: usize, negated: bool| match (n == 1, negated) {
            (true, false) => "holds",
            (false, false) => "hold",
            (true, true) => "does not hold",
            (false, true) => "do not hold",
        };
        let blocking: Vec<&ObjectOutcome> = self.blocking().collect();
        match (self.quantifier, self.holds) {
            (_, _) if total == 0 => write!(f, "no object for {goal}")?,
            (Quantifier::All, true) => write!(f, "all of {total} objects hold {goal}")?,
            (Quantifier::All, false) => write!(
                f,
                "{} {} {goal}",
                of(blocking.len()),
                verb(blocking.len(), true)
            )?,
            (Quantifier::Any, true) => {
                write!(f, "{} {} {goal}", of(holding), verb(holding, false))?
            }
            (Quantifier::Any, false) => write!(f, "none of {total} objects holds {goal}")?,
            (Quantifier::None, true) => write!(f, "none of {total} objects holds {goal}")?,
            (Quantifier::None, false) => {
                write!(f, "{} {} {goal}", of(holding), verb(holding, false))?;
            }
        }
        let several = self.informers.len() > 1;
        for (i, o) in blocking.iter().take(NAMED_IN_TEXT).enumerate() {
            f.write_str(if i == 0 { ": " } else { ", " })?;
            if several {
                write!(f, "{} ", o.resource)?;
            }
            write!(f, "{} ({})", o.key, o.state)?;
        }
        if blocking.len() > NAMED_IN_TEXT {
            write!(f, " and {} more", blocking.len() - NAMED_IN_TEXT)?;
        }
        for (i, (resource, why)) in self.not_synced().enumerate() {
            f.write_str(if i == 0 { "; not synced: " } else { ", " })?;
            write!(f, "{resource} ({why})")?;
        }
        Ok(())
    }
}
