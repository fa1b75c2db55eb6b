//! What the cache layer refuses, and why.

use crate::vocabulary::VocabularyError;
use crate::vocabulary::resource::ResourceKey;

/// Errors of the cache layer: reads of a store or lister, index and
/// projection declarations, and resourceVersions that cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    // Reads of a lister.
    /// The label selector does not parse.
    #[error("listing {resource}: {source}")]
    Selector {
        /// The resource listed.
        resource: ResourceKey,
        /// What is wrong with the selector, and where.
        #[source]
        source: Box<VocabularyError>,
    },
    /// An index query failed (no index of that name).
    #[error("{resource}: {source}")]
    Index {
        /// The resource queried.
        resource: ResourceKey,
        /// The store's error ([`CacheError::UnknownIndex`]), which lists
        /// the indexes there are.
        #[source]
        source: Box<CacheError>,
    },
    /// A namespace was asked of a cluster-scoped resource.
    #[error(transparent)]
    ClusterScoped(#[from] VocabularyError),
    /// The informer watches only some namespaces, and not this one: its cache
    /// cannot answer for it.
    #[error("{resource}: namespace {namespace:?} is not watched by this informer (it watches {})", .watched.join(", "))]
    NamespaceNotWatched {
        /// The resource.
        resource: ResourceKey,
        /// The namespace asked for.
        namespace: String,
        /// The namespaces the informer watches.
        watched: Vec<String>,
    },

    // Index declarations and queries of a store.
    /// No index has this name.
    #[error("unknown index {name:?}; the store has: {}", known.join(", "))]
    UnknownIndex {
        /// The name asked for.
        name: String,
        /// The indexes the store has, in declaration order.
        known: Vec<String>,
    },
    /// An index with this name already exists (the namespace index always
    /// does).
    #[error("index {name:?} already exists")]
    DuplicateIndex {
        /// The name declared twice.
        name: String,
    },

    // Index functions.
    /// The JMESPath expression does not parse. `line` counts from 0,
    /// `column` is the number of characters before the error on that line,
    /// `offset` the number of characters before it in the whole expression.
    #[error(
        "index {index:?}: expression '{expression}' invalid at {}: {message}",
        position(*line, *column)
    )]
    IndexSyntax {
        /// Name of the index being declared.
        index: String,
        /// The expression as given.
        expression: String,
        /// Line of the error, counted from 0.
        line: usize,
        /// Column of the error on its line, counted from 0.
        column: usize,
        /// Characters before the error in the whole expression.
        offset: usize,
        /// What the parser expected or found.
        message: String,
    },
    /// The expression parses but calls a function in a way that fails
    /// whatever the object: a function that does not exist, a wrong number
    /// of arguments, or a literal argument of a type the function does not
    /// accept. The position (counted as for [`CacheError::IndexSyntax`]) is that
    /// of the function's name or of the argument.
    #[error(
        "index {index:?}: expression '{expression}' invalid at {}: {message}",
        position(*line, *column)
    )]
    IndexFunction {
        /// Name of the index being declared.
        index: String,
        /// The expression as given.
        expression: String,
        /// Line of the error, counted from 0.
        line: usize,
        /// Column of the error on its line, counted from 0.
        column: usize,
        /// Characters before the error in the whole expression.
        offset: usize,
        /// What is wrong with the call.
        message: String,
    },
    /// The expression is longer than [`MAX_EXPRESSION_LEN`](crate::cache::MAX_EXPRESSION_LEN) or nests deeper
    /// than [`MAX_EXPRESSION_DEPTH`](crate::cache::MAX_EXPRESSION_DEPTH).
    #[error("index {index:?}: expression '{expression}' is too complex: {reason}")]
    IndexTooComplex {
        /// Name of the index being declared.
        index: String,
        /// The expression as given (cut to its first 80 characters).
        expression: String,
        /// Which limit was exceeded.
        reason: String,
    },
    /// Evaluating the index function on one object failed: the expression
    /// returned an object or failed on this object (a function given a value
    /// of the wrong type), a closure returned an error or panicked, or the
    /// object could not be converted for JMESPath. The object is left out of
    /// that index; other objects and indexes are unaffected.
    #[error("index {index:?}: cannot index object {object:?}: {message}")]
    IndexEvaluation {
        /// Name of the index.
        index: String,
        /// Key of the object (`namespace/name` or `name`).
        object: String,
        /// What went wrong.
        message: String,
    },

    /// A path of a projection was rejected.
    #[error("projection path {path:?}, column {column}: {reason}")]
    Projection {
        /// The rejected path, as given.
        path: String,
        /// 1-based column (in characters) of the problem in the path.
        column: usize,
        /// What is wrong there.
        reason: String,
    },

    /// A resourceVersion that cannot be compared.
    #[error(
        "resourceVersion {0:?} is not comparable: expected a decimal number without leading zeros"
    )]
    IncomparableResourceVersion(String),
}

fn position(line: usize, column: usize) -> String {
    if line == 0 {
        format!("column {column}")
    } else {
        format!("line {line}, column {column}")
    }
}
