//! `kdi watch`: events as JSON lines.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use kube_dynamic_informer::config::InformerSet;
use kube_dynamic_informer::index::IndexFn;
use kube_dynamic_informer::informer::Event;

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::informers::{Declared, Selection, start_and_sync};
use crate::output::event_line;
use crate::parse_duration_arg;

#[derive(Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Include the whole object in each line.
    #[arg(long)]
    pub object: bool,
    /// Include each object's values for these indexes (repeatable; `all` for
    /// every index).
    #[arg(long = "index-values", value_name = "INDEX")]
    pub index_values: Vec<String>,
    /// Print the content of Secrets and of resources the config marks
    /// `sensitive` (values, the last-applied annotation, index values)
    /// instead of redacting it.
    #[arg(long)]
    pub show_secrets: bool,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    pub max_events: Option<u64>,
    /// Stop after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub duration: Option<Duration>,
    /// Leave out the initial Add events of objects that existed at start.
    #[arg(long)]
    pub skip_initial: bool,
}

pub async fn watch(cluster: &Cluster, set: InformerSet, args: WatchArgs) -> Result<(), Failure> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let object = args.object;
    let skip_initial = args.skip_initial;
    let wanted_indexes = args.index_values.clone();
    let registrations = std::sync::Mutex::new(Vec::new());
    let (factory, _informers) = start_and_sync(cluster, set, &args.selection, |informers| {
        for declared in informers {
            let Declared {
                name,
                informer,
                indexes,
                ..
            } = declared;
            let redaction = declared.redaction(args.show_secrets);
            let tx = tx.clone();
            let name = name.clone();
            let resource = informer.resource().to_string();
            let indexes: Vec<(String, IndexFn)> = indexes
                .iter()
                .filter(|(n, _)| wanted_indexes.iter().any(|w| w == "all" || w == *n))
                .map(|(n, f)| (n.clone(), f.clone()))
                .collect();
            let indexes = Arc::new(indexes);
            let reg = informer.informer().add_handler(move |e: Event| {
                if skip_initial
                    && matches!(
                        e,
                        Event::Add {
                            in_initial_list: true,
                            ..
                        }
                    )
                {
                    return;
                }
                let line = event_line(&name, &resource, &e, object, redaction, &indexes);
                let _ = tx.send(line);
            });
            registrations
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(reg);
        }
    })
    .await?;
    drop(tx);
    let deadline = args.duration.map(|d| tokio::time::Instant::now() + d);
    let mut count = 0u64;
    let stdout = std::io::stdout();
    let result = loop {
        let next = match deadline {
            Some(d) => tokio::select! {
                line = rx.recv() => line,
                _ = tokio::time::sleep_until(d) => break Ok(()),
                _ = tokio::signal::ctrl_c() => break Ok(()),
            },
            None => tokio::select! {
                line = rx.recv() => line,
                _ = tokio::signal::ctrl_c() => break Ok(()),
            },
        };
        let Some(line) = next else { break Ok(()) };
        let mut out = stdout.lock();
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            // stdout closed (e.g. piped into `head`): stop quietly.
            break Ok(());
        }
        count += 1;
        if args.max_events.is_some_and(|m| count >= m) {
            break Ok(());
        }
    };
    factory.shutdown().await;
    result
}
