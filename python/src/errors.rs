//! The library's errors as the Python exceptions of
//! `kube_dynamic_informer.errors` (defined in Python, so that they can also
//! be `TimeoutError`s, `LookupError`s and `ValueError`s). Messages are the
//! library's, unchanged.

use kube_dynamic_informer::cache::{CacheError, ExpressionOf};
use kube_dynamic_informer::declarative::DeclarativeError;
use kube_dynamic_informer::factory::FactoryError;
use kube_dynamic_informer::informer::{InformerError, NotSynced};
use pyo3::prelude::*;

/// An exception of `kube_dynamic_informer.errors` named `class`, with
/// `message`, and `reason` set when given (a `NotSyncedError`'s one word).
fn raise(class: &str, message: String, reason: Option<&'static str>) -> PyErr {
    raise_with(class, message, |exception| match reason {
        Some(reason) => exception.setattr("reason", reason),
        None => Ok(()),
    })
}

/// An exception of `kube_dynamic_informer.errors` named `class`, with
/// `message`, given its attributes by `set`.
fn raise_with(
    class: &str,
    message: String,
    set: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<()>,
) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("kube_dynamic_informer.errors")
            .and_then(|errors| errors.getattr(class))
            .and_then(|class| class.call1((message,)));
        match made {
            Ok(exception) => match set(&exception) {
                Ok(()) => PyErr::from_value(exception),
                Err(e) => e,
            },
            Err(e) => e,
        }
    })
}

/// The exception for a cache that did not sync.
fn not_synced(message: String, reason: &NotSynced) -> PyErr {
    let class = if matches!(reason, NotSynced::TimedOut { .. }) {
        "SyncTimeoutError"
    } else {
        "NotSyncedError"
    };
    raise(class, message, Some(reason.reason()))
}

/// An error's message followed by its causes (those it does not already
/// say), as `error: cause: cause`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// A [`CacheError`] as its exception.
pub(crate) fn cache(e: CacheError) -> PyErr {
    raise(cache_class(&e), chain(&e), None)
}

/// The exception class of a [`CacheError`].
fn cache_class(e: &CacheError) -> &'static str {
    match e {
        CacheError::Selector { .. } => "SelectorError",
        CacheError::UnknownIndex { .. } => "UnknownIndexError",
        CacheError::DuplicateIndex { .. }
        | CacheError::ReservedIndexName { .. }
        | CacheError::ExpressionSyntax {
            of: ExpressionOf::Index(_),
            ..
        }
        | CacheError::ExpressionFunction {
            of: ExpressionOf::Index(_),
            ..
        }
        | CacheError::ExpressionTooComplex {
            of: ExpressionOf::Index(_),
            ..
        } => "IndexDefinitionError",
        CacheError::ExpressionSyntax { .. }
        | CacheError::ExpressionFunction { .. }
        | CacheError::ExpressionTooComplex { .. }
        | CacheError::KubectlForm { .. }
        | CacheError::NoChangeExpression => "ExpressionError",
        _ => "CacheError",
    }
}

/// An [`InformerError`] as its exception.
pub(crate) fn informer(e: InformerError) -> PyErr {
    let message = chain(&e);
    match e {
        InformerError::NotSynced { reason, .. } => not_synced(message, &reason),
        InformerError::ConditionTimedOut { report } => {
            let report = crate::waiting::WaitReport::from(*report);
            raise_with("ConditionTimeoutError", message, |exception| {
                exception.setattr("report", report)
            })
        }
        InformerError::WaitTimedOut { .. } | InformerError::RelistInProgress { .. } => {
            raise("WaitTimeoutError", message, None)
        }
        // The cache's error says what was wrong with the index.
        InformerError::Index { source, .. } => raise(cache_class(&source), message, None),
        _ => raise("InformerError", message, None),
    }
}

/// A [`FactoryError`] as its exception.
pub(crate) fn factory(e: FactoryError) -> PyErr {
    let message = chain(&e);
    match e {
        FactoryError::Informer(e) => informer(e),
        FactoryError::NotSynced { reason, .. } => not_synced(message, &reason),
        FactoryError::Name(_)
        | FactoryError::Resolve { .. }
        | FactoryError::VersionNotServed { .. }
        | FactoryError::Category { .. }
        | FactoryError::EmptyPattern
        | FactoryError::PatternGroup { .. }
        | FactoryError::PatternName { .. }
        | FactoryError::PatternSyntax { .. } => raise("UnknownResourceError", message, None),
        FactoryError::Selector { .. } => raise("SelectorError", message, None),
        _ => raise("FactoryError", message, None),
    }
}

/// A label selector that does not parse.
pub(crate) fn selector(e: kube_dynamic_informer::vocabulary::VocabularyError) -> PyErr {
    raise("SelectorError", chain(&e), None)
}

/// A client that could not be built (kubeconfig, in-cluster config).
pub(crate) fn config(what: String, e: &dyn std::error::Error) -> PyErr {
    raise("ConfigError", format!("{what}: {}", chain(e)), None)
}

/// A config file's problems (each located) as `ConfigFileError`.
pub(crate) fn declarative(e: DeclarativeError) -> PyErr {
    raise("ConfigFileError", chain(&e), None)
}
