//! `kube_dynamic_informer._native`: the library's factories, informers and
//! cached objects as Python classes. The Python package
//! (`python/kube_dynamic_informer/`) re-exports them with the exceptions and
//! the asyncio helpers written in Python.
//!
//! One tokio runtime per process runs every factory. A Python call that
//! waits (resolving a resource, `wait_for_sync`, ...) releases the GIL and
//! wakes every [`TICK`] to let Python deliver signals, so Ctrl-C raises
//! `KeyboardInterrupt` in the middle of a wait.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::prelude::*;

mod errors;
mod factory;
mod informer;
mod memory;
mod object;
mod waiting;

/// How often a blocking wait comes back to Python to check for signals.
const TICK: Duration = Duration::from_millis(100);

/// The process's runtime, started on first use.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("kdi-runtime")
            .enable_all()
            .build()
            .expect("a tokio runtime: the process cannot start threads")
    })
}

/// Runs `future` on the runtime to its end with the GIL released, checking
/// for signals (Ctrl-C) every [`TICK`]; a signal's exception (say,
/// `KeyboardInterrupt`) drops the future and is raised.
fn wait<F>(py: Python<'_>, future: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let mut future = Box::pin(future);
    loop {
        let done = py.detach(|| {
            runtime().block_on(async { tokio::time::timeout(TICK, &mut future).await.ok() })
        });
        if let Some(out) = done {
            return Ok(out);
        }
        py.check_signals()?;
    }
}

/// Calls `name` of `kube_dynamic_informer._aio` (the asyncio forms written
/// in Python) with `args` and `kwargs`.
fn aio<'py>(
    py: Python<'py>,
    name: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
    kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
) -> PyResult<Py<PyAny>> {
    Ok(py
        .import("kube_dynamic_informer._aio")?
        .getattr(name)?
        .call(args, kwargs)?
        .unbind())
}

/// One string or a sequence of them, from Python, as strings.
fn strings(value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if value.is_instance_of::<pyo3::types::PyString>() {
        Ok(vec![value.extract()?])
    } else {
        value.extract()
    }
}

/// A duration in seconds from Python: finite and not negative.
fn seconds(value: f64, what: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "{what} must be a finite number of seconds, not negative: {value}"
        ))
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<factory::Factory>()?;
    m.add_class::<factory::Member>()?;
    m.add_function(wrap_pyfunction!(factory::_shutdown_all, m)?)?;
    m.add_class::<informer::Informer>()?;
    m.add_class::<informer::Status>()?;
    m.add_class::<informer::Event>()?;
    m.add_class::<informer::Handler>()?;
    m.add_class::<object::CachedObject>()?;
    m.add_class::<waiting::WaitReport>()?;
    m.add_class::<waiting::ObjectOutcome>()?;
    Ok(())
}
