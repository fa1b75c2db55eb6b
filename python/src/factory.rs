//! `Factory`: one cluster's client and the informers asked of it, shared by
//! resource and options.

use std::collections::BTreeMap;
use std::time::Duration;

use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use kube_core::DynamicObject;
use kube_dynamic_informer::InformerFactory;
use kube_dynamic_informer::declarative::{ResourceSet, SetMember};
use kube_dynamic_informer::factory::ResourcePattern;
use kube_dynamic_informer::informer::{HandlerOptions, InformerOptions, SnapshotOptions};
use kube_dynamic_informer::prelude::Storage;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio_util::sync::CancellationToken;

use crate::informer::{Handler, Informer, non_empty};
use crate::waiting::{self, Chosen, WaitReport};
use crate::{errors, memory, runtime, seconds, wait};

/// The informers of one cluster, shared by resource and options: asking
/// twice for the same resource with the same options gives the same cache.
///
/// `Factory(kubeconfig, context)` connects as the kubeconfig (a path; by
/// default `$KUBECONFIG` or `~/.kube/config`, else the in-cluster service
/// account) and context say. `namespace` limits every informer to one
/// namespace; `storage` is `"compact"` (the default: a fraction of the
/// memory) or `"objects"`; `snapshot_dir` keeps each cache on disk so that
/// a restart resumes without listing. `trim_memory` (on by default) gives
/// the memory glibc's malloc keeps after a list back to the system once
/// each list ends (nothing is done with another C library).
#[pyclass(module = "kube_dynamic_informer", frozen)]
pub(crate) struct Factory {
    factory: InformerFactory,
    /// Its number in [`RUNNING`].
    id: u64,
    /// The resource set of a config file ([`Factory::from_file`]).
    set: Option<ResourceSet>,
    /// Stops what follows the factory ([`memory::trim_after_lists`]).
    stop: CancellationToken,
}

/// What shuts a factory down: the factory, or the resource set over it.
#[derive(Clone)]
enum Running {
    Factory(InformerFactory),
    Set(ResourceSet),
}

impl Running {
    /// Stops every informer, waiting at most `timeout`; whether all did.
    async fn shutdown(self, timeout: Duration) -> bool {
        match self {
            Running::Factory(factory) => factory.shutdown_within(timeout).await,
            Running::Set(set) => tokio::time::timeout(timeout, set.shutdown()).await.is_ok(),
        }
    }
}

/// The factories not shut down yet, for [`_shutdown_all`].
/// Each with its number.
static RUNNING: parking_lot::Mutex<Vec<(u64, Running, CancellationToken)>> =
    parking_lot::Mutex::new(Vec::new());

/// Shuts down every factory not shut down yet (at interpreter exit),
/// waiting up to 10 s for each.
#[pyfunction]
pub(crate) fn _shutdown_all(py: Python<'_>) -> PyResult<()> {
    let running = std::mem::take(&mut *RUNNING.lock());
    for (_, running, stop) in running {
        stop.cancel();
        wait(py, running.shutdown(Duration::from_secs(10)))?;
    }
    Ok(())
}

/// `"compact"` or `"objects"`.
fn storage(name: &str) -> PyResult<Storage> {
    match name {
        "compact" => Ok(Storage::Compact),
        "objects" => Ok(Storage::Objects),
        other => Err(PyValueError::new_err(format!(
            "storage must be \"compact\" or \"objects\", not {other:?}"
        ))),
    }
}

/// The client's configuration: the kubeconfig file and context given, else
/// what kube-rs infers (`$KUBECONFIG`, `~/.kube/config`, in-cluster).
async fn config(kubeconfig: Option<String>, context: Option<String>) -> PyResult<Config> {
    if kubeconfig.is_none() && context.is_none() {
        return Config::infer()
            .await
            .map_err(|e| errors::config("no usable kubeconfig or in-cluster config".into(), &e));
    }
    let file = match &kubeconfig {
        Some(path) => Kubeconfig::read_from(path)
            .map_err(|e| errors::config(format!("reading kubeconfig {path}"), &e))?,
        None => {
            Kubeconfig::read().map_err(|e| errors::config("reading the kubeconfig".into(), &e))?
        }
    };
    let options = KubeConfigOptions {
        context: context.clone(),
        ..KubeConfigOptions::default()
    };
    Config::from_custom_kubeconfig(file, &options)
        .await
        .map_err(|e| {
            let what = match &context {
                Some(context) => format!("kubeconfig context {context:?}"),
                None => "the kubeconfig's current context".into(),
            };
            errors::config(what, &e)
        })
}

