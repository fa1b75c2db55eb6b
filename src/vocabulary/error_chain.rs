//! An error and its causes as one line of text.

use std::error::Error;

/// An error and every cause behind it, each said once, joined with `: `.
///
/// Wrappers often repeat their source's text, and the cause that tells what
/// happened (`Connection refused (os error 111)`, a certificate problem) is
/// often only at the end of the chain: each error contributes what it adds
/// to its source's text. The API server's own answer is said as its
/// message, code and reason (kube-client's text for it carries a debug
/// dump). Every layer of the library words errors this way (an informer's
/// status, a cluster set's report), and so can any program that prints
/// them.
///
/// ```
/// use kube_dynamic_informer::vocabulary::error_chain;
///
/// let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
/// let err = kube_client::Error::Service(Box::new(io));
/// assert_eq!(error_chain(&err), "ServiceError: Connection refused");
/// ```
#[must_use]
pub fn error_chain(err: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in std::iter::successors(Some(err), |&e| e.source()) {
        if let Some(kube_client::Error::Api(status)) = e.downcast_ref::<kube_client::Error>() {
            parts.push(format!(
                "{} ({} {})",
                status.message, status.code, status.reason
            ));
            break;
        }
        let text = e.to_string();
        // What this error adds to its source's text.
        let own = match e
            .source()
            .and_then(|s| text.strip_suffix(s.to_string().as_str()))
        {
            Some(prefix) => prefix
                .trim_end()
                .trim_end_matches(':')
                .trim_end()
                .to_string(),
            None => text,
        };
        if !own.is_empty() && !parts.iter().any(|p| p.contains(&own)) {
            parts.push(own);
        }
    }
    parts.join(": ")
}

/// Asserts the convention every error of the library keeps: an error that
/// has a source does not repeat the source's text in its own message, so
/// that a chain printed cause by cause says each fact once; and every
/// message says something. The chain is followed down to the first error
/// of kube-client.
#[cfg(test)]
pub(crate) fn assert_each_fact_once(err: &(dyn Error + 'static)) {
    let mut current = Some(err);
    while let Some(e) = current {
        // The client's errors are worded by the client.
        if e.is::<kube_client::Error>() {
            break;
        }
        let text = e.to_string();
        assert!(!text.trim().is_empty(), "an empty message: {e:?}");
        if let Some(source) = e.source() {
            let cause = source.to_string();
            assert!(
                !text.contains(&cause),
                "{e:?} says its source's text {cause:?} in its own message {text:?}"
            );
        }
        current = e.source();
    }
}

/// Asserts that `all` holds one error of each of the `count` variants of
/// its type, in declaration order (`variant` gives a variant's place, by an
/// exhaustive match, so that a new variant fails to compile until it has a
/// sample), and that each says each fact of its chain once.
#[cfg(test)]
pub(crate) fn assert_every_variant<E: Error + 'static>(
    all: &[E],
    variant: impl Fn(&E) -> usize,
    count: usize,
) {
    let seen: Vec<usize> = all.iter().map(variant).collect();
    assert_eq!(
        seen,
        (0..count).collect::<Vec<_>>(),
        "one sample per variant, in declaration order"
    );
    for e in all {
        assert_each_fact_once(e);
    }
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
            error_chain(&err),
            "reading API discovery /api: ServiceError: client error (Connect): \
             tcp connect error: Connection refused (os error 111)"
        );
    }

    #[test]
    fn a_cause_already_in_the_text_is_not_repeated() {
        let err = Layer(
            "listing pods: forbidden",
            Some(Box::new(Layer("forbidden", None))),
        );
        assert_eq!(error_chain(&err), "listing pods: forbidden");
    }
}
