//! `CachedObject`: a light handle on a cached object. Its metadata and
//! `obj["spec"]`-style reads build only the Python values read; `to_dict()`
//! builds the whole object.

use kube_dynamic_informer::cache::{CachedObject as Cached, ValueRef};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// A handle on one object of a cache (or of an event), read in place.
#[pyclass(module = "kube_dynamic_informer", frozen, name = "CachedObject")]
pub(crate) struct CachedObject(pub(crate) Cached);

impl CachedObject {
    /// Python objects for many handles, as a list.
    pub(crate) fn list(py: Python<'_>, objects: Vec<Cached>) -> PyResult<Bound<'_, PyList>> {
        PyList::new(py, objects.into_iter().map(CachedObject))
    }
}

/// A value of the object as the Python value `json.loads` would give.
fn to_python<'py>(py: Python<'py>, value: &ValueRef<'_>) -> PyResult<Bound<'py, PyAny>> {
    if let Some(object) = value.as_object() {
        let dict = PyDict::new(py);
        for (key, value) in object.iter() {
            dict.set_item(key, to_python(py, &value)?)?;
        }
        return Ok(dict.into_any());
    }
    if let Some(array) = value.as_array() {
        let items = array
            .iter()
            .map(|item| to_python(py, &item))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(PyList::new(py, items)?.into_any());
    }
    if let Some(s) = value.as_str() {
        return Ok(s.into_pyobject(py)?.into_any());
    }
    if let Some(b) = value.as_bool() {
        return Ok(pyo3::types::PyBool::new(py, b).to_owned().into_any());
    }
    if let Some(i) = value.as_i64() {
        return Ok(i.into_pyobject(py)?.into_any());
    }
    if value.is_null() {
        return Ok(py.None().into_bound(py));
    }
    // What is left: numbers beyond i64 (u64 or floats), as JSON reads them.
    let text = serde_json::to_string(value)
        .map_err(|e| PyValueError::new_err(format!("a number of the object: {e}")))?;
    json_loads(py, text.as_bytes())
}

/// `json.loads(bytes)`.
fn json_loads<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?
        .call_method1("loads", (PyBytes::new(py, bytes),))
}

/// A mapping of strings (labels, annotations) as a dict.
fn str_map<'py>(
    py: Python<'py>,
    entries: impl Iterator<Item = (&'py str, &'py str)>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in entries {
        dict.set_item(key, value)?;
    }
    Ok(dict)
}

/// `/key` as a JSON pointer (RFC 6901: `~` and `/` escaped).
fn top_level_pointer(key: &str) -> String {
    format!("/{}", key.replace('~', "~0").replace('/', "~1"))
}

#[pymethods]
impl CachedObject {
    /// `metadata.name`.
    #[getter]
    fn name(&self) -> Option<&str> {
        self.0.name()
    }

    /// `metadata.namespace`; `None` for a cluster-scoped object.
    #[getter]
    fn namespace(&self) -> Option<&str> {
        self.0.namespace()
    }

    /// The cache key: `namespace/name`, or `name` when cluster-scoped.
    #[getter]
    fn key(&self) -> Option<String> {
        self.0.key()
    }

    /// `metadata.uid`.
    #[getter]
    fn uid(&self) -> Option<&str> {
        self.0.uid()
    }

    /// `metadata.resourceVersion`.
    #[getter]
    fn resource_version(&self) -> Option<&str> {
        self.0.resource_version()
    }

    /// `apiVersion`.
    #[getter]
    fn api_version(&self) -> Option<&str> {
        self.0.api_version()
    }

    /// `kind`.
    #[getter]
    fn kind(&self) -> Option<&str> {
        self.0.kind()
    }

    /// `metadata.labels`, as a new dict.
    #[getter]
    fn labels<'py>(&'py self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        str_map(py, self.0.labels().iter())
    }

    /// `metadata.annotations`, as a new dict.
    #[getter]
    fn annotations<'py>(&'py self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        str_map(py, self.0.annotations().iter())
    }

    /// The value at a JSON pointer (`/spec/replicas`,
    /// `/status/conditions/0/type`), or `default` when there is none.
    #[pyo3(signature = (pointer, default = None))]
    fn pointer<'py>(
        &self,
        py: Python<'py>,
        pointer: &str,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.0.pointer(pointer) {
            Some(value) => to_python(py, &value),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    /// A top-level field (`"spec"`, `"status"`, `"metadata"`, ...), or
    /// `default` when the object has none.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.pointer(py, &top_level_pointer(key), default)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.0.pointer(&top_level_pointer(key)) {
            Some(value) => to_python(py, &value),
            None => Err(PyKeyError::new_err(key.to_owned())),
        }
    }

    fn __contains__(&self, key: &str) -> bool {
        self.0.pointer(&top_level_pointer(key)).is_some()
    }

    /// The whole object as a dict (what `json.loads` gives for its JSON).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_loads(py, &self.json_bytes()?)
    }

    /// The whole object's JSON, as the API server would write it.
    fn json(&self) -> PyResult<String> {
        String::from_utf8(self.json_bytes()?)
            .map_err(|e| PyValueError::new_err(format!("the object's JSON: {e}")))
    }

    fn __repr__(&self) -> String {
        format!(
            "<CachedObject {} {} rv={}>",
            self.0.kind().unwrap_or("?"),
            self.0.key().as_deref().unwrap_or("?"),
            self.0.resource_version().unwrap_or("?"),
        )
    }
}

impl CachedObject {
    fn json_bytes(&self) -> PyResult<Vec<u8>> {
        let mut out = Vec::new();
        self.0
            .write_json(&mut out)
            .map_err(|e| PyValueError::new_err(format!("writing the object as JSON: {e}")))?;
        Ok(out)
    }
}