/// An object the server returned from a write, as a `DynamicObject`: a dict
/// (what `CustomObjectsApi` returns), a model of the official client
/// (serialised as the client sends it), or anything with `to_dict()`.
pub(crate) fn written_object(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<DynamicObject> {
    let plain = if obj.is_instance_of::<PyDict>() {
        obj.clone()
    } else if obj.hasattr("attribute_map")? {
        py.import("kubernetes.client")?
            .getattr("ApiClient")?
            .call0()?
            .call_method1("sanitize_for_serialization", (obj,))?
    } else if obj.hasattr("to_dict")? {
        obj.call_method0("to_dict")?
    } else {
        return Err(PyTypeError::new_err(format!(
            "an object the server returned (a dict or a kubernetes client model), not {}",
            obj.get_type().name()?
        )));
    };
    let text: String = py
        .import("json")?
        .call_method1("dumps", (plain,))?
        .extract()?;
    serde_json::from_str(&text)
        .map_err(|e| PyValueError::new_err(format!("not a Kubernetes object: {e}")))
}

impl Factory {
    /// The informer of `resource` with the options and indexes asked for.
    fn one(
        &self,
        py: Python<'_>,
        resource: String,
        asked: Asked,
        indexes: Option<&BTreeMap<String, String>>,
    ) -> PyResult<Informer> {
        let factory = self.factory.clone();
        let handle = wait(py, async move {
            factory
                .for_resource_with(resource, |options| asked.apply(options))
                .await
        })?
        .map_err(errors::factory)?;
        Informer::with_indexes(handle, indexes)
    }

    /// A factory (and its set) remembered for [`_shutdown_all`], trimming
    /// the heap after its lists when `trim_memory`.
    fn register(factory: InformerFactory, set: Option<ResourceSet>, trim_memory: bool) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stop = CancellationToken::new();
        if trim_memory {
            memory::trim_after_lists(factory.clone(), stop.clone());
        }
        let factory = Factory {
            factory,
            id,
            set,
            stop,
        };
        RUNNING
            .lock()
            .push((id, factory.running(), factory.stop.clone()));
        factory
    }

    fn running(&self) -> Running {
        match &self.set {
            Some(set) => Running::Set(set.clone()),
            None => Running::Factory(self.factory.clone()),
        }
    }
}

/// The options one informer asks for beyond the factory's.
#[derive(Clone)]
struct Asked {
    namespace: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    storage: Option<Storage>,
    metadata_only: bool,
}

impl Asked {
    fn new(
        namespace: Option<String>,
        label_selector: Option<String>,
        field_selector: Option<String>,
        storage: Option<&str>,
        metadata_only: bool,
    ) -> PyResult<Self> {
        if let Some(namespace) = &namespace {
            non_empty(namespace, "namespace")?;
        }
        Ok(Asked {
            namespace,
            label_selector,
            field_selector,
            storage: storage.map(self::storage).transpose()?,
            metadata_only,
        })
    }

    /// The factory's `options` narrowed as asked.
    fn apply(self, mut options: InformerOptions) -> InformerOptions {
        if let Some(namespace) = self.namespace {
            options = options.namespace(namespace);
        }
        if let Some(selector) = self.label_selector {
            options = options.label_selector(selector);
        }
        if let Some(selector) = self.field_selector {
            options = options.field_selector(selector);
        }
        if let Some(storage) = self.storage {
            options = options.storage(storage);
        }
        options.metadata_only(self.metadata_only)
    }
}

