//! Index functions: what an object is filed under in a named index.
//!
//! The [layer docs](crate::cache) say more.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use jmespath::Rcvar;
use kube_core::DynamicObject;

mod compact;
mod compile;
mod field_path;
mod functions;
mod input;
mod needs;
mod numbers;
mod values;

pub use input::IndexInput;
pub(in crate::cache) use numbers::json_text;

use crate::cache::{CacheError, ExpressionOf};
use compile::{Failure, Plan, Position};
use needs::Needs;
use values::values_of_variable;

/// Name of the index that every store has from creation: objects by
/// namespace. Cluster-scoped objects are not in it.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Whether `name` may be declared as an index: any name but the built-in
/// [`NAMESPACE_INDEX`], which every store has already. The rule config
/// files, [`InformerSet::from_names`](crate::declarative::InformerSet::from_names)
/// and `kdi --define-index` apply.
///
/// ```
/// use kube_dynamic_informer::cache::check_index_name;
///
/// assert!(check_index_name("owner").is_ok());
/// assert_eq!(
///     check_index_name("namespace").unwrap_err().to_string(),
///     r#"index name "namespace" is reserved: every informer has it built in"#
/// );
/// ```
///
/// # Errors
/// [`CacheError::ReservedIndexName`] for the built-in name.
pub fn check_index_name(name: &str) -> Result<(), CacheError> {
    if name == NAMESPACE_INDEX {
        return Err(CacheError::ReservedIndexName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// Longest JMESPath expression accepted, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 4096;

/// Deepest nesting of a JMESPath expression's syntax tree that is accepted,
/// except for plain field paths (`a.b.c`, `a | b`), which are read without
/// recursion and may be as long as [`MAX_EXPRESSION_LEN`] allows.
///
/// `a[0].b` has depth 3, `!(a || b)` depth 3. Real index expressions stay far
/// below this; the limit keeps evaluation's recursion within a small, fixed
/// stack budget.
pub const MAX_EXPRESSION_DEPTH: usize = 48;

type ClosureFn = dyn Fn(&DynamicObject) -> Result<Vec<String>, String> + Send + Sync;

/// A function from an object to the values it is filed under in one index.
///
/// Cheap to clone (the compiled expression or closure is shared). See the
/// [module docs](crate::cache) for how results map to values.
///
/// # Examples
///
/// ```
/// use kube_core::DynamicObject;
/// use kube_dynamic_informer::cache::{IndexFn, IndexInput};
///
/// let pod: DynamicObject = serde_json::from_value(serde_json::json!({
///     "apiVersion": "v1", "kind": "Pod",
///     "metadata": { "name": "web-0", "namespace": "shop", "labels": { "app": "web", "tier": "front" } },
///     "spec": { "nodeName": "node-1", "containers": [{ "image": "nginx:1" }, { "image": "envoy:2" }] }
/// }))?;
///
/// let by_image = IndexFn::jmespath("by-image", "spec.containers[].image")?;
/// let by_label_key = IndexFn::closure_infallible(|obj| {
///     obj.metadata.labels.iter().flat_map(|l| l.keys().cloned()).collect()
/// });
///
/// // One input per object: the object is converted for JMESPath at most once.
/// let input = IndexInput::new(&pod);
/// assert_eq!(by_image.evaluate("by-image", &input)?, ["nginx:1", "envoy:2"]);
/// assert_eq!(by_label_key.evaluate("by-label-key", &input)?, ["app", "tier"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[doc(alias = "IndexFunc")]
#[doc(alias = "Indexers")]
pub struct IndexFn {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Namespace,
    Jmespath(Arc<CompiledExpression>),
    Closure(Arc<ClosureFn>),
}

/// A JMESPath expression compiled once, as indexes and
/// [conditions](crate::cache::Condition) evaluate it.
pub(in crate::cache) struct CompiledExpression {
    expression: String,
    plan: Plan,
}

impl IndexFn {
    /// Compiles a JMESPath expression for the index `index`.
    ///
    /// The name is only used in error messages.
    ///
    /// # Errors
    ///
    /// Each naming the index: [`CacheError::ExpressionSyntax`], with the position of
    /// the error, when the expression does not parse;
    /// [`CacheError::ExpressionFunction`], with the position of the call or argument,
    /// when it calls an unknown function, or a function with the wrong number
    /// of arguments or a literal argument of the wrong type;
    /// [`CacheError::ExpressionTooComplex`] when it exceeds [`MAX_EXPRESSION_LEN`] or
    /// [`MAX_EXPRESSION_DEPTH`].
    ///
    /// ```
    /// use kube_dynamic_informer::cache::IndexFn;
    ///
    /// let err = IndexFn::jmespath("by-node", "spec.[").unwrap_err();
    /// assert!(err.to_string().starts_with(r#"index "by-node": expression 'spec.[' invalid at column 6"#));
    ///
    /// let err = IndexFn::jmespath("by-size", "lenght(spec.containers)").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"index "by-size": expression 'lenght(spec.containers)' invalid at column 0: unknown function lenght() (did you mean length()?)"#
    /// );
    /// ```
    pub fn jmespath(index: &str, expression: &str) -> Result<Self, CacheError> {
        let compiled = CompiledExpression::compile(expression, ExpressionOf::Index(index.into()))?;
        Ok(Self {
            kind: Kind::Jmespath(Arc::new(compiled)),
        })
    }

    /// Wraps a Rust closure that may fail. An `Err(message)` leaves that object
    /// out of the index and is reported as [`CacheError::IndexEvaluation`]; so is a
    /// panic.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::IndexFn;
    ///
    /// let by_replicas = IndexFn::closure(|obj| match obj.data.pointer("/spec/replicas") {
    ///     None => Ok(vec![]),
    ///     Some(serde_json::Value::Number(n)) => Ok(vec![n.to_string()]),
    ///     Some(other) => Err(format!("spec.replicas is not a number: {other}")),
    /// });
    /// ```
    pub fn closure<F>(f: F) -> Self
    where
        F: Fn(&DynamicObject) -> Result<Vec<String>, String> + Send + Sync + 'static,
    {
        Self {
            kind: Kind::Closure(Arc::new(f)),
        }
    }

    /// Wraps a Rust closure that cannot fail (a panic is still caught and
    /// reported as [`CacheError::IndexEvaluation`]).
    ///
    /// ```
    /// use kube_dynamic_informer::cache::IndexFn;
    ///
    /// // Every label key of the object: one object under many values.
    /// let by_label_key = IndexFn::closure_infallible(|obj| {
    ///     obj.metadata.labels.iter().flat_map(|labels| labels.keys().cloned()).collect()
    /// });
    /// ```
    pub fn closure_infallible<F>(f: F) -> Self
    where
        F: Fn(&DynamicObject) -> Vec<String> + Send + Sync + 'static,
    {
        Self::closure(move |obj| Ok(f(obj)))
    }

    /// The built-in namespace index: `metadata.namespace` when present and not
    /// empty; cluster-scoped objects give no value. Every store has it under
    /// [`NAMESPACE_INDEX`].
    pub fn namespace() -> Self {
        Self {
            kind: Kind::Namespace,
        }
    }

    /// The JMESPath expression this function was compiled from, or `None` for
    /// closures and the built-in namespace index.
    pub fn expression(&self) -> Option<&str> {
        match &self.kind {
            Kind::Jmespath(compiled) => Some(&compiled.expression),
            Kind::Namespace | Kind::Closure(_) => None,
        }
    }

    /// Whether `self` and `other` are the same definition, so that one can
    /// stand for the other: the namespace index, the same JMESPath
    /// expression (compared as written), or clones of one closure. Two
    /// closures written apart are never the same: their code cannot be
    /// compared.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::IndexFn;
    ///
    /// let color = IndexFn::jmespath("color", "spec.color")?;
    /// assert!(color.same_definition(&IndexFn::jmespath("colour", "spec.color")?));
    /// assert!(!color.same_definition(&IndexFn::jmespath("color", "spec.colour")?));
    /// let by_name = IndexFn::closure_infallible(|o| o.metadata.name.iter().cloned().collect());
    /// assert!(by_name.same_definition(&by_name.clone()));
    /// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
    /// ```
    #[must_use]
    pub fn same_definition(&self, other: &IndexFn) -> bool {
        match (&self.kind, &other.kind) {
            (Kind::Namespace, Kind::Namespace) => true,
            (Kind::Jmespath(a), Kind::Jmespath(b)) => a.expression == b.expression,
            (Kind::Closure(a), Kind::Closure(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Whether evaluating this function converts (part of) the object to a
    /// JMESPath value: true for JMESPath expressions that are not plain field
    /// paths, and for paths into `metadata` timestamps and lists of structs.
    /// Informational; evaluation decides by itself.
    pub fn needs_conversion(&self) -> bool {
        matches!(&self.kind, Kind::Jmespath(compiled) if !matches!(compiled.plan, Plan::Direct(_)))
    }

    /// Computes the values of one object, for the index named `index` (used in
    /// the error).
    ///
    /// # Errors
    ///
    /// [`CacheError::IndexEvaluation`] when the result contains an object, the
    /// expression fails on this object, a closure fails or panics, or the
    /// object cannot be converted for JMESPath.
    pub fn evaluate(&self, index: &str, input: &IndexInput<'_>) -> Result<Vec<String>, CacheError> {
        // Panics are not expected from our code or from the jmespath crate
        // (known panics are ruled out at compile time), but a user closure may
        // panic, and one object must never take the cache down.
        let result = catch_unwind(AssertUnwindSafe(|| self.evaluate_unguarded(input)))
            .unwrap_or_else(|panic| {
                Err(format!(
                    "index function panicked: {}",
                    panic_message(&*panic)
                ))
            });
        result.map_err(|message| CacheError::IndexEvaluation {
            index: index.to_owned(),
            object: input.describe(),
            message,
        })
    }

    fn evaluate_unguarded(&self, input: &IndexInput<'_>) -> Result<Vec<String>, String> {
        let obj = input.object();
        match &self.kind {
            Kind::Namespace => Ok(obj
                .metadata
                .namespace
                .iter()
                .filter(|ns| !ns.is_empty())
                .cloned()
                .collect()),
            Kind::Closure(f) => f(obj),
            Kind::Jmespath(compiled) => match &compiled.plan {
                Plan::Direct(path) => field_path::evaluate(obj, path),
                Plan::Converted { .. } | Plan::Interpreted { .. } => {
                    values_of_variable(&*compiled.result(input)?)
                }
            },
        }
    }
}

impl CompiledExpression {
    /// Compiles `expression` (see [`IndexFn::jmespath`] for what is
    /// checked), its errors naming what it is `of`.
    pub(in crate::cache) fn compile(
        expression: &str,
        of: ExpressionOf,
    ) -> Result<Self, CacheError> {
        let plan = compile::compile(expression).map_err(|failure| {
            let (syntax, offset, message) = match failure {
                Failure::Syntax { offset, message } => (true, offset, message),
                Failure::Call { offset, message } => (false, offset, message),
                Failure::TooComplex(reason) => {
                    let expression = expression.chars().take(80).collect();
                    return CacheError::ExpressionTooComplex {
                        of,
                        expression,
                        reason,
                    };
                }
            };
            let Position {
                line,
                column,
                offset,
            } = Position::at(expression, offset);
            let expression = expression.to_owned();
            if syntax {
                CacheError::ExpressionSyntax {
                    of,
                    expression,
                    line,
                    column,
                    offset,
                    message,
                }
            } else {
                CacheError::ExpressionFunction {
                    of,
                    expression,
                    line,
                    column,
                    offset,
                    message,
                }
            }
        })?;
        Ok(Self {
            expression: expression.to_owned(),
            plan,
        })
    }

    /// The expression as written.
    pub(in crate::cache) fn text(&self) -> &str {
        &self.expression
    }

    /// The fields of a plain field path that reads, in place, what the
    /// `jmespath` crate reads on the converted object (not through a
    /// `metadata` timestamp or list of structs); `None` for anything else.
    pub(in crate::cache) fn direct_path(&self) -> Option<&[String]> {
        match &self.plan {
            Plan::Direct(path) if field_path::is_direct(path) => Some(path),
            _ => None,
        }
    }

    /// The expression's JMESPath result, on the parts of the object it reads
    /// (for a plain field path: on the object converted, which indexes
    /// read directly instead).
    pub(in crate::cache) fn result(&self, input: &IndexInput<'_>) -> Result<Rcvar, String> {
        match &self.plan {
            Plan::Direct(path) => Ok(follow(input.converted(&Needs::of_path(path))?, path)),
            Plan::Converted { path, needs } => Ok(follow(input.converted(needs)?, path)),
            Plan::Interpreted { ast, needs } => {
                let data = input.converted(needs)?;
                let mut ctx = jmespath::Context::new(&self.expression, &functions::RUNTIME);
                jmespath::interpret(&data, ast, &mut ctx)
                    .map_err(|err| format!("evaluating '{}': {}", self.expression, err.reason))
            }
        }
    }
}

/// Follows a field path, without recursion.
fn follow(mut value: Rcvar, path: &[String]) -> Rcvar {
    for field in path {
        value = value.get_field(field);
    }
    value
}

impl fmt::Debug for IndexFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Namespace => f.write_str("IndexFn::Namespace"),
            Kind::Jmespath(compiled) => f
                .debug_tuple("IndexFn::Jmespath")
                .field(&compiled.expression)
                .finish(),
            Kind::Closure(_) => f.write_str("IndexFn::Closure(..)"),
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

#[cfg(test)]
mod tests;
