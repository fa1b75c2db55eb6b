//! Exit codes and the failures that map to them: the table of README.md's
//! kdi section, which the CLI tests read back.

use std::error::Error;
use std::fmt::Display;

/// Exit codes.
pub mod code {
    /// Success; also `watch` stopped by Ctrl-C, `--max-events`,
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

    /// A cache that did not sync.
    pub fn not_synced(message: impl Display) -> Self {
        Self::with(code::NOT_SYNCED, message)
    }

    fn with(code: u8, message: impl Display) -> Self {
        Failure {
            code,
            message: message.to_string(),
        }
    }
}

/// An error and every cause behind it, each said once: wrappers often repeat
/// their source's text, and the cause that tells what happened (`Connection
/// refused (os error 111)`, a certificate problem) is often only at the end
/// of the chain. The server's own answer is said as its message, code and
/// reason (kube-client's text for it carries a debug dump).
pub fn describe(err: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(kube_client::Error::Api(status)) = e.downcast_ref::<kube_client::Error>() {
            parts.push(format!(
                "{} ({} {})",
                status.message, status.code, status.reason
            ));
            break;
        }
        let text = e.to_string();
        // What this error adds to its source's text.
        let own = match e.source().map(|s| s.to_string()) {
            Some(source) => match text.strip_suffix(source.as_str()) {
                Some(prefix) => prefix
                    .trim_end()
                    .trim_end_matches(':')
                    .trim_end()
                    .to_string(),
                None => text,
            },
            None => text,
        };
        if !own.is_empty() && !parts.iter().any(|p| p.contains(&own)) {
            parts.push(own);
        }
        current = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|l| l as &(dyn Error + 'static))
        }
    }

    #[test]
    fn every_cause_is_said_once() {
        let err = Layer(
            "reading API discovery /api: ServiceError: client error (Connect)",
            Some(Box::new(Layer(
                "client error (Connect)",
                Some(Box::new(Layer(
                    "tcp connect error",
                    Some(Box::new(Layer("Connection refused (os error 111)", None))),
                ))),
            ))),
        );
        assert_eq!(
            describe(&err),
            "reading API discovery /api: ServiceError: client error (Connect): \
             tcp connect error: Connection refused (os error 111)"
        );
    }
}
