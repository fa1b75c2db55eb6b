//! Where clusters come from: the contexts of a kubeconfig, or the
//! kubeconfig files of a directory.

use std::path::Path;

use kube_client::Config;
use kube_client::config::{KubeConfigOptions, Kubeconfig};

use crate::declarative::DeclarativeError;

/// The names of every context of a kubeconfig, in file order.
#[must_use]
pub fn all_contexts(kubeconfig: &Kubeconfig) -> Vec<String> {
    kubeconfig.contexts.iter().map(|c| c.name.clone()).collect()
}

/// One cluster per context named, each named after its context, connecting
/// as that context says (exec plugins and all).
///
/// # Errors
/// [`DeclarativeError::Kubeconfig`] naming the context that is missing or
/// unusable.
pub async fn clusters_from_contexts(
    kubeconfig: &Kubeconfig,
    contexts: &[String],
) -> Result<Vec<(String, Config)>, DeclarativeError> {
    let mut out = Vec::with_capacity(contexts.len());
    for context in contexts {
        let options = KubeConfigOptions {
            context: Some(context.clone()),
            ..KubeConfigOptions::default()
        };
        let config = Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
            .await
            .map_err(|e| {
                DeclarativeError::kubeconfig(format!("kubeconfig context {context:?}"), &e)
            })?;
        out.push((context.clone(), config));
    }
    Ok(out)
}

/// One cluster per context of the kubeconfig.
///
/// # Errors
/// As [`clusters_from_contexts`].
pub async fn clusters_from_all_contexts(
    kubeconfig: &Kubeconfig,
) -> Result<Vec<(String, Config)>, DeclarativeError> {
    clusters_from_contexts(kubeconfig, &all_contexts(kubeconfig)).await
}

/// One cluster per kubeconfig file in `dir` (not its subdirectories; files
/// whose names start with `.` are skipped), each named after its file name
/// without the extension and connecting as the file's current context says.
/// Sorted by name.
///
/// ```no_run
/// # async fn demo(set: kube_dynamic_informer::declarative::ClusterSet) -> Result<(), Box<dyn std::error::Error>> {
/// use kube_dynamic_informer::declarative::clusters_from_dir;
/// // /etc/fleet/east.yaml, /etc/fleet/west.yaml → clusters "east" and "west"
/// for (name, config) in clusters_from_dir(std::path::Path::new("/etc/fleet")).await? {
///     set.add_cluster(name, config)?;
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`DeclarativeError::Kubeconfig`] naming the directory or the file that
/// cannot be read or used.
pub async fn clusters_from_dir(dir: &Path) -> Result<Vec<(String, Config)>, DeclarativeError> {
    let unreadable = |e: std::io::Error| DeclarativeError::Kubeconfig {
        what: format!("kubeconfig directory {}", dir.display()),
        error: e.to_string(),
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let path = entry.map_err(unreadable)?.path();
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_none_or(|n| n.starts_with('.'));
        if path.is_file() && !hidden {
            files.push(path);
        }
    }
    files.sort();
    let mut out = Vec::with_capacity(files.len());
    for path in files {
        out.push(cluster_from_file(&path).await?);
    }
    Ok(out)
}

/// The kubeconfig file at `path`.
pub(crate) fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, DeclarativeError> {
    Kubeconfig::read_from(path)
        .map_err(|e| DeclarativeError::kubeconfig(format!("kubeconfig {}", path.display()), &e))
}

/// The cluster of a kubeconfig file, named after the file and connecting as
/// its current context says.
pub(crate) async fn cluster_from_file(path: &Path) -> Result<(String, Config), DeclarativeError> {
    let kubeconfig = read_kubeconfig(path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| DeclarativeError::kubeconfig(format!("kubeconfig {}", path.display()), &e))?;
    Ok((cluster_name_of(path), config))
}

/// A file's name without its extension (`east.yaml` → `east`).
pub(crate) fn cluster_name_of(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string()
}
