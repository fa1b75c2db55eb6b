//! Decoding a list page of 500 Widgets (~3.5 KB of JSON each, with
//! managedFields): this library's object-by-object decoding against
//! kube-core's `ObjectList<DynamicObject>` (whose flattened fields make serde
//! buffer the page into an intermediate tree first).
//!
//! `cargo bench --bench decode`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kube_core::{DynamicObject, ObjectList};
use serde_json::{Value, json};

const WIDGET: &str = include_str!("../bench/peers/data/widget.json");
const PAGE: usize = 500;

fn page() -> String {
    let template: Value = serde_json::from_str(WIDGET).expect("widget.json is JSON");
    let items: Vec<Value> = (0..PAGE)
        .map(|i| {
            let mut w = template.clone();
            w["metadata"]["name"] = json!(format!("widget-{i:06}"));
            w["metadata"]["uid"] = json!(format!("00000000-0000-0000-0000-{i:012}"));
            w
        })
        .collect();
    json!({
        "apiVersion": "bench.kdi.dev/v1",
        "kind": "WidgetList",
        "metadata": { "resourceVersion": "12345", "continue": "token" },
        "items": items,
    })
    .to_string()
}

fn decode(c: &mut Criterion) {
    let text = page();
    let mut group = c.benchmark_group("decode_page_of_500_widgets");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(20);
    group.bench_function("wire_decode_list", |b| {
        b.iter(|| {
            let page = kube_dynamic_informer::wire::decode_list(&text).expect("a list");
            assert!(page.skipped.is_empty());
            page.objects.len()
        })
    });
    group.bench_function("kube_core_object_list", |b| {
        b.iter(|| {
            let list: ObjectList<DynamicObject> = serde_json::from_str(&text).expect("a list");
            list.items.len()
        })
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