/// A client as the kubeconfig and context say (see [`config`]).
fn client(py: Python<'_>, kubeconfig: Option<String>, context: Option<String>) -> PyResult<Client> {
    let config = wait(py, config(kubeconfig, context))??;
    let _entered = runtime().enter();
    Client::try_from(config).map_err(|e| errors::config("building a client".into(), &e))
}

/// One member of a config file's set: its entry, the resource, the
/// informer, and what the entry's handlers want.
#[pyclass(module = "kube_dynamic_informer", frozen)]
pub(crate) struct Member {
    /// The config entry's name (an informer's or a pattern's).
    #[pyo3(get)]
    entry: String,
    /// The resource, as the entry names it or as the pattern selected it.
    #[pyo3(get)]
    resource: String,
    /// Whether a pattern selected it.
    #[pyo3(get)]
    from_pattern: bool,
    /// The informer (shared with every entry whose options build the same
    /// cache).
    #[pyo3(get)]
    informer: Informer,
    /// The entry's filter and change predicate, compiled.
    options: HandlerOptions,
}

impl From<SetMember> for Member {
    fn from(member: SetMember) -> Self {
        Member {
            options: member.handler_options(),
            entry: member.entry,
            resource: member.resource,
            from_pattern: member.from_pattern,
            informer: Informer(member.informer),
        }
    }
}

#[pymethods]
impl Member {
    /// The entry's `filter`: the objects its handlers want (a JMESPath
    /// condition), or `None`.
    #[getter]
    fn filter(&self) -> Option<&str> {
        self.options.filter.as_ref().map(|f| f.expression())
    }

    /// The entry's `changes`: the expressions whose change lets an update
    /// through to its handlers (empty: every update).
    #[getter]
    fn changes(&self) -> Vec<&str> {
        self.options
            .changes
            .iter()
            .flat_map(|c| c.expressions())
            .collect()
    }

    /// As `Informer.on_event`, with the entry's `filter` and `changes`: the
    /// handler receives what the config file says this entry's handlers
    /// want.
    #[pyo3(signature = (handler, *, resync = 0.0, name = None))]
    fn on_event(&self, handler: Py<PyAny>, resync: f64, name: Option<String>) -> PyResult<Handler> {
        let mut options = self.options.clone().resync(seconds(resync, "resync")?);
        if let Some(name) = name {
            options = options.name(name);
        }
        self.informer.handler(handler, options, |_| true)
    }

    fn __repr__(&self) -> String {
        format!("<Member {} {}>", self.entry, self.resource)
    }
}

#[pymethods]
impl Factory {
    // Documented on the class: Python shows the class's docstring.
    #[new]
    #[pyo3(signature = (kubeconfig = None, context = None, *, namespace = None, storage = "compact", snapshot_dir = None, trim_memory = true))]
    fn new(
        py: Python<'_>,
        kubeconfig: Option<String>,
        context: Option<String>,
        namespace: Option<String>,
        storage: &str,
        snapshot_dir: Option<String>,
        trim_memory: bool,
    ) -> PyResult<Self> {
        let mut options = InformerOptions::default().storage(self::storage(storage)?);
        if let Some(namespace) = namespace {
            options = options.namespace(non_empty(&namespace, "namespace")?);
        }
        if let Some(dir) = snapshot_dir {
            options = options.snapshot(SnapshotOptions::new(dir));
        }
        let client = client(py, kubeconfig, context)?;
        Ok(Factory::register(
            InformerFactory::with_options(client, options),
            None,
            trim_memory,
        ))
    }

    /// The informers a config file declares (the format of `kdi watch
    /// --config`: informers by name with their options and JMESPath
    /// indexes, patterns over discovery, defaults). Problems in the file
    /// raise `ConfigFileError` naming each with its line and column.
    /// `members` lists what it holds. `trim_memory` as for `Factory()`.
    #[staticmethod]
    #[pyo3(signature = (path, kubeconfig = None, context = None, *, trim_memory = true))]
    fn from_file(
        py: Python<'_>,
        path: std::path::PathBuf,
        kubeconfig: Option<String>,
        context: Option<String>,
        trim_memory: bool,
    ) -> PyResult<Self> {
        let client = client(py, kubeconfig, context)?;
        let set = wait(py, ResourceSet::from_file(client, path))?.map_err(errors::declarative)?;
        Ok(Factory::register(
            set.factory().clone(),
            Some(set),
            trim_memory,
        ))
    }

