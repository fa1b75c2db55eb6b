//! Where `by_index` spends its time, without a server: a store of N Widgets
//! (`data/widget.json`, a real object with its managedFields, renamed per
//! copy) with the benchmark's three indexes, then the `node` query timed
//! three ways:
//!
//! - `by_index`: the library's call (value → index entries → `Arc` clones);
//! - `index_keys`: the same entries as `String` keys, no objects;
//! - `arc_in_index`: the floor, a plain `HashMap` of `Vec<Arc<DynamicObject>>`
//!   by node, with no keys and nothing to keep up to date.
//!
//! `target/bench/cargo/release/by_index_breakdown [N] [QUERIES]`

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use kdi_bench_peers::{NODES, percentile, query_values, round};
use kube_core::DynamicObject;
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::cache::StoreWriter;
use serde_json::json;

fn widget(template: &serde_json::Value, i: u32) -> DynamicObject {
    let mut v = template.clone();
    v["metadata"]["name"] = json!(format!("widget-{i:06}"));
    v["metadata"]["namespace"] = json!(format!("bench-{}", i % 10));
    v["metadata"]["uid"] = json!(format!("00000000-0000-0000-0000-{i:012}"));
    v["metadata"]["labels"]["app"] = json!(format!("app-{}", i % 100));
    v["spec"]["nodeName"] = json!(format!("node-{}", i % NODES));
    serde_json::from_value(v).expect("a DynamicObject")
}

fn time(values: &[String], mut f: impl FnMut(&str) -> usize) -> (f64, f64, f64) {
    for v in values {
        f(v);
    }
    let mut durations = Vec::with_capacity(values.len());
    let mut hits = 0;
    for v in values {
        let t = Instant::now();
        hits += f(v);
        durations.push(t.elapsed().as_secs_f64() * 1e6);
    }
    durations.sort_by(f64::total_cmp);
    #[allow(clippy::cast_precision_loss)]
    let avg_hits = hits as f64 / values.len() as f64;
    (
        percentile(&durations, 50.0),
        percentile(&durations, 99.0),
        avg_hits,
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().map_or(50_000, |a| a.parse().expect("N"));
    let queries: usize = args.next().map_or(20_000, |a| a.parse().expect("QUERIES"));
    let template: serde_json::Value =
        serde_json::from_str(include_str!("../../data/widget.json")).expect("widget.json");

    let mut writer = StoreWriter::new();
    let store = writer.reader();
    for (name, expression) in [
        ("app", "metadata.labels.app"),
        ("node", "spec.nodeName"),
        ("tag", "spec.tags"),
    ] {
        store
            .add_index(
                name,
                IndexFn::jmespath(name, expression).expect("expression"),
            )
            .expect("index");
    }
    let mut by_node: HashMap<Arc<str>, Vec<Arc<DynamicObject>>> = HashMap::new();
    for i in 0..n {
        let obj = Arc::new(widget(&template, i));
        let node: Arc<str> = obj.data["spec"]["nodeName"]
            .as_str()
            .expect("nodeName")
            .into();
        by_node.entry(node).or_default().push(obj.clone());
        writer.upsert(obj);
    }

    let values = query_values(queries);
    let report = |name: &str, (p50, p99, hits): (f64, f64, f64)| {
        println!(
            "{}",
            json!({"n": n, "query": name, "p50_us": round(p50, 2), "p99_us": round(p99, 2), "hits_avg": round(hits, 1)})
        );
    };
    report(
        "by_index",
        time(&values, |v| store.by_index("node", v).expect("index").len()),
    );
    report(
        "index_keys",
        time(&values, |v| {
            store.index_keys("node", v).expect("index").len()
        }),
    );
    report(
        "arc_in_index",
        time(&values, |v| {
            by_node.get(v).map_or(0, |objs| objs.to_vec().len())
        }),
    );
}
