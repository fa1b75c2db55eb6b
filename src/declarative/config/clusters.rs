//! The `clusters:` section of a config file ([`ClustersConfig`]).

use std::path::PathBuf;

use kube_client::Config;
use kube_client::config::Kubeconfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::declarative::DeclarativeError;
use crate::declarative::sources::{
    cluster_from_file, clusters_from_all_contexts, clusters_from_contexts, clusters_from_dir,
    read_kubeconfig,
};

/// The `clusters:` section of a config file: the clusters a
/// cluster set watches the file's informers in, named after their
/// context, or after their kubeconfig file's name without its extension
/// (`north.yaml` → `north`).
///
/// ```yaml
/// clusters:
///   kubeconfig: /etc/fleet/kubeconfig  # default: $KUBECONFIG or ~/.kube/config
///   contexts: [east, west]             # or allContexts: true
///   kubeconfigs: [/etc/fleet/north.yaml]
///   directory: /etc/fleet/clusters     # one cluster per file
///   local: home                        # the default kubeconfig, or in-cluster
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClustersConfig {
    /// The kubeconfig whose contexts `contexts` and `allContexts` name;
    /// `$KUBECONFIG` or `~/.kube/config` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<PathBuf>,
    /// Contexts of that kubeconfig, one cluster each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contexts: Vec<String>,
    /// Every context of that kubeconfig, one cluster each.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_contexts: bool,
    /// Kubeconfig files, one cluster each (its current context).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kubeconfigs: Vec<PathBuf>,
    /// A directory of kubeconfig files, one cluster each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<PathBuf>,
    /// A name for the cluster the process would use on its own, as
    /// `kube_client::Config::infer` finds it: the current context of
    /// `$KUBECONFIG` or `~/.kube/config`, else the in-cluster configuration
    /// of a pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<String>,
}

impl ClustersConfig {
    /// Whether the section names no cluster (then the file is for the one
    /// cluster of the kubeconfig).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        !self.all_contexts
            && self.contexts.is_empty()
            && self.kubeconfigs.is_empty()
            && self.directory.is_none()
            && self.local.is_none()
    }

    /// The clusters this section names, with their client configuration,
    /// sorted as written: the local one, contexts, files, then the
    /// directory's files.
    ///
    /// # Errors
    /// [`DeclarativeError::Kubeconfig`] naming the file or context that
    /// cannot be read or used.
    pub async fn clusters(&self) -> Result<Vec<(String, Config)>, DeclarativeError> {
        let mut out = Vec::new();
        if let Some(name) = &self.local {
            let config = Config::infer().await.map_err(|e| {
                let what =
                    format!("the local cluster {name:?} (the default kubeconfig, or in-cluster)");
                DeclarativeError::kubeconfig(what, &e)
            })?;
            out.push((name.clone(), config));
        }
        if self.all_contexts || !self.contexts.is_empty() {
            let kubeconfig = match &self.kubeconfig {
                Some(path) => read_kubeconfig(path)?,
                None => Kubeconfig::read().map_err(|e| {
                    DeclarativeError::kubeconfig(
                        "kubeconfig ($KUBECONFIG or ~/.kube/config)".into(),
                        &e,
                    )
                })?,
            };
            if self.all_contexts {
                out.extend(clusters_from_all_contexts(&kubeconfig).await?);
            } else {
                out.extend(clusters_from_contexts(&kubeconfig, &self.contexts).await?);
            }
        }
        for path in &self.kubeconfigs {
            out.push(cluster_from_file(path).await?);
        }
        if let Some(dir) = &self.directory {
            out.extend(clusters_from_dir(dir).await?);
        }
        Ok(out)
    }
}