    /// The entries of the config file (`from_file`) and the informer each
    /// holds: a pattern has one member per resource it selects. Empty for a
    /// factory made without a file.
    #[getter]
    fn members(&self, py: Python<'_>) -> PyResult<Vec<Member>> {
        let Some(set) = self.set.clone() else {
            return Ok(Vec::new());
        };
        let members = wait(py, async move { set.members().await })?;
        Ok(members.into_iter().map(Member::from).collect())
    }

    /// The informer of `resource`: any name the cluster knows it by (plural,
    /// kind, short name, `plural.group`, `plural.version.group`), resolved
    /// through discovery; a CRD not installed yet is waited for. Options
    /// here narrow the factory's; `indexes` maps index names to JMESPath
    /// expressions (an index already there under the same expression is
    /// kept; another expression under its name is refused). Started at once
    /// when the factory is.
    #[pyo3(signature = (resource, *, namespace = None, label_selector = None, field_selector = None, indexes = None, storage = None, metadata_only = false))]
    #[allow(clippy::too_many_arguments)]
    fn informer(
        &self,
        py: Python<'_>,
        resource: &str,
        namespace: Option<String>,
        label_selector: Option<String>,
        field_selector: Option<String>,
        indexes: Option<BTreeMap<String, String>>,
        storage: Option<&str>,
        metadata_only: bool,
    ) -> PyResult<Informer> {
        let resource = non_empty(resource, "resource")?.to_owned();
        let asked = Asked::new(
            namespace,
            label_selector,
            field_selector,
            storage,
            metadata_only,
        )?;
        self.one(py, resource, asked, indexes.as_ref())
    }

    /// The informers of every resource a pattern selects in discovery now:
    /// `"*.example.com"` (a group glob), `"custom:*"` (resources defined by
    /// CRDs), `"group:apps"`, `"category:all"`; a plain name gives its one
    /// informer. Options and `indexes` as for `informer`, for each. A
    /// one-time selection: a config file's patterns (`from_file`) follow
    /// CRDs as they come and go.
    #[pyo3(signature = (pattern, *, namespace = None, label_selector = None, field_selector = None, indexes = None, storage = None, metadata_only = false))]
    #[allow(clippy::too_many_arguments)]
    fn matching(
        &self,
        py: Python<'_>,
        pattern: &str,
        namespace: Option<String>,
        label_selector: Option<String>,
        field_selector: Option<String>,
        indexes: Option<BTreeMap<String, String>>,
        storage: Option<&str>,
        metadata_only: bool,
    ) -> PyResult<Vec<Informer>> {
        let asked = Asked::new(
            namespace,
            label_selector,
            field_selector,
            storage,
            metadata_only,
        )?;
        let Some(parsed) =
            ResourcePattern::parse(non_empty(pattern, "pattern")?).map_err(errors::factory)?
        else {
            return Ok(vec![self.one(
                py,
                pattern.to_owned(),
                asked,
                indexes.as_ref(),
            )?]);
        };
        let factory = self.factory.clone();
        let handles = wait(py, async move {
            factory
                .for_pattern(&parsed, |options| asked.clone().apply(options))
                .await
        })?
        .map_err(errors::factory)?;
        handles
            .into_iter()
            .map(|handle| Informer::with_indexes(handle, indexes.as_ref()))
            .collect()
    }

    /// Starts every informer asked for so far; those asked for later start
    /// at once.
    fn start(&self) -> PyResult<()> {
        let _entered = runtime().enter();
        match &self.set {
            Some(set) => set.start(),
            None => self.factory.start(),
        }
        .map_err(errors::factory)
    }

