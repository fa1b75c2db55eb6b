//! A measurement for BENCHMARKS.md ("Handler filters"): what delivering a
//! burst of status-only updates of 50,000 Widgets costs a handler of every
//! event, and one that asks for changes of `spec` only.
//!
//! ```text
//! cargo test --release --lib -- --ignored --nocapture a_burst_of_status_updates
//! ```
//!
//! The updates are fed to the dispatcher directly, as the informer hands
//! them on once its cache has taken them (the store's writes and the
//! decoding of the wire are done beforehand, outside what is measured): a
//! handler's cost is the CPU of the dispatching thread while it hands the
//! events on (its CPU clock, in nanoseconds), plus that of every other
//! thread — the handler pool's, from their `/proc/self/task/*/schedstat` —
//! until the handler is done with them. The handlers do next to nothing (count the event,
//! read the object's name): what is measured is delivering an event.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use futures::FutureExt;
use futures::future::BoxFuture;
use kube_client::api::{ListParams, WatchParams};
use kube_core::{ApiResource, DynamicObject};
use serde_json::json;

use super::{Applied, Event};
use crate::cache::ChangePredicate;
use crate::cache::compact::{CompactObject, Interner};
use crate::cache::store::{Storage, StoreWriter};
use crate::informer::{HandlerOptions, InformerOptions, SharedInformer};
use crate::wire::list_watch::{ListPage, ListWatch, ListWatchError, WatchStream};

const OBJECTS: usize = 50_000;
/// Events handed on between two readings of the clocks.
const CHUNK: usize = 1_000;
const ROUNDS: usize = 5;

/// A list-watch never asked: the informer is not started.
struct Unused;

impl ListWatch for Unused {
    fn list(&self, _: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        futures::future::pending().boxed()
    }

    fn watch(
        &self,
        _: &WatchParams,
        _: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        futures::future::pending().boxed()
    }
}

/// CPU time of this thread, in nanoseconds: its clock, read to the
/// nanosecond (its `schedstat` is brought up to date only at the
/// scheduler's ticks while it runs).
fn this_thread_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// CPU time of every other thread of the process, in nanoseconds.
fn other_threads_ns() -> u64 {
    let me = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_owned()));
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|t| Some(t.file_name()) != me)
                .map(|t| schedstat(&t.path().join("schedstat")))
                .sum()
        })
        .unwrap_or(0)
}

