//! `kdi watch --metrics-addr`: the library's metrics in the Prometheus text
//! format, served over HTTP.

use std::net::SocketAddr;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

use crate::exit::Failure;

/// Buckets of the `_seconds` histograms: 100 µs to 5 minutes, for handler
/// calls (microseconds to seconds) and lists (milliseconds to minutes).
const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    300.0,
];

/// Installs the Prometheus recorder and serves `GET /metrics` (any path, in
/// fact) on `addr`. Must run before informers are created: they register
/// their series when created.
pub fn serve(addr: SocketAddr) -> Result<(), Failure> {
    // Bound here first, so that a port in use is reported before anything
    // else happens (the exporter binds inside a task, where an error would
    // only be logged).
    let probe = std::net::TcpListener::bind(addr)
        .map_err(|e| Failure::usage(format!("--metrics-addr {addr}: cannot listen there: {e}")))?;
    drop(probe);
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .and_then(PrometheusBuilder::install)
        .map_err(|e| Failure::usage(format!("--metrics-addr {addr}: {e}")))
}
