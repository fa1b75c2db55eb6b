//! This library's peer: a shared informer with three JMESPath indexes and two
//! handlers, measuring itself (see the crate docs for the output).
//!
//! With `--strip-per-page` (and `--strip-managed-fields`) the transform runs
//! inside a wrapping `ListWatch`, on each list page and watch event as it
//! arrives: what a user could do by hand, against which the built-in
//! transform (which also runs page by page) is checked.

use std::time::Instant;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kdi_bench_peers::{
    Args, Handlers, cpu_seconds, emit, finish_run, percentile, proc_status_mb, query_values, round,
};
use kube::api::{ListParams, WatchParams};
use kube_core::DynamicObject;
use kube_dynamic_informer::index::IndexFn;
use kube_dynamic_informer::informer::{Event, SharedInformer};
use kube_dynamic_informer::list_watch::{
    ApiListWatch, Capabilities, ListPage, ListWatch, ListWatchError, WatchEvent, WatchStream,
};
use kube_dynamic_informer::options::InformerOptions;
use kube_dynamic_informer::scope::Scope;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Strips managedFields from every object as each list page or watch event
/// arrives.
struct StripPerPage(ApiListWatch);

fn strip(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
}

impl ListWatch for StripPerPage {
    fn list(&self, params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        let page = self.0.list(params);
        async move {
            let mut page = page.await?;
            page.objects.iter_mut().for_each(strip);
            Ok(page)
        }
        .boxed()
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        let stream = self.0.watch(params, resource_version);
        async move {
            let stream = stream.await?.map(|event| {
                event.map(|mut e| {
                    if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) =
                        &mut e
                    {
                        strip(o);
                    }
                    e
                })
            });
            Ok(stream.boxed())
        }
        .boxed()
    }

    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
}

#[tokio::main]
async fn main() {
    let start = Instant::now();
    let strip_per_page = std::env::args().any(|a| a == "--strip-per-page");
    let streaming_list = std::env::args().any(|a| a == "--streaming-list");
    let args = Args::parse();
    let client = args.client().await;

    let mut options = InformerOptions::default().streaming_list(streaming_list);
    let informer = if strip_per_page {
        SharedInformer::with_list_watch(
            StripPerPage(ApiListWatch::new(
                client,
                args.resource(),
                Scope::Namespaced,
            )),
            args.resource(),
            options,
        )
    } else {
        if args.strip_managed_fields {
            options = options.strip_managed_fields();
        }
        SharedInformer::new(client, args.resource(), Scope::Namespaced, options)
            .expect("building the informer")
    };
    for (name, expression) in args.indexes() {
        informer
            .add_index(
                name,
                IndexFn::jmespath(name, expression).expect("index expression"),
            )
            .expect("adding an index");
    }

    let handlers = Handlers::new(&args);
    let h1 = handlers.clone();
    informer.add_handler(move |event: Event| {
        if let Event::Update {
            new,
            is_resync: false,
            ..
        } = &event
        {
            h1.lag_on_update(new);
        }
    });
    let h2 = handlers.clone();
    informer.add_handler(move |event: Event| match &event {
        Event::Add { object, .. } => h2.tally(object, 1),
        Event::Update { new, .. } => h2.tally(new, 0),
        Event::Delete { object, .. } => h2.tally(object, -1),
    });

    let cancel = CancellationToken::new();
    let task = informer
        .start(cancel.clone())
        .expect("starting the informer");
    informer.wait_for_sync(args.timeout).await.expect("sync");
    let sync_s = start.elapsed().as_secs_f64();
    let cpu_sync = cpu_seconds();
    let rss_sync = proc_status_mb("VmRSS");
    tokio::time::sleep(args.settle).await;
    let rss_steady = proc_status_mb("VmRSS");
    let store = informer.store();
    let objects = store.len();

    let values = query_values(args.queries);
    // One untimed pass first, as every peer does: the first touch of each
    // object since it was cached is not what a steady reader sees.
    for value in &values {
        drop(store.by_index("node", value));
    }
    let mut durations = Vec::with_capacity(values.len());
    let mut hits = 0usize;
    for value in &values {
        let t = Instant::now();
        let items = store.by_index("node", value).expect("node index");
        let d = t.elapsed();
        hits += items.len();
        drop(items);
        durations.push(d.as_secs_f64() * 1e6);
    }
    durations.sort_by(f64::total_cmp);

    #[allow(clippy::cast_precision_loss)]
    let mut result = json!({
        "peer": match (strip_per_page, streaming_list) {
            (true, _) => "kdi-strip-per-page",
            (false, true) => "kdi-streaming-list",
            (false, false) => "kdi",
        },
        "dataset": args.dataset, "objects": objects, "strip": args.strip_managed_fields || strip_per_page,
        "sync_s": round(sync_s, 3), "cpu_sync_s": round(cpu_sync, 3),
        "rss_sync_mb": round(rss_sync, 1), "rss_steady_mb": round(rss_steady, 1),
        "by_index_p50_us": round(percentile(&durations, 50.0), 2),
        "by_index_p99_us": round(percentile(&durations, 99.0), 2),
        "by_index_hits_avg": round(hits as f64 / values.len().max(1) as f64, 1),
    });
    emit(&json!({"event": "synced", "peer": "kdi", "objects": objects}));

    finish_run(&mut result, &handlers, &args).await;
    cancel.cancel();
    let _ = task.await;
}
