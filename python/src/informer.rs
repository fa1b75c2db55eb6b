//! `Informer` (one resource's cache and its handlers), `Status`, `Event` and
//! `Handler` (a registration).

use kube_dynamic_informer::InformerHandle;
use kube_dynamic_informer::cache::{CachedObject as Cached, ChangePredicate, Condition, IndexFn};
use kube_dynamic_informer::informer::{
    Event as Change, EventHandler, HandlerOptions, InformerStatus, Registration,
};
use kube_dynamic_informer::vocabulary::key_from_parts;
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::object::CachedObject;
use crate::waiting::{self, Chosen, WaitReport};
use crate::{aio, errors, seconds, strings, wait};

/// One resource's informer: its cache, indexes and handlers.
#[pyclass(module = "kube_dynamic_informer", frozen)]
#[derive(Clone)]
pub(crate) struct Informer(pub(crate) InformerHandle);

/// Adds the JMESPath index `expression` as `name`.
fn add_index(handle: &InformerHandle, name: &str, expression: &str) -> PyResult<()> {
    let function = IndexFn::jmespath(name, expression).map_err(errors::cache)?;
    handle
        .informer()
        .add_index(name, function)
        .map_err(errors::informer)
}

impl Informer {
    /// The informer of `handle` with `indexes` (names to JMESPath
    /// expressions) added.
    pub(crate) fn with_indexes(
        handle: InformerHandle,
        indexes: Option<&std::collections::BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        for (name, expression) in indexes.into_iter().flatten() {
            add_index(&handle, name, expression)?;
        }
        Ok(Informer(handle))
    }
}

#[pymethods]
impl Informer {
    /// The resource, as kubectl writes it in full: `plural.version.group`
    /// (`pods.v1` for the core group).
    #[getter]
    fn resource(&self) -> String {
        self.0.resource().to_string()
    }

    /// What the informer is doing now.
    #[getter]
    fn status(&self) -> Status {
        Status(self.0.status())
    }

    /// Whether the cache has synced (its first list is in).
    #[getter]
    fn has_synced(&self) -> bool {
        self.0.has_synced()
    }

