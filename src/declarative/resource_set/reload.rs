//! The result of applying a config to a running set.

use std::fmt;
use std::path::Path;
use std::time::SystemTime;

use crate::declarative::config::{ConfigError, ConfigErrors, InformerSet};

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
    pub errors: Vec<ConfigError>,
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

/// A config refused whole: every problem, located. The running set is as
/// it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ReloadError {
    /// The problems, at least one.
    pub errors: Vec<ConfigError>,
    /// Whether every problem is a resource not served under
    /// `whenNotServed: fail`: the cluster's state rather than a mistake in
    /// the config.
    pub unserved: bool,
}

impl fmt::Display for ReloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ConfigErrors {
            errors: self.errors.clone(),
        }
        .fmt(f)
    }
}

impl ReloadError {
    pub(super) fn whole(file: &Path, message: String) -> Self {
        ReloadError {
            unserved: false,
            errors: vec![ConfigError {
                file: file.to_path_buf(),
                position: None,
                path: String::new(),
                message,
            }],
        }
    }
}

/// A failed reload's status.
pub(super) fn failed(hash: String, err: &ReloadError) -> ReloadStatus {
    ReloadStatus {
        at: SystemTime::now(),
        hash,
        success: false,
        errors: err.errors.clone(),
        kept: 0,
        added: 0,
        removed: 0,
        replaced: 0,
    }
}

/// FNV-1a, 64 bits, as hex.
pub(super) fn content_hash(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Reads and loads a config file, keeping its text to locate later errors.
pub(super) fn read(path: &Path) -> Result<(InformerSet, String), ReloadError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ReloadError::whole(path, format!("cannot read the file: {e}")))?;
    let config = InformerSet::load_str(&text, path).map_err(|e| ReloadError {
        errors: e.errors,
        unserved: false,
    })?;
    Ok((config, text))
}
