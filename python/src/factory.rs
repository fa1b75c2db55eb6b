//! `Factory`: one cluster's client and the informers asked of it, shared by
//! resource and options.

use std::collections::HashMap;
use std::time::Duration;

use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use kube_core::DynamicObject;
use kube_dynamic_informer::InformerFactory;
use kube_dynamic_informer::informer::{InformerOptions, SnapshotOptions};
use kube_dynamic_informer::prelude::Storage;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::informer::{Informer, add_index, non_empty};
use crate::{errors, runtime, seconds, wait};

/// The informers of one cluster, shared by resource and options: asking
/// twice for the same resource with the same options gives the same cache.
#[pyclass(module = "kube_dynamic_informer", frozen)]
pub(crate) struct Factory(InformerFactory, u64);

/// The factories not shut down yet, for [`shutdown_all`].
/// Each with its number.
static RUNNING: parking_lot::Mutex<Vec<(u64, InformerFactory)>> =
    parking_lot::Mutex::new(Vec::new());

/// Shuts down every factory not shut down yet (at interpreter exit),
/// waiting up to 10 s for each.
#[pyfunction]
pub(crate) fn _shutdown_all(py: Python<'_>) -> PyResult<()> {
    let running = std::mem::take(&mut *RUNNING.lock());
    for (_, factory) in running {
        wait(py, async move {
            factory.shutdown_within(Duration::from_secs(10)).await
        })?;
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

#[pymethods]
impl Factory {
    /// Connects as the kubeconfig (a path; by default `$KUBECONFIG` or
    /// `~/.kube/config`, else the in-cluster service account) and context
    /// say. `namespace` limits every informer to one namespace; `storage`
    /// is `"compact"` (the default: a fraction of the memory) or
    /// `"objects"`; `snapshot_dir` keeps each cache on disk so that a
    /// restart resumes without listing.
    #[new]
    #[pyo3(signature = (kubeconfig = None, context = None, *, namespace = None, storage = "compact", snapshot_dir = None))]
    fn new(
        py: Python<'_>,
        kubeconfig: Option<String>,
        context: Option<String>,
        namespace: Option<String>,
        storage: &str,
        snapshot_dir: Option<String>,
    ) -> PyResult<Self> {
        let mut options = InformerOptions::default().storage(self::storage(storage)?);
        if let Some(namespace) = namespace {
            options = options.namespace(non_empty(&namespace, "namespace")?);
        }
        if let Some(dir) = snapshot_dir {
            options = options.snapshot(SnapshotOptions::new(dir));
        }
        let config = wait(py, config(kubeconfig, context))??;
        let client = {
            let _entered = runtime().enter();
            Client::try_from(config).map_err(|e| errors::config("building a client".into(), &e))?
        };
        let factory = InformerFactory::with_options(client, options);
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        RUNNING.lock().push((id, factory.clone()));
        Ok(Factory(factory, id))
    }

    /// The informer of `resource`: any name the cluster knows it by (plural,
    /// kind, short name, `plural.group`, `plural.group/version`), resolved
    /// through discovery; a CRD not installed yet is waited for. Options
    /// here narrow the factory's; `indexes` maps index names to JMESPath
    /// expressions. Started at once when the factory is.
    #[pyo3(signature = (resource, *, namespace = None, label_selector = None, field_selector = None, indexes = None, storage = None, metadata_only = false))]
    #[allow(clippy::too_many_arguments)]
    fn informer(
        &self,
        py: Python<'_>,
        resource: &str,
        namespace: Option<String>,
        label_selector: Option<String>,
        field_selector: Option<String>,
        indexes: Option<HashMap<String, String>>,
        storage: Option<&str>,
        metadata_only: bool,
    ) -> PyResult<Informer> {
        let resource = non_empty(resource, "resource")?.to_owned();
        let storage = storage.map(self::storage).transpose()?;
        let factory = self.0.clone();
        let handle = wait(py, async move {
            factory
                .for_resource_with(resource, |mut options| {
                    if let Some(namespace) = namespace {
                        options = options.namespace(namespace);
                    }
                    if let Some(selector) = label_selector {
                        options = options.label_selector(selector);
                    }
                    if let Some(selector) = field_selector {
                        options = options.field_selector(selector);
                    }
                    if let Some(storage) = storage {
                        options = options.storage(storage);
                    }
                    options.metadata_only(metadata_only)
                })
                .await
        })?
        .map_err(errors::factory)?;
        let mut indexes: Vec<(String, String)> = indexes.unwrap_or_default().into_iter().collect();
        indexes.sort();
        for (name, expression) in &indexes {
            // An index asked for again with the same expression is there.
            if handle.lister().store().index_names().contains(name) {
                continue;
            }
            add_index(&handle, name, expression)?;
        }
        Ok(Informer(handle))
    }

    /// Starts every informer asked for so far; those asked for later start
    /// at once.
    fn start(&self) -> PyResult<()> {
        let _entered = runtime().enter();
        self.0.start().map_err(errors::factory)
    }

    /// Waits until every informer has synced, releasing the GIL; raises
    /// `NotSyncedError` (`SyncTimeoutError` when the time ran out) for the
    /// first that has not, saying why.
    #[pyo3(signature = (timeout = 60.0))]
    fn wait_for_sync(&self, py: Python<'_>, timeout: f64) -> PyResult<()> {
        let timeout = seconds(timeout, "timeout")?;
        let factory = self.0.clone();
        wait(
            py,
            async move { factory.wait_for_cache_sync(timeout).await },
        )?
        .into_result()
        .map_err(errors::factory)
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
        let factory = self.0.clone();
        wait(py, async move {
            factory.wait_for_object(&object, timeout).await
        })?
        .map_err(errors::informer)
    }

    /// Every informer asked for.
    #[getter]
    fn informers(&self) -> Vec<Informer> {
        self.0.informers().into_iter().map(Informer).collect()
    }

    /// Stops every informer (writing snapshots when asked for), waiting at
    /// most `timeout` seconds; returns whether everything finished. The
    /// factory cannot be started again.
    #[pyo3(signature = (timeout = 10.0))]
    fn shutdown(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let timeout: Duration = seconds(timeout, "timeout")?;
        let factory = self.0.clone();
        RUNNING.lock().retain(|(id, _)| *id != self.1);
        wait(py, async move { factory.shutdown_within(timeout).await })
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
        format!("<Factory {} informers>", self.0.informers().len())
    }
}
