//! Exit codes and the failures that map to them: the table of README.md's
//! kdi section, which the CLI tests read back.

use std::fmt::Display;

/// Exit codes.
pub mod code {
    /// Success; also `watch` stopped by Ctrl-C or SIGTERM, `--max-events`,
    /// `--duration` or a closed output.
    pub const SUCCESS: u8 = 0;
    /// The cluster cannot be reached or answers with an error; the output
    /// cannot be written.
    pub const CLUSTER: u8 = 1;
    /// Invalid arguments, kubeconfig or config file; a resource name that
    /// designates nothing kdi can watch.
    pub const USAGE: u8 = 2;
    /// A cache that did not sync: access denied, a resource not served, or
    /// not synced within `--timeout`.
    pub const NOT_SYNCED: u8 = 3;
    /// `wait`: what it waited for did not hold within `--timeout`.
    pub const TIMED_OUT: u8 = 4;
}

/// A failure with the exit code it maps to.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// The cluster cannot be reached or answered with an error.
    pub fn cluster(message: impl Display) -> Self {
        Self::with(code::CLUSTER, message)
    }

    /// The output cannot be written (other than closed: that ends a
    /// command quietly).
    pub fn output(message: impl Display) -> Self {
        Self::with(code::CLUSTER, format!("writing the output: {message}"))
    }

    /// Invalid arguments or configuration.
    pub fn usage(message: impl Display) -> Self {
        Self::with(code::USAGE, message)
    }

    /// Stopped as asked (`--duration`, SIGINT, SIGTERM) before the end:
    /// said, and a success.
    pub fn stopped(message: impl Display) -> Self {
        Self::with(code::SUCCESS, message)
    }

    /// A cache that did not sync.
    pub fn not_synced(message: impl Display) -> Self {
        Self::with(code::NOT_SYNCED, message)
    }

    /// A wait that timed out.
    pub fn timed_out(message: impl Display) -> Self {
        Self::with(code::TIMED_OUT, message)
    }

    fn with(code: u8, message: impl Display) -> Self {
        Failure {
            code,
            message: message.to_string(),
        }
    }
}
