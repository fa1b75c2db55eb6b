//! CPU per update of a store of 20,000 Widgets (bench/peers/data/widget.json,
//! three JMESPath indexes), each update decoded from JSON, written, and its
//! object dropped either by the updating thread or by another one, as event
//! handlers on a pool do.
//!
//! `cargo bench --bench update_threads`
//!
//! With glibc's malloc, memory freed on another thread than the one that
//! allocated it is what costs; the informer therefore frees event objects
//! itself once handlers are done with them (`Retired` in
//! src/informer/dispatch.rs).

use std::sync::Arc;

use kube_core::DynamicObject;
use kube_dynamic_informer::cache::{IndexFn, Storage, StoreWriter};

const WIDGET: &str = include_str!("../bench/peers/data/widget.json");
const OBJECTS: usize = 20_000;
const UPDATES: usize = 20_000;

/// This process's CPU time (user + system), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .expect("a stat line")
        .split_whitespace()
        .collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    ticks / 100.0
}

fn wire(template: &serde_json::Value, i: usize, rv: usize) -> Vec<u8> {
    let mut w = template.clone();
    w["metadata"]["name"] = serde_json::json!(format!("w-{i:06}"));
    w["metadata"]["namespace"] = serde_json::json!("bench");
    w["metadata"]["resourceVersion"] = serde_json::json!(rv.to_string());
    w["spec"]["stamp"] = serde_json::json!(rv);
    serde_json::to_vec(&w).expect("JSON")
}

fn run(storage: Storage, other_thread: bool) -> f64 {
    let template: serde_json::Value = serde_json::from_str(WIDGET).expect("widget.json");
    let mut writer = StoreWriter::with_storage(storage);
    let store = writer.reader();
    for (name, expression) in [
        ("color", "spec.color"),
        ("owner", "metadata.labels.owner"),
        ("size", "spec.size"),
    ] {
        store
            .add_index(
                name,
                IndexFn::jmespath(name, expression).expect("expression"),
            )
            .expect("index");
    }
    for i in 0..OBJECTS {
        let object: DynamicObject = serde_json::from_slice(&wire(&template, i, i)).expect("object");
        writer.upsert(Arc::new(object));
    }
    let bodies: Vec<Vec<u8>> = (0..UPDATES)
        .map(|u| wire(&template, (u * 7919) % OBJECTS, OBJECTS + u))
        .collect();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<DynamicObject>>(64);
    let handler = std::thread::spawn(move || {
        rx.into_iter()
            .map(|o| usize::from(o.metadata.name.is_some()))
            .sum::<usize>()
    });
    let started = cpu_seconds();
    for body in &bodies {
        let object = Arc::new(serde_json::from_slice::<DynamicObject>(body).expect("object"));
        drop(writer.upsert(object.clone()));
        if other_thread {
            tx.send(object).expect("the handler thread runs");
        }
    }
    drop(tx);
    handler.join().expect("the handler thread");
    (cpu_seconds() - started) * 1e6 / UPDATES as f64
}

fn main() {
    for storage in [Storage::Objects, Storage::Compact] {
        for other_thread in [false, true] {
            let dropped_by = if other_thread {
                "another thread"
            } else {
                "the updating thread"
            };
            println!(
                "{storage:?}, objects dropped by {dropped_by}: {:.0} µs of CPU an update",
                run(storage, other_thread)
            );
        }
    }
}
