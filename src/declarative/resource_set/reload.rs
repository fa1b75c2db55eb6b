//! The result of applying a config to a running set.

use std::path::Path;
use std::time::SystemTime;

use super::{Counts, Removal, ResourceSet, SetEvent, State, send};
use crate::declarative::DeclarativeError;
use crate::declarative::config::{ConfigProblem, InformerSet, read_text};
use crate::vocabulary::shard::fnv1a_64;

/// The result of a reload: when, of what content, and how it went. What
/// status pages and metrics show (kube-state-metrics' `config_hash` and
/// `last_config_reload_successful` are of this kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReloadStatus {
    /// When the reload was tried.
    pub at: SystemTime,
    /// FNV-1a 64-bit hash of the file's bytes (of the config's JSON for
    /// [`ResourceSet::apply`](super::ResourceSet::apply)), as 16 hex digits.
    pub hash: String,
    /// Whether the config was applied.
    pub success: bool,
    /// Every problem, located, when it was refused.
    pub errors: Vec<ConfigProblem>,
    /// Members left running as they were.
    pub kept: usize,
    /// Members added.
    pub added: usize,
    /// Members removed.
    pub removed: usize,
    /// Members whose informer was replaced.
    pub replaced: usize,
}

impl ReloadStatus {
    /// Seconds since the Unix epoch of [`at`](Self::at), as metrics give
    /// times.
    #[must_use]
    pub fn at_unix_seconds(&self) -> f64 {
        self.at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

/// A failed reload's status.
pub(super) fn failed(hash: String, err: &DeclarativeError) -> ReloadStatus {
    ReloadStatus {
        success: false,
        errors: err.problems().to_vec(),
        ..succeeded(hash, &Counts::default())
    }
}

/// The status of a reload that applied `counts`.
pub(super) fn succeeded(hash: String, counts: &Counts) -> ReloadStatus {
    ReloadStatus {
        at: SystemTime::now(),
        hash,
        success: true,
        errors: Vec::new(),
        kept: counts.kept,
        added: counts.added,
        removed: counts.removed,
        replaced: counts.replaced,
    }
}

/// FNV-1a, 64 bits, as hex.
pub(super) fn content_hash(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a_64(bytes))
}

impl ResourceSet {
    /// Applies `config` to the running set: unchanged informers keep
    /// running, changed ones are replaced, removed ones stopped, new ones
    /// started. A config that cannot be applied whole is refused, and the
    /// set is left as it was. Errors name the entry (`informers[1].resource`)
    /// but no file position; [`reload_file`](Self::reload_file) has them.
    ///
    /// # Errors
    /// [`DeclarativeError`] with every problem.
    pub async fn apply(&self, config: InformerSet) -> Result<ReloadStatus, DeclarativeError> {
        let hash = content_hash(&serde_json::to_vec(&config).unwrap_or_default());
        self.apply_located(config, hash, None).await
    }

    /// Reads the config file at `path` and applies it; see
    /// [`apply`](Self::apply). A file that does not load (syntax, schema,
    /// expressions) is refused with every problem located, as is one naming
    /// resources the cluster refuses.
    ///
    /// # Errors
    /// [`DeclarativeError`] with every problem, each with file, line and column.
    pub async fn reload_file(
        &self,
        path: impl AsRef<Path>,
    ) -> Result<ReloadStatus, DeclarativeError> {
        self.reload_file_with(path, |_| Ok(())).await
    }

    /// As [`reload_file`](Self::reload_file), with `adjust` applied to the
    /// config once loaded: for settings given apart from the file (a
    /// command line's overrides). An error of `adjust` refuses the reload.
    ///
    /// # Errors
    /// As [`reload_file`](Self::reload_file), and what `adjust` says.
    pub async fn reload_file_with(
        &self,
        path: impl AsRef<Path>,
        adjust: impl FnOnce(&mut InformerSet) -> Result<(), String>,
    ) -> Result<ReloadStatus, DeclarativeError> {
        let path = path.as_ref();
        let text = read_text(path);
        let hash = content_hash(text.as_deref().map_or(&[][..], str::as_bytes));
        let loaded = text.and_then(|text| {
            let mut config = InformerSet::load_str(&text, path)?;
            adjust(&mut config).map_err(|message| DeclarativeError::whole_file(path, message))?;
            Ok((config, text))
        });
        match loaded {
            Ok((config, text)) => {
                self.apply_located(config, hash, Some((path, text.as_str())))
                    .await
            }
            Err(err) => {
                let mut state = self.inner.state.lock().await;
                self.record_locked(&mut state, failed(hash, &err));
                Err(err)
            }
        }
    }

    async fn apply_located(
        &self,
        config: InformerSet,
        hash: String,
        source: Option<(&Path, &str)>,
    ) -> Result<ReloadStatus, DeclarativeError> {
        let mut state = self.inner.state.lock().await;
        let plan = self.plan(&state, &config).await;
        if let Some(err) = plan.refusal(source) {
            self.discard(&state, plan.created).await;
            self.record_locked(&mut state, failed(hash, &err));
            return Err(err);
        }
        state.config = config;
        let counts = self.commit(&mut state, plan, Removal::Reloaded).await;
        let status = succeeded(hash, &counts);
        self.record_locked(&mut state, status.clone());
        Ok(status)
    }

    pub(super) fn record_locked(&self, state: &mut State, status: ReloadStatus) {
        crate::informer::telemetry::config_reloaded(
            status.success,
            status.at_unix_seconds(),
            &status.hash,
            status.errors.len(),
        );
        *self.inner.last_reload.lock() = Some(status.clone());
        state.last_reload = Some(status.clone());
        send(state, &SetEvent::Reloaded(status));
    }
}
