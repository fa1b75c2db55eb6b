//! `Informer.wait_until`: a condition waited for from the cache, and
//! `WaitReport` / `ObjectOutcome`, how the wait ended.

use kube_dynamic_informer::informer::{
    self, ObjectSelection, Objects, Quantifier, SharedInformer, Wait, WaitFor,
};
use kube_dynamic_informer::vocabulary::{Selector, key_from_parts};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::{errors, seconds, strings, wait};

/// Which objects a wait is about, from `wait_until`'s arguments.
pub(crate) struct Chosen<'a> {
    pub(crate) keys: Option<&'a Bound<'a, PyAny>>,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) label_selector: Option<&'a str>,
    pub(crate) index: Option<(String, String)>,
}

impl Chosen<'_> {
    /// The objects: the keys given (names in `namespace` when it is given),
    /// or the cached objects the namespace, selector and index pick.
    fn objects(self) -> PyResult<Objects> {
        let Some(keys) = self.keys else {
            let mut selection = ObjectSelection::default();
            if let Some(namespace) = self.namespace {
                selection = selection.namespace(namespace);
            }
            if let Some(selector) = self.label_selector {
                selection = selection.labels(Selector::parse(selector).map_err(errors::selector)?);
            }
            if let Some((index, value)) = self.index {
                selection = selection.index(index, value);
            }
            return Ok(Objects::from(selection));
        };
        if self.label_selector.is_some() || self.index.is_some() {
            return Err(PyValueError::new_err(
                "wait_until takes keys, or a label_selector and an index to pick objects, not both",
            ));
        }
        let keys = strings(keys)?;
        if keys.is_empty() {
            return Err(PyValueError::new_err("wait_until: keys is empty"));
        }
        Ok(Objects::named(keys.iter().map(
            |key| match self.namespace {
                Some(namespace) => key_from_parts(Some(namespace), key),
                None => key.clone(),
            },
        )))
    }
}

/// `quantifier` as the library's.
fn quantifier(word: &str) -> PyResult<Quantifier> {
    match word {
        "all" => Ok(Quantifier::All),
        "any" => Ok(Quantifier::Any),
        "none" => Ok(Quantifier::None),
        other => Err(PyValueError::new_err(format!(
            "quantifier must be 'all', 'any' or 'none', not {other:?}"
        ))),
    }
}

/// Waits, with the GIL released, until `goal` is true of the objects
/// `chosen` picks in each of `informers` (all of them, any or none, as
/// `quantifier` says), for at most `timeout` seconds.
pub(crate) fn wait_until(
    py: Python<'_>,
    informers: &[SharedInformer],
    goal: &str,
    chosen: Chosen<'_>,
    quantifier_word: &str,
    timeout: f64,
) -> PyResult<WaitReport> {
    let timeout = seconds(timeout, "timeout")?;
    let goal = WaitFor::parse(goal).map_err(errors::cache)?;
    let run = Wait::new(goal)
        .quantifier(quantifier(quantifier_word)?)
        .timeout(timeout)
        .on_each(informers, chosen.objects()?);
    let report = wait(py, run.run())?.map_err(errors::informer)?;
    Ok(WaitReport::from(report))
}

/// How a wait ended: whether its condition held, and where each object
/// stood then.
#[pyclass(module = "kube_dynamic_informer", frozen)]
pub(crate) struct WaitReport(informer::WaitReport);

impl From<informer::WaitReport> for WaitReport {
    fn from(report: informer::WaitReport) -> Self {
        WaitReport(report)
    }
}

#[pymethods]
impl WaitReport {
    /// Whether the condition held (for the quantifier) when the wait ended.
    #[getter]
    fn holds(&self) -> bool {
        self.0.holds()
    }

    /// Every object that counted, as it stood.
    #[getter]
    fn objects(&self) -> Vec<ObjectOutcome> {
        self.0
            .objects()
            .iter()
            .cloned()
            .map(ObjectOutcome)
            .collect()
    }

    /// The objects that kept the condition from holding: for `all`, those
    /// it is not true of; for `none`, those it is true of; for `any`, all of
    /// them when none holds.
    #[getter]
    fn blocking(&self) -> Vec<ObjectOutcome> {
        self.0.blocking().cloned().map(ObjectOutcome).collect()
    }

    /// The informers whose cache had not synced when the wait ended, each
    /// as `(resource, reason)`, `reason` in one word (`forbidden`,
    /// `notServed`, `timedOut`, ...).
    #[getter]
    fn not_synced(&self) -> Vec<(String, &'static str)> {
        self.0
            .not_synced()
            .map(|(resource, reason)| (resource.to_string(), reason.reason()))
            .collect()
    }

    /// How long the wait took, in seconds.
    #[getter]
    fn waited(&self) -> f64 {
        self.0.waited().as_secs_f64()
    }

    fn __bool__(&self) -> bool {
        self.0.holds()
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "<WaitReport holds={} objects={} blocking={}>",
            if self.0.holds() { "True" } else { "False" },
            self.0.objects().len(),
            self.0.blocking().count()
        )
    }
}

/// One object of a wait, as it stood when the wait ended.
#[pyclass(module = "kube_dynamic_informer", frozen)]
pub(crate) struct ObjectOutcome(informer::ObjectOutcome);

#[pymethods]
impl ObjectOutcome {
    /// The resource of its informer (`plural.version.group`).
    #[getter]
    fn resource(&self) -> String {
        self.0.resource.to_string()
    }

    /// Its cache key: `namespace/name`, or `name`.
    #[getter]
    fn key(&self) -> &str {
        &self.0.key
    }

    /// Its namespace; `None` for a cluster-scoped object.
    #[getter]
    fn namespace(&self) -> Option<&str> {
        self.0.namespace()
    }

    /// Its name.
    #[getter]
    fn name(&self) -> &str {
        self.0.name()
    }

    /// Where it stood, in one word: `met`, `notMet`, `null`, `notBoolean`,
    /// `failed` (what the condition gave), `exists` (waiting for
    /// deletion), `replaced` (deleted and created again) or `missing`.
    #[getter]
    fn reason(&self) -> &'static str {
        self.0.reason()
    }

    /// Whether the condition was true of it.
    #[getter]
    fn holds(&self) -> bool {
        self.0.holds
    }

    fn __repr__(&self) -> String {
        format!("<ObjectOutcome {} {}>", self.0.key, self.0.reason())
    }
}
