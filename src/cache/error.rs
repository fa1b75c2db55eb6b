//! What the cache layer refuses, and why.

use crate::vocabulary::VocabularyError;
use crate::vocabulary::resource::ResourceKey;

/// Errors of the cache layer: reads of a store or lister, index,
/// condition, change predicate and projection declarations, and
/// resourceVersions that cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    // Reads of a lister.
    /// The label selector does not parse.
    #[error("listing {resource}")]
    Selector {
        /// The resource listed.
        resource: ResourceKey,
        /// What is wrong with the selector, and where.
        #[source]
        source: Box<VocabularyError>,
    },
    /// An index query failed (no index of that name).
    #[error("querying an index of {resource}")]
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
    /// An index with this name already exists with another definition (the
    /// namespace index always does). The same definition again is not an
    /// error.
    #[error("index {name:?} already exists with another definition")]
    DuplicateIndex {
        /// The name declared twice.
        name: String,
    },

    /// The name is the built-in index's, which cannot be declared.
    #[error("index name {name:?} is reserved: every informer has it built in")]
    ReservedIndexName {
        /// The name.
        name: String,
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

    // Expressions: of indexes, conditions and change predicates.
    /// A JMESPath expression does not parse. `line` counts from 0,
    /// `column` is the number of characters before the error on that line,
    /// `offset` the number of characters before it in the whole expression.
    #[error(
        "{of} '{expression}' invalid at {}: {message}",
        position(*line, *column)
    )]
    ExpressionSyntax {
        /// What the expression is for: an index (named), a condition, or
        /// a change predicate.
        of: ExpressionOf,
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
    /// accept. The position (counted as for
    /// [`CacheError::ExpressionSyntax`]) is that of the function's name or
    /// of the argument.
    #[error(
        "{of} '{expression}' invalid at {}: {message}",
        position(*line, *column)
    )]
    ExpressionFunction {
        /// What the expression is for.
        of: ExpressionOf,
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
    #[error("{of} '{expression}' is too complex: {reason}")]
    ExpressionTooComplex {
        /// What the expression is for.
        of: ExpressionOf,
        /// The expression as given (cut to its first 80 characters).
        expression: String,
        /// Which limit was exceeded.
        reason: String,
    },
    /// A `kubectl wait --for` form that cannot be read, or has no condition
    /// to translate to (a JSONPath feature JMESPath lacks).
    #[error("kubectl form {form:?}: {reason}")]
    KubectlForm {
        /// The form as given (`condition=Ready`, `jsonpath={.status.phase}=Running`).
        form: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A change predicate was asked for with no expression: it would let
    /// no update through.
    #[error("a change predicate needs at least one expression")]
    NoChangeExpression,

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

/// What a JMESPath expression is for, as its errors name it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExpressionOf {
    /// The index of this name (`index "node": expression`).
    Index(String),
    /// A [`Condition`](crate::cache::Condition) (`condition`).
    Condition,
    /// A [`ChangePredicate`](crate::cache::ChangePredicate) (`change expression`).
    Change,
}

impl std::fmt::Display for ExpressionOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpressionOf::Index(name) => write!(f, "index {name:?}: expression"),
            ExpressionOf::Condition => f.write_str("condition"),
            ExpressionOf::Change => f.write_str("change expression"),
        }
    }
}

fn position(line: usize, column: usize) -> String {
    if line == 0 {
        format!("column {column}")
    } else {
        format!("line {line}, column {column}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::error_chain::assert_every_variant;

    /// One error of each variant, each with a source where it has one.
    fn every_variant() -> Vec<CacheError> {
        let key = || ResourceKey::new("", "v1", "pods");
        let unknown = || CacheError::UnknownIndex {
            name: "nope".into(),
            known: vec!["namespace".into()],
        };
        vec![
            CacheError::Selector {
                resource: key(),
                source: Box::new(VocabularyError::InvalidRequirement {
                    key: "app".into(),
                    reason: "no values".into(),
                }),
            },
            CacheError::Index {
                resource: key(),
                source: Box::new(unknown()),
            },
            CacheError::ClusterScoped(VocabularyError::ClusterScoped {
                resource: "nodes.v1".into(),
                namespaces: "shop".into(),
            }),
            CacheError::NamespaceNotWatched {
                resource: key(),
                namespace: "a".into(),
                watched: vec!["b".into()],
            },
            unknown(),
            CacheError::DuplicateIndex {
                name: "node".into(),
            },
            CacheError::ReservedIndexName {
                name: "namespace".into(),
            },
            CacheError::IndexEvaluation {
                index: "i".into(),
                object: "a/b".into(),
                message: "an object".into(),
            },
            CacheError::ExpressionSyntax {
                of: ExpressionOf::Index("i".into()),
                expression: "spec.[".into(),
                line: 0,
                column: 6,
                offset: 6,
                message: "expected an identifier".into(),
            },
            CacheError::ExpressionFunction {
                of: ExpressionOf::Condition,
                expression: "lenght(a)".into(),
                line: 0,
                column: 0,
                offset: 0,
                message: "unknown function".into(),
            },
            CacheError::ExpressionTooComplex {
                of: ExpressionOf::Change,
                expression: "a".into(),
                reason: "too deep".into(),
            },
            CacheError::KubectlForm {
                form: "jsonpath={..name}".into(),
                reason: "recursive descent has no JMESPath equivalent".into(),
            },
            CacheError::NoChangeExpression,
            CacheError::Projection {
                path: "spec..x".into(),
                column: 6,
                reason: "expected a field name".into(),
            },
            CacheError::IncomparableResourceVersion("abc".into()),
        ]
    }

    /// The variant's place in the declaration; a new variant fails to
    /// compile here until it has a sample above.
    fn variant(e: &CacheError) -> usize {
        match e {
            CacheError::Selector { .. } => 0,
            CacheError::Index { .. } => 1,
            CacheError::ClusterScoped(_) => 2,
            CacheError::NamespaceNotWatched { .. } => 3,
            CacheError::UnknownIndex { .. } => 4,
            CacheError::DuplicateIndex { .. } => 5,
            CacheError::ReservedIndexName { .. } => 6,
            CacheError::IndexEvaluation { .. } => 7,
            CacheError::ExpressionSyntax { .. } => 8,
            CacheError::ExpressionFunction { .. } => 9,
            CacheError::ExpressionTooComplex { .. } => 10,
            CacheError::KubectlForm { .. } => 11,
            CacheError::NoChangeExpression => 12,
            CacheError::Projection { .. } => 13,
            CacheError::IncomparableResourceVersion(_) => 14,
        }
    }

    #[test]
    fn every_variant_says_each_fact_of_its_chain_once() {
        let all = every_variant();
        assert_every_variant(&all, variant, 15);
        let chained = crate::vocabulary::error_chain(&all[1]);
        assert_eq!(
            chained,
            r#"querying an index of pods.v1: unknown index "nope"; the store has: namespace"#
        );
    }
}