    /// What the informer did so far, as counters: `lists` (complete lists,
    /// relists included), `list_requests` (pages), `relists_after_gone`,
    /// `watch_requests`, `watch_events`, `errors`, `skipped_objects`,
    /// `tombstones`, `snapshots_written`, `snapshot_write_errors`; and
    /// `snapshot_start`, how it started with snapshots (`None` without).
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let stats = self.0.informer().stats();
        let c = stats.counters();
        let dict = pyo3::types::PyDict::new(py);
        for (name, value) in [
            ("lists", c.lists),
            ("list_requests", c.list_requests),
            ("relists_after_gone", c.relists_after_gone),
            ("watch_requests", c.watch_requests),
            ("watch_events", c.watch_events),
            ("errors", c.errors),
            ("skipped_objects", c.skipped_objects),
            ("tombstones", c.tombstones),
            ("snapshots_written", c.snapshots_written),
            ("snapshot_write_errors", c.snapshot_write_errors),
        ] {
            dict.set_item(name, value)?;
        }
        dict.set_item(
            "snapshot_start",
            stats.snapshot_start().map(|s| s.to_string()),
        )?;
        Ok(dict)
    }

    /// Adds an index: `expression` (JMESPath) gives each object's values
    /// under `name`. Before or after start; objects already cached are
    /// indexed at once.
    fn add_index(&self, name: &str, expression: &str) -> PyResult<()> {
        add_index(&self.0, name, expression)
    }

    /// The names of the indexes.
    fn index_names(&self) -> Vec<String> {
        self.0.lister().store().index_names()
    }

    /// Waits until the cache has synced, releasing the GIL; raises
    /// `NotSyncedError` (`SyncTimeoutError` when the time ran out) saying
    /// why it has not.
    #[pyo3(signature = (timeout = 60.0))]
    fn wait_for_sync(&self, py: Python<'_>, timeout: f64) -> PyResult<()> {
        let timeout = seconds(timeout, "timeout")?;
        let informer = self.0.informer().clone();
        wait(py, async move { informer.wait_for_sync(timeout).await })?.map_err(errors::informer)
    }

    /// Waits until the cache reflects `obj`, an object the server returned
    /// from a write: a dict, or what the official client returns (anything
    /// with `to_dict()`). Raises `WaitTimeoutError` when it does not within
    /// `timeout` seconds.
    #[pyo3(signature = (obj, timeout = 30.0))]
    fn wait_for_object(
        &self,
        py: Python<'_>,
        obj: &Bound<'_, PyAny>,
        timeout: f64,
    ) -> PyResult<()> {
        let timeout = seconds(timeout, "timeout")?;
        let object = crate::factory::written_object(py, obj)?;
        let informer = self.0.informer().clone();
        wait(py, async move {
            informer.wait_for_object(&object, timeout).await
        })?
        .map_err(errors::informer)
    }

    /// The object with this key (`namespace/name`, or `name` when
    /// cluster-scoped), or `None`. With `namespace`, `key` is a name.
    #[pyo3(signature = (key, namespace = None))]
    fn get(&self, key: &str, namespace: Option<&str>) -> Option<CachedObject> {
        let key = match namespace {
            Some(ns) => key_from_parts(Some(ns), key),
            None => key.to_owned(),
        };
        self.0.lister().store().get(&key).map(CachedObject)
    }

    /// The cached objects, all or those matching `label_selector`, in all
    /// namespaces or one.
    #[pyo3(signature = (label_selector = None, namespace = None))]
    fn list<'py>(
        &self,
        py: Python<'py>,
        label_selector: Option<&str>,
        namespace: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let lister = self.0.lister();
        let selector = label_selector.unwrap_or("");
        let objects: Vec<Cached> = match namespace {
            Some(ns) => lister
                .namespace(ns)
                .and_then(|view| view.list(selector))
                .map_err(errors::cache)?,
            None => lister.list(selector).map_err(errors::cache)?,
        };
        CachedObject::list(py, objects)
    }

    /// Every cached key.
    fn keys(&self) -> Vec<String> {
        self.0.lister().store().keys()
    }

    /// The objects whose index `index` has the value `value`.
    fn by_index<'py>(
        &self,
        py: Python<'py>,
        index: &str,
        value: &str,
    ) -> PyResult<Bound<'py, PyList>> {
        let objects = self
            .0
            .lister()
            .store()
            .by_index(index, value)
            .map_err(errors::cache)?;
        CachedObject::list(py, objects)
    }

    /// The keys of the objects whose index `index` has the value `value`.
    fn index_keys(&self, index: &str, value: &str) -> PyResult<Vec<String>> {
        self.0
            .lister()
            .store()
            .index_keys(index, value)
            .map_err(errors::cache)
    }

    /// Every value of index `index`.
    fn index_values(&self, index: &str) -> PyResult<Vec<String>> {
        self.0
            .lister()
            .store()
            .index_values(index)
            .map_err(errors::cache)
    }

    /// Calls `handler(event)` for every event, on a thread of the library's
    /// handler pool: first an `Add` for each cached object (a handler added
    /// late gets the cache first), then live events, in order. A handler
    /// that raises has its exception reported (`sys.unraisablehook`) and
    /// gets the next event; others are not affected. `resync` (seconds)
    /// re-delivers every object that often as a `Resync`; `0` (the
    /// default) never. Returns the registration, to `remove()` it.
    ///
    /// `filter`, a JMESPath condition (`"metadata.labels.tier == 'web'"`),
    /// shows the handler only the objects it is true of: one that starts to
    /// meet it arrives as an `Add` (`entered_filter`), one that stops as a
    /// `Delete` (`left_filter`). `changes`, JMESPath expressions
    /// (`"spec"`, `["metadata.generation", "metadata.labels"]`), lets
    /// through only the updates that change the value of one of them. Both
    /// are checked here: a mistake raises `ExpressionError` with its
    /// position.
    #[pyo3(signature = (handler, *, resync = 0.0, name = None, filter = None, changes = None))]
    fn on_event(
        &self,
        handler: Py<PyAny>,
        resync: f64,
        name: Option<String>,
        filter: Option<&str>,
        changes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Handler> {
        let options = handler_options(resync, name, filter, changes)?;
        self.handler(handler, options, |_| true)
    }

    /// As `on_event`, called for `Add` events only.
    #[pyo3(signature = (handler, *, name = None, filter = None))]
    fn on_add(
        &self,
        handler: Py<PyAny>,
        name: Option<String>,
        filter: Option<&str>,
    ) -> PyResult<Handler> {
        let options = handler_options(0.0, name, filter, None)?;
        self.handler(handler, options, |c| matches!(c, Change::Add { .. }))
    }

    /// As `on_event`, called for `Update` events (and `Resync`s, with
    /// `resync`) only.
    #[pyo3(signature = (handler, *, resync = 0.0, name = None, filter = None, changes = None))]
    fn on_update(
        &self,
        handler: Py<PyAny>,
        resync: f64,
        name: Option<String>,
        filter: Option<&str>,
        changes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Handler> {
        let options = handler_options(resync, name, filter, changes)?;
        self.handler(handler, options, |c| matches!(c, Change::Update { .. }))
    }

    /// As `on_event`, called for `Delete` events only.
    #[pyo3(signature = (handler, *, name = None, filter = None))]
    fn on_delete(
        &self,
        handler: Py<PyAny>,
        name: Option<String>,
        filter: Option<&str>,
    ) -> PyResult<Handler> {
        let options = handler_options(0.0, name, filter, None)?;
        self.handler(handler, options, |c| matches!(c, Change::Delete { .. }))
    }

    /// Waits, releasing the GIL, until `goal` is true of the objects picked,
    /// answered from the cache as events arrive (no polling, no request of
    /// its own), and returns how it ended. `goal` is a JMESPath condition
    /// (`"status.readyReplicas == spec.replicas"`), `"delete"`, `"create"`,
    /// or kubectl's `"condition=Ready"` / `"jsonpath={.status.phase}=Running"`.
    ///
    /// The objects are `keys` (one key or several: `namespace/name`, or
    /// names in `namespace` when it is given), whether cached yet or not;
    /// or else the cached objects of `namespace`, matching
    /// `label_selector`, filed under `index = (name, value)`, as they come
    /// and go. `quantifier` asks for `"all"` of them (the default), `"any"`
    /// or `"none"`. The resource may not be served yet: the wait goes on
    /// until it is.
    ///
    /// Raises `ConditionTimeoutError` after `timeout` seconds, its
    /// `report.blocking` the objects that kept the condition from holding;
    /// `ExpressionError` for a goal that does not parse.
    #[pyo3(signature = (
        goal, keys = None, *, namespace = None, label_selector = None, index = None,
        quantifier = "all", timeout = 30.0,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn wait_until(
        &self,
        py: Python<'_>,
        goal: &str,
        keys: Option<&Bound<'_, PyAny>>,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        index: Option<(String, String)>,
        quantifier: &str,
        timeout: f64,
    ) -> PyResult<WaitReport> {
        let chosen = Chosen {
            keys,
            namespace,
            label_selector,
            index,
        };
        let informers = [self.0.informer().clone()];
        waiting::wait_until(py, &informers, goal, chosen, quantifier, timeout)
    }

    /// The events as an asynchronous iterator for asyncio (`async for event
    /// in informer.events()`), from inside a running event loop; as
    /// `on_event`, the cache first. Close it (or use it as an async context
    /// manager) to stop the events.
    /// `filter` and `changes` as for `on_event`.
    #[pyo3(signature = (*, resync = 0.0, filter = None, changes = None))]
    fn events(
        slf: Py<Self>,
        py: Python<'_>,
        resync: f64,
        filter: Option<&str>,
        changes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("resync", resync)?;
        kwargs.set_item("filter", filter)?;
        kwargs.set_item("changes", changes)?;
        aio(py, "EventStream", (slf,), Some(&kwargs))
    }

    /// `wait_for_sync` as an awaitable, for asyncio.
    #[pyo3(signature = (timeout = 60.0))]
    fn synced(slf: Py<Self>, py: Python<'_>, timeout: f64) -> PyResult<Py<PyAny>> {
        aio(py, "wait_for_sync", (slf, timeout), None)
    }

    /// `wait_until` as an awaitable, for asyncio (the wait runs on a worker
    /// thread of the event loop's default executor).
    #[pyo3(signature = (goal, keys = None, **kwargs))]
    fn until(
        slf: Py<Self>,
        py: Python<'_>,
        goal: Py<PyAny>,
        keys: Option<Py<PyAny>>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        aio(py, "wait_until", (slf, goal, keys), kwargs)
    }

    fn __len__(&self) -> usize {
        self.0.lister().store().len()
    }

    fn __repr__(&self) -> String {
        format!(
            "<Informer {} {}>",
            self.0.resource(),
            self.0.status().name()
        )
    }
}

/// A handler's options from Python's arguments: `changes` is one
/// expression or a sequence of them.
fn handler_options(
    resync: f64,
    name: Option<String>,
    filter: Option<&str>,
    changes: Option<&Bound<'_, PyAny>>,
) -> PyResult<HandlerOptions> {
    let mut options = HandlerOptions::default().resync(seconds(resync, "resync")?);
    if let Some(name) = name {
        options = options.name(name);
    }
    if let Some(filter) = filter {
        options = options.filter(Condition::new(filter).map_err(errors::cache)?);
    }
    if let Some(changes) = changes {
        let predicate = ChangePredicate::any_of(strings(changes)?).map_err(errors::cache)?;
        options = options.changes(predicate);
    }
    Ok(options)
}

impl Informer {
    /// Registers `handler` for the events `wanted` keeps.
    pub(crate) fn handler(
        &self,
        handler: Py<PyAny>,
        options: HandlerOptions,
        wanted: fn(&Change) -> bool,
    ) -> PyResult<Handler> {
        let registration = self.0.informer().add_handler_with(
            PythonHandler {
                callable: handler,
                wanted,
            },
            options,
        );
        Ok(Handler(Mutex::new(Some(registration))))
    }
}

/// A Python callable as an event handler. The pool's worker attaches to the
/// interpreter once per turn of events (a thread state made and the GIL
/// taken once for up to a few dozen calls), not once per event.
struct PythonHandler {
    callable: Py<PyAny>,
    /// The events the callable takes; the others are skipped in Rust.
    wanted: fn(&Change) -> bool,
}

impl EventHandler for PythonHandler {
    fn on_event(&self, change: Change) {
        if !(self.wanted)(&change) {
            return;
        }
        // Within a turn the thread is attached already: this only counts.
        Python::attach(|py| {
            if let Err(e) = self.callable.call1(py, (Event::from(change),)) {
                e.write_unraisable(py, Some(self.callable.bind(py)));
            }
        });
    }

    fn around_turn(&self, deliver: &mut dyn FnMut()) {
        Python::attach(|_| deliver());
    }
}

/// A registered handler: `remove()` stops its events.
#[pyclass(module = "kube_dynamic_informer", frozen)]
pub(crate) struct Handler(Mutex<Option<Registration>>);

#[pymethods]
impl Handler {
    /// Stops delivering events to the handler (events already queued are
    /// dropped). Removing twice does nothing.
    fn remove(&self) {
        if let Some(registration) = self.0.lock().take() {
            registration.remove();
        }
    }

    /// Whether the handler has received every object of the first list.
    #[getter]
    fn has_synced(&self) -> bool {
        self.0.lock().as_ref().is_some_and(Registration::has_synced)
    }

    /// How many events wait in the handler's queue.
    #[getter]
    fn backlog(&self) -> usize {
        self.0.lock().as_ref().map_or(0, Registration::backlog)
    }
}

/// One change delivered to a handler.
#[pyclass(module = "kube_dynamic_informer", frozen)]
pub(crate) struct Event {
    change: Change,
}

impl From<Change> for Event {
    fn from(change: Change) -> Self {
        Event { change }
    }
}

#[pymethods]
impl Event {
    /// `"Add"`, `"Update"`, `"Resync"` or `"Delete"`.
    #[getter]
    fn kind<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        // The four names are made once, not a string per call.
        match self.change.kind() {
            "Add" => intern!(py, "Add").clone(),
            "Update" => intern!(py, "Update").clone(),
            "Resync" => intern!(py, "Resync").clone(),
            "Delete" => intern!(py, "Delete").clone(),
            other => PyString::new(py, other),
        }
    }

    /// The object (its new state for an update; for a delete, its final
    /// state, or the last state known when `final_state_unknown`).
    #[getter]
    fn object(&self) -> CachedObject {
        CachedObject(self.change.object().clone())
    }

    /// For an update, the state before it; `None` otherwise.
    #[getter]
    fn old(&self) -> Option<CachedObject> {
        match &self.change {
            Change::Update { old, .. } => Some(CachedObject(old.clone())),
            _ => None,
        }
    }

    /// An `Add` of the first list (or of the replay to a handler added late).
    #[getter]
    fn in_initial_list(&self) -> bool {
        matches!(
            self.change,
            Change::Add {
                in_initial_list: true,
                ..
            }
        )
    }

    /// A resync: nothing changed on the server.
    #[getter]
    fn is_resync(&self) -> bool {
        matches!(
            self.change,
            Change::Update {
                is_resync: true,
                ..
            }
        )
    }

    /// An `Add` of an object that started to meet the handler's `filter`
    /// (an update made it match; it was cached before).
    #[getter]
    fn entered_filter(&self) -> bool {
        matches!(
            self.change,
            Change::Add {
                entered_filter: true,
                ..
            }
        )
    }

    /// A `Delete` of an object that stopped meeting the handler's `filter`:
    /// it is still cached, and `object` is its new state, the one that does
    /// not match.
    #[getter]
    fn left_filter(&self) -> bool {
        matches!(
            self.change,
            Change::Delete {
                left_filter: true,
                ..
            }
        )
    }

    /// A delete inferred from a relist (the watch missed it): the object may
    /// be stale (client-go's `DeletedFinalStateUnknown`).
    #[getter]
    fn final_state_unknown(&self) -> bool {
        matches!(
            self.change,
            Change::Delete {
                final_state_unknown: true,
                ..
            }
        )
    }

    fn __repr__(&self) -> String {
        let object = self.change.object();
        format!(
            "<Event {} {}/{}>",
            self.change.kind(),
            object.namespace().unwrap_or(""),
            object.name().unwrap_or("?"),
        )
    }
}

