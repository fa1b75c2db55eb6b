//! `kdi serve`: the caches served through the Kubernetes API, for kubectl,
//! client-go, kube-rs and curl.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kube_dynamic_informer::cache::Redaction;
use kube_dynamic_informer::declarative::{
    AccessPolicy, InformerSet, ResourceSet, SetEvent, SetMember,
};
use kube_dynamic_informer::serve::{CacheServer, ServeOptions, ServedResource};
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::informers::{Selection, open, start_and_wait};
use crate::output::say;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// The address to listen on (a free port of 127.0.0.1 by default).
    /// Beyond loopback kdi serves only over TLS with a token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Write a kubeconfig that reaches this server (its address, CA and
    /// token) to FILE, readable by its owner only.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Read the token clients must send from FILE instead of making one.
    #[arg(long, value_name = "FILE", conflicts_with = "anonymous")]
    pub token_file: Option<PathBuf>,
    /// Keep the CA, its key and the token in DIR (made on the first start,
    /// owner-readable only) and reuse them at every later start, so that a
    /// kubeconfig written once keeps working after a restart.
    #[arg(long, value_name = "DIR")]
    pub credentials_dir: Option<PathBuf>,
    /// Serve plain HTTP instead of HTTPS (loopback only). kubectl and
    /// client-go send no token over plain HTTP: add --anonymous for them.
    #[arg(long)]
    pub insecure_http: bool,
    /// Accept clients without a token (loopback only).
    #[arg(long)]
    pub anonymous: bool,
    /// Serve the content of Secrets and of resources the config marks
    /// `sensitive` instead of redacting it (as `kdi get --show-secrets`).
    #[arg(long)]
    pub show_secrets: bool,
    /// Changes kept per resource for watches to resume from; a watch from
    /// further back lists again (410 Expired).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub history: usize,
    /// Serve the library's metrics in the Prometheus format at ADDR
    /// (`/metrics`), as `kdi watch --metrics-addr`.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Ask first and serve only what kdi may list and watch: a forbidden
    /// resource is absent, not empty (asked again every 30 s).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub skip_forbidden: bool,
}

/// Serves the caches of `set` until SIGINT or SIGTERM.
pub async fn serve(cluster: &Cluster, set: InformerSet, args: ServeArgs) -> Result<(), Failure> {
    let options = options(&args)?;
    let sel = &args.selection;
    let policy = if args.skip_forbidden {
        AccessPolicy::skip()
    } else {
        AccessPolicy::Watch
    };
    let (resource_set, members) = open(cluster, set, sel, policy).await?;
    let (_, events) = resource_set.subscribe().await;
    let server = CacheServer::new(options);
    for member in &members {
        offer(&server, &resource_set, member, args.show_secrets);
    }
    let cancel = CancellationToken::new();
    let listening = server
        .listen(cancel.clone())
        .await
        .map_err(|e| Failure::usage(format!("kdi serve: {e}")))?;
    let credentials = listening.credentials().clone();
    if let Some(path) = &args.kubeconfig_out {
        credentials
            .write_kubeconfig(path, "kdi-serve")
            .map_err(|e| Failure::usage(format!("--kubeconfig-out: {e}")))?;
    }
    say(format!(
        "kdi: serving {} resources at {}{}",
        server.served().len(),
        credentials.url(),
        args.kubeconfig_out
            .as_ref()
            .map(|p| format!(" (kubeconfig: {})", p.display()))
            .unwrap_or_default()
    ));
    let stop = crate::stop::stopped(None);
    tokio::pin!(stop);
    let synced = start_and_wait(&resource_set, &members, sel, false, || Ok(()), &mut stop).await;
    let result = match synced {
        Ok(_progress) => {
            say("kdi: every cache synced; serving until SIGINT or SIGTERM");
            tokio::select! {
                () = &mut stop => {}
                () = follow(&server, &resource_set, events, args.show_secrets) => {}
            }
            Ok(())
        }
        Err(failure) => Err(failure),
    };
    cancel.cancel();
    // Open watches end at once; a client reconnects elsewhere.
    let _ = tokio::time::timeout(Duration::from_secs(5), listening.stopped()).await;
    resource_set.shutdown().await;
    result
}

fn options(args: &ServeArgs) -> Result<ServeOptions, Failure> {
    let mut options = ServeOptions::default()
        .addr(args.listen)
        .history(args.history)
        .tls(!args.insecure_http)
        .anonymous(args.anonymous);
    if let Some(dir) = &args.credentials_dir {
        options = options.credentials_dir(dir);
    }
    if args.insecure_http && !args.anonymous {
        say(
            "kdi: warning: kubectl and client-go send no token over plain HTTP; they are refused unless --anonymous is given too",
        );
    }
    if let Some(path) = &args.token_file {
        let token = std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("--token-file {}: {e}", path.display())))?;
        let token = token.trim();
        if token.is_empty() {
            return Err(Failure::usage(format!(
                "--token-file {}: the file is empty",
                path.display()
            )));
        }
        options = options.token(token);
    }
    Ok(options)
}

/// Serves `member`'s informer when discovery serves its resource (a CRD's
/// table columns read from the CRD at the first table asked for).
fn offer(server: &CacheServer, set: &ResourceSet, member: &SetMember, show_secrets: bool) {
    let redaction =
        Redaction::for_resource(&member.informer.resource(), member.sensitive, show_secrets);
    if let Some(served) = ServedResource::from_factory(member.informer.clone(), set.factory()) {
        server.serve(served.redaction(redaction));
    }
}

/// Follows the set's changes: members that join are served, those that
/// leave withdrawn.
async fn follow(
    server: &CacheServer,
    set: &ResourceSet,
    mut events: tokio::sync::mpsc::UnboundedReceiver<SetEvent>,
    show_secrets: bool,
) {
    while let Some(event) = events.recv().await {
        match event {
            SetEvent::Added(member) | SetEvent::Updated(member) => {
                offer(server, set, &member, show_secrets);
            }
            SetEvent::Removed { member, .. } => {
                server.withdraw(&member.informer.resource());
            }
            _ => {}
        }
    }
    std::future::pending::<()>().await;
}
