//! Connecting to the cluster of the kubeconfig, and saying what went wrong
//! when it cannot be reached.

use std::path::PathBuf;

use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use kube_dynamic_informer::factory::FactoryError;

use crate::exit::Failure;
use kube_dynamic_informer::vocabulary::error_chain;

/// A client, and the address of its API server for messages.
pub struct Cluster {
    pub client: Client,
    pub server: String,
}

impl Cluster {
    /// Connects as the kubeconfig (`kubeconfig`, else `$KUBECONFIG` or
    /// `~/.kube/config`, else in-cluster) and `context` say. Nothing is
    /// requested yet.
    pub async fn connect(
        kubeconfig: Option<&PathBuf>,
        context: Option<&str>,
    ) -> Result<Cluster, Failure> {
        let options = KubeConfigOptions {
            context: context.map(str::to_string),
            ..KubeConfigOptions::default()
        };
        // The kubeconfig kube-client would read, said plainly when it is
        // missing or lacks the context.
        let env_kubeconfig = std::env::var_os("KUBECONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if kubeconfig.is_none()
            && let Some(path) = &env_kubeconfig
            && std::env::split_paths(path).all(|p| !p.exists())
        {
            return Err(Failure::usage(format!(
                "KUBECONFIG={}: no such file",
                path.display()
            )));
        }
        if let Some(context) = context {
            check_context(kubeconfig.or(env_kubeconfig.as_ref()), context)?;
        }
        let config = match kubeconfig {
            Some(path) => Config::from_custom_kubeconfig(read_kubeconfig(Some(path))?, &options)
                .await
                .map_err(|e| {
                    Failure::usage(format!(
                        "kubeconfig {}: {}",
                        path.display(),
                        error_chain(&e)
                    ))
                })?,
            None if context.is_some() => Config::from_kubeconfig(&options)
                .await
                .map_err(|e| Failure::usage(format!("kubeconfig: {}", error_chain(&e))))?,
            None => Config::infer().await.map_err(|e| {
                Failure::usage(format!("no cluster configured: {}", error_chain(&e)))
            })?,
        };
        let server = config.cluster_url.to_string();
        // What fails here is the kubeconfig's content: certificates, a
        // proxy URL.
        let client = Client::try_from(config).map_err(|e| {
            Failure::usage(format!(
                "the kubeconfig's client settings: {}",
                error_chain(&e)
            ))
        })?;
        Ok(Cluster { client, server })
    }

    /// A failure to read discovery, which every command does first: the
    /// server, why in the library's word (`unauthorized`, `unreachable`,
    /// ...), what was asked, and every cause (connection refused, a
    /// certificate, a 401).
    pub fn unreachable(&self, err: &FactoryError) -> Failure {
        Failure::cluster(format!(
            "API server {}: {}: {}",
            self.server,
            err.reason(),
            error_chain(err)
        ))
    }
}

/// That the kubeconfig at `path` (or the default one) has `context`, with
/// the contexts it has when it does not. A kubeconfig that cannot be read
/// is left to kube-client to report.
fn check_context(path: Option<&PathBuf>, context: &str) -> Result<(), Failure> {
    let Ok(kubeconfig) = read_kubeconfig(path) else {
        return Ok(());
    };
    if kubeconfig.contexts.iter().any(|c| c.name == context) {
        return Ok(());
    }
    let names: Vec<&str> = kubeconfig
        .contexts
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    Err(Failure::usage(format!(
        "--context {context:?}: the kubeconfig has no such context; its contexts are {}",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )))
}

/// The kubeconfig at `path`, or the default one (`$KUBECONFIG`, else
/// `~/.kube/config`).
pub fn read_kubeconfig(path: Option<&PathBuf>) -> Result<Kubeconfig, Failure> {
    let read = match path {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    };
    read.map_err(|e| {
        let at = path.map_or_else(String::new, |p| format!(" {}", p.display()));
        Failure::usage(format!("reading kubeconfig{at}: {}", error_chain(&e)))
    })
}