/// What an informer is doing: `name` in one word, `reason` when it is not
/// synced for a reason (a refusal, an error).
#[pyclass(module = "kube_dynamic_informer", frozen)]
pub(crate) struct Status(InformerStatus);

#[pymethods]
impl Status {
    /// One word for programs: `notStarted`, `syncing`, `synced`,
    /// `relisting`, `stale`, `notServed` (not in discovery yet: waited
    /// for), `gone`, `stopped`, `waitingForShardGroup`, or why a request
    /// failed and is retried: `forbidden`, `unauthorized`, `serverError`,
    /// `unreachable`.
    #[getter]
    fn name(&self) -> &'static str {
        self.0.name()
    }

    /// The state in a few words for people: `access denied`, `not served`,
    /// `retrying after an error`, ...
    #[getter]
    fn words(&self) -> &'static str {
        self.0.words()
    }

    /// Why it is not synced, when there is a reason to say.
    #[getter]
    fn reason(&self) -> Option<String> {
        self.0.reason()
    }

    /// Whether the cache is synced (and current).
    #[getter]
    fn synced(&self) -> bool {
        self.0.is_synced()
    }

    /// Whether the server refused the informer (403, 401, ...).
    #[getter]
    fn refused(&self) -> bool {
        self.0.is_refused()
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!("<Status {}>", self.0)
    }
}

/// Refuses an empty name where one is needed.
pub(crate) fn non_empty<'a>(value: &'a str, what: &str) -> PyResult<&'a str> {
    if value.trim().is_empty() {
        return Err(PyValueError::new_err(format!("{what} must not be empty")));
    }
    Ok(value)
}