fn schedstat(path: &std::path::Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn widget(template: &serde_json::Value, i: usize, rv: u64) -> Arc<DynamicObject> {
    let mut w = template.clone();
    w["metadata"]["name"] = json!(format!("widget-{i:06}"));
    w["metadata"]["namespace"] = json!(format!("bench-{}", i % 10));
    w["metadata"]["resourceVersion"] = json!(rv.to_string());
    w["status"]["tick"] = json!(rv);
    Arc::new(serde_json::from_value(w).expect("a widget"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handler {
    /// No handler: what the dispatcher costs anyway.
    None,
    /// A handler of every event that does nothing with it: what delivering
    /// an event costs.
    EveryEvent,
    /// A handler of every event that tells a change of `spec` apart itself,
    /// reading both states in place (`CachedObject::pointer`).
    ComparesInPlace,
    /// A handler of every event that tells a change of `spec` apart itself
    /// from the decoded objects (`CachedObject::object`).
    ComparesDecoded,
    /// A handler of `spec` changes (`HandlerOptions::changes`).
    SpecChanges,
}

impl Handler {
    const ALL: [Handler; 5] = [
        Handler::None,
        Handler::EveryEvent,
        Handler::ComparesInPlace,
        Handler::ComparesDecoded,
        Handler::SpecChanges,
    ];

    fn name(self) -> &'static str {
        match self {
            Handler::None => "no handler",
            Handler::EveryEvent => "every event, doing nothing",
            Handler::ComparesInPlace => "every event, comparing spec in place",
            Handler::ComparesDecoded => "every event, comparing spec decoded",
            Handler::SpecChanges => "spec changes only (a change predicate)",
        }
    }
}

/// One chunk of status updates (`CHUNK` Widgets from `first`), handed to
/// a handler of `kind` registered for it: the CPU it took, in nanoseconds
/// an event, on the dispatching thread and on the others together.
fn chunk(
    informer: &SharedInformer,
    writer: &mut StoreWriter,
    template: &serde_json::Value,
    rv: &mut u64,
    first: usize,
    kind: Handler,
) -> f64 {
    let (tx, rx) = mpsc::channel::<()>();
    let seen = Arc::new(AtomicU64::new(0));
    let handler = {
        let seen = seen.clone();
        let tx = parking_lot::Mutex::new(tx);
        move |e: Event| {
            std::hint::black_box(e.object().name().map(str::len));
            if let Event::Update { old, new, .. } = &e {
                let spec_changed = match kind {
                    Handler::ComparesInPlace => old.pointer("/spec") != new.pointer("/spec"),
                    Handler::ComparesDecoded => {
                        old.object().data.get("spec") != new.object().data.get("spec")
                    }
                    _ => true,
                };
                std::hint::black_box(spec_changed);
            }
            if seen.fetch_add(1, Ordering::Relaxed) + 1 == CHUNK as u64 {
                let _ = tx.lock().send(());
            }
        }
    };
    let options = HandlerOptions::default().skip_replay(true);
    let registration = match kind {
        Handler::None => None,
        Handler::EveryEvent | Handler::ComparesInPlace | Handler::ComparesDecoded => {
            Some(informer.add_handler_with(handler, options))
        }
        Handler::SpecChanges => {
            Some(informer.add_handler_with(handler, options.changes(ChangePredicate::spec())))
        }
    };
    let shared = &informer.shared;
    // The updates as the cache has taken them; their objects are kept
    // until the chunk is done, so that freeing them (which the informer
    // does with or without handlers) is not counted.
    let mut kept = Vec::with_capacity(CHUNK);
    let applied: Vec<Applied> = (first..first + CHUNK)
        .map(|i| {
            *rv += 1;
            let new = widget(template, i, *rv);
            let (stored, old) = writer.upsert_held(new.clone()).expect("keyed");
            let old = old.expect("replaced");
            kept.push((new, old.clone()));
            Applied::event(Event::Update {
                old,
                new: stored,
                is_resync: false,
            })
        })
        .collect();
    let elsewhere = other_threads_ns();
    let started = this_thread_ns();
    for a in applied {
        let mut d = shared.dispatch.lock();
        shared.hand_to_listeners(&mut d, a);
    }
    let dispatch = this_thread_ns() - started;
    if !matches!(kind, Handler::None | Handler::SpecChanges) {
        rx.recv().expect("the handler runs");
    }
    let others = other_threads_ns() - elsewhere;
    // Freed outside the count: the informer frees them with or without
    // handlers (see `Retired`).
    drop(kept);
    shared.dispatch.lock().retired.release_all();
    if let Some(registration) = registration {
        match kind {
            Handler::SpecChanges => assert_eq!(registration.filtered(), CHUNK as u64),
            _ => assert_eq!(registration.delivered(), CHUNK as u64),
        }
        registration.remove();
    }
    if kind == Handler::SpecChanges {
        assert_eq!(
            seen.load(Ordering::Relaxed),
            0,
            "no status update delivered"
        );
    }
    #[allow(clippy::cast_precision_loss)]
    let per = (dispatch + others) as f64 / CHUNK as f64;
    per
}

/// One burst of status updates of every Widget, in chunks handed in turn
/// to each kind of handler (so that each kind's chunks are spread over the
/// cache and over the time of the burst). What each chunk cost goes to
/// `spent`, by kind: for each turn through the kinds, that chunk's CPU
/// less the CPU of the turn's chunk with no handler (that one's own CPU for
/// the kind with none).
fn burst(
    informer: &SharedInformer,
    writer: &mut StoreWriter,
    template: &serde_json::Value,
    rv: &mut u64,
    spent: &mut [Vec<f64>],
) {
    let kinds = Handler::ALL.len();
    for turn in 0..OBJECTS / CHUNK / kinds {
        let mut none = 0.0;
        for (k, kind) in Handler::ALL.iter().enumerate() {
            let first = (turn * kinds + k) * CHUNK;
            let cost = chunk(informer, writer, template, rv, first, *kind);
            if *kind == Handler::None {
                none = cost;
                spent[k].push(cost);
            } else {
                spent[k].push(cost - none);
            }
        }
    }
}

/// What keeping a digest of `spec` costs the writer: nanoseconds to build
/// the compact form of a Widget without it, and how many more with it
/// (medians of rounds over [`CHUNK`] Widgets, each built both ways side by
/// side, in turn first).
fn digest_cost(template: &serde_json::Value) -> (f64, f64) {
    let widgets: Vec<_> = (0..CHUNK).map(|i| widget(template, i, 1)).collect();
    let mut interner = Interner::new();
    let spec: [Box<str>; 1] = ["spec".into()];
    let mut timed = |w: &DynamicObject, fields: &[Box<str>]| {
        let started = this_thread_ns();
        std::hint::black_box(CompactObject::digesting(w, &mut interner, fields));
        this_thread_ns() - started
    };
    // Once first, so that the Widgets' `fieldsV1` trees are shared.
    for w in &widgets {
        timed(w, &[]);
    }
    let (mut without, mut more) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS * 4 {
        let (mut plain, mut digested) = (0, 0);
        for (i, w) in widgets.iter().enumerate() {
            if i % 2 == 0 {
                plain += timed(w, &[]);
                digested += timed(w, &spec);
            } else {
                digested += timed(w, &spec);
                plain += timed(w, &[]);
            }
        }
        #[allow(clippy::cast_precision_loss)]
        let per = |ns: u64| ns as f64 / CHUNK as f64;
        without.push(per(plain));
        more.push(per(digested) - per(plain));
    }
    (median(without), median(more))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[test]
#[ignore = "a measurement for BENCHMARKS.md: prints what a handler of spec changes costs beside one of every event"]
fn a_burst_of_status_updates_costs_a_handler_of_spec_changes_next_to_nothing() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/peers/data/widget.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let template: serde_json::Value = serde_json::from_str(&text).expect("widget.json");
    let resource = ApiResource {
        group: "bench.kdi.dev".into(),
        version: "v1".into(),
        api_version: "bench.kdi.dev/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    for storage in [Storage::Compact, Storage::Objects] {
        let options = InformerOptions::default().storage(storage);
        let informer = SharedInformer::with_list_watch(Unused, resource.clone(), options);
        let (_, mut writer) = informer.prepare().expect("not started");
        let mut rv = 1;
        for i in 0..OBJECTS {
            writer.upsert(widget(&template, i, rv));
        }
        // A burst first, not counted: the states written before a handler
        // watched `spec` keep no digest of it.
        let mut spent: Vec<Vec<f64>> = vec![Vec::new(); Handler::ALL.len()];
        burst(&informer, &mut writer, &template, &mut rv, &mut spent);
        let mut spent: Vec<Vec<f64>> = vec![Vec::new(); Handler::ALL.len()];
        for _ in 0..ROUNDS {
            burst(&informer, &mut writer, &template, &mut rv, &mut spent);
        }
        let medians: Vec<f64> = spent.into_iter().map(median).collect();
        eprintln!(
            "{storage:?}, {OBJECTS} Widgets, status-only updates, {ROUNDS} bursts: CPU an event (median of the chunks of {CHUNK}), beyond the chunk with no handler beside it (median {:.3} µs):",
            medians[0] / 1000.0
        );
        for (k, kind) in Handler::ALL.iter().enumerate().skip(1) {
            eprintln!(
                "  {:<40} {:>7.3} µs  (spec changes only: {:.3}× this)",
                kind.name(),
                medians[k] / 1000.0,
                medians[4] / medians[k]
            );
        }
    }
    let (without, more) = digest_cost(&template);
    eprintln!(
        "Compact, the writer building a Widget: {:.3} µs, and {:.3} µs more keeping a digest of spec (medians of {} rounds of {CHUNK})",
        without / 1000.0,
        more / 1000.0,
        ROUNDS * 4
    );
}