    /// Waits until every informer has synced, releasing the GIL; raises
    /// `NotSyncedError` (`SyncTimeoutError` when the time ran out) for the
    /// first that has not, saying why.
    #[pyo3(signature = (timeout = 60.0))]
    fn wait_for_sync(&self, py: Python<'_>, timeout: f64) -> PyResult<()> {
        let timeout = seconds(timeout, "timeout")?;
        let factory = self.factory.clone();
        wait(
            py,
            async move { factory.wait_for_cache_sync(timeout).await },
        )?
        .into_result()
        .map_err(errors::factory)
    }

    /// `wait_for_sync` as an awaitable, for asyncio.
    #[pyo3(signature = (timeout = 60.0))]
    fn synced(slf: Py<Self>, py: Python<'_>, timeout: f64) -> PyResult<Py<PyAny>> {
        crate::aio(py, "wait_for_sync", (slf, timeout), None)
    }

    /// Waits until every informer caching objects like `obj` (an object
    /// the server returned from a write) reflects it; returns how many
    /// there were.
    #[pyo3(signature = (obj, timeout = 30.0))]
    fn wait_for_object(
        &self,
        py: Python<'_>,
        obj: &Bound<'_, PyAny>,
        timeout: f64,
    ) -> PyResult<usize> {
        let timeout = seconds(timeout, "timeout")?;
        let object = written_object(py, obj)?;
        let factory = self.factory.clone();
        wait(py, async move {
            factory.wait_for_object(&object, timeout).await
        })?
        .map_err(errors::informer)
    }

    /// `Informer.wait_until` over several informers at once: until `goal`
    /// is true of the objects picked in each of `informers` (by default
    /// every informer of the factory), all of them, any or none. The
    /// report's objects name their `resource`.
    #[pyo3(signature = (
        goal, informers = None, *, keys = None, namespace = None, label_selector = None,
        index = None, quantifier = "all", timeout = 30.0,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn wait_until(
        &self,
        py: Python<'_>,
        goal: &str,
        informers: Option<&Bound<'_, PyAny>>,
        keys: Option<&Bound<'_, PyAny>>,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        index: Option<(String, String)>,
        quantifier: &str,
        timeout: f64,
    ) -> PyResult<WaitReport> {
        let informers: Vec<_> = match informers {
            Some(informers) => informers
                .try_iter()?
                .map(|item| {
                    let informer: PyRef<'_, Informer> = item?.extract()?;
                    Ok(informer.0.informer().clone())
                })
                .collect::<PyResult<_>>()?,
            None => self
                .factory
                .informers()
                .iter()
                .map(|h| h.informer().clone())
                .collect(),
        };
        if informers.is_empty() {
            return Err(PyValueError::new_err("wait_until: no informer to wait on"));
        }
        let chosen = Chosen {
            keys,
            namespace,
            label_selector,
            index,
        };
        waiting::wait_until(py, &informers, goal, chosen, quantifier, timeout)
    }

    /// `wait_until` as an awaitable, for asyncio (the wait runs on a worker
    /// thread of the event loop's default executor).
    #[pyo3(signature = (goal, informers = None, **kwargs))]
    fn until(
        slf: Py<Self>,
        py: Python<'_>,
        goal: Py<PyAny>,
        informers: Option<Py<PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        crate::aio(py, "wait_until", (slf, goal, informers), kwargs)
    }

    /// Every informer asked for.
    #[getter]
    fn informers(&self) -> Vec<Informer> {
        self.factory.informers().into_iter().map(Informer).collect()
    }

    /// Stops every informer (writing snapshots when asked for), waiting at
    /// most `timeout` seconds; returns whether everything finished. The
    /// factory cannot be started again.
    #[pyo3(signature = (timeout = 10.0))]
    fn shutdown(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let timeout: Duration = seconds(timeout, "timeout")?;
        RUNNING.lock().retain(|(id, _, _)| *id != self.id);
        self.stop.cancel();
        wait(py, self.running().shutdown(timeout))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.shutdown(py, 10.0)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("<Factory {} informers>", self.factory.informers().len())
    }
}
