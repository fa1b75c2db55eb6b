//! Connecting to the cluster of the kubeconfig.

use std::path::PathBuf;

use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};

use crate::exit::Failure;

pub async fn client(
    kubeconfig: Option<&PathBuf>,
    context: Option<&str>,
) -> Result<Client, Failure> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).map_err(|e| {
                Failure::usage(format!("reading kubeconfig {}: {e}", path.display()))
            })?;
            Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| Failure::usage(format!("kubeconfig {}: {e}", path.display())))?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| Failure::usage(format!("kubeconfig: {e}")))?,
        None => Config::infer()
            .await
            .map_err(|e| Failure::usage(format!("no cluster configured: {e}")))?,
    };
    Client::try_from(config).map_err(|e| Failure::runtime(format!("building the client: {e}")))
}
