//! Index functions: what an object is filed under in a named index.
//!
//! An index maps each cached object to **zero or more** string values
//! (many-to-many, as in client-go: an index over label keys files a pod under
//! every one of its label keys). An [`IndexFn`] computes those values. There
//! are three kinds:
//!
//! - a **JMESPath expression** ([`IndexFn::jmespath`]), so indexes can be
//!   declared as strings in a configuration file;
//! - a **Rust closure** ([`IndexFn::closure`], [`IndexFn::closure_infallible`])
//!   for anything an expression cannot say;
//! - the built-in **namespace** index ([`IndexFn::namespace`]), present in every
//!   store under the name [`NAMESPACE_INDEX`].
//!
//! # How a result becomes index values
//!
//! | expression result | index values |
//! |---|---|
//! | string | that string |
//! | number, boolean | its JSON text (`3`, `1.5`, `true`) |
//! | array | one value per element; nested arrays are flattened, `null` elements skipped |
//! | `null`, missing field, empty array | none: the object is not in that index |
//! | object (also inside an array) | an [`IndexError::Evaluation`] for that object |
//!
//! Values are returned in result order and may repeat; the store keeps each
//! distinct value once per object.
//!
//! # Why there is an [`IndexInput`]
//!
//! The `jmespath` crate evaluates expressions over its own `Variable` tree.
//! Its convenient `search(&value)` converts the whole input into that tree on
//! every call, which for a 5 KB pod costs a hundred times more than the
//! evaluation itself. An [`IndexInput`] wraps one object for all the indexes of
//! a store and converts lazily, and only once, what the expressions read:
//!
//! - Plain field paths (`metadata.labels.app`, `spec.nodeName`,
//!   `metadata."namespace"`) are recognised when the expression is compiled and
//!   evaluated directly on the [`DynamicObject`]'s `metadata` and `data`,
//!   without any conversion.
//! - For other expressions, compilation works out which parts of the object
//!   the expression can observe (`spec.containers[].image` observes
//!   `spec.containers` and nothing else; `keys(@)` observes everything), and
//!   only those parts are converted. Each converted part is kept in the
//!   input for the following expressions.
//!
//! The unit tests check both against the `jmespath` crate's own result on a
//! full conversion, for fixed edge cases and for generated objects and
//! expressions. `cargo bench --bench index` measures the difference.
//!
//! # Limits
//!
//! Nothing here panics, whatever the expression or the object. Expressions are
//! limited to [`MAX_EXPRESSION_LEN`] bytes and [`MAX_EXPRESSION_DEPTH`] levels
//! of nesting, because the `jmespath` crate parses and evaluates recursively
//! and a deeply nested expression would otherwise overflow the stack (which
//! aborts the process rather than panicking). A panic inside a user closure is
//! caught and reported as an evaluation error.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use jmespath::ast::Ast;
use jmespath::{Rcvar, Variable};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::DynamicObject;
use serde_json::Value;

/// Name of the index that every store has from creation: objects by
/// namespace. Cluster-scoped objects are not in it.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Longest JMESPath expression accepted, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 4096;

/// Deepest nesting of a JMESPath expression's syntax tree that is accepted.
///
/// `a.b.c` has depth 3, `!(a || b)` depth 3. Real index expressions stay far
/// below this; the limit keeps evaluation's recursion within a small, fixed
/// stack budget.
pub const MAX_EXPRESSION_DEPTH: usize = 48;

/// Expressions with at most this many punctuation characters (outside quoted
/// text) are parsed on the caller's thread. Each nesting level of the parser
/// consumes at least one such character, so this bounds its recursion.
/// Longer ones are parsed on a helper thread with a stack sized for them.
const INLINE_PARSE_PUNCTUATION: usize = 32;

/// Stack reserved per punctuation character for the helper parse thread. A
/// debug build of the `jmespath` parser uses up to ~8 KiB per nesting level.
const PARSE_STACK_PER_LEVEL: usize = 16 * 1024;

/// Slice steps larger than this are clamped. The `jmespath` crate adds the
/// step to an `i32` index and overflows (a panic) for huge steps; no array in
/// a Kubernetes object (at most a few MB) has this many elements, so clamping
/// never changes a result.
const MAX_SLICE_STEP: i32 = 1 << 24;

/// Error of an index function, naming the index it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The JMESPath expression does not parse. The position is as the
    /// `jmespath` crate reports it: `line` counts from 0, `column` is the
    /// number of characters before the error on that line, `offset` the number
    /// of characters before it in the whole expression.
    #[error(
        "index {index:?}: expression '{expression}' invalid at {}: {message}",
        position(*line, *column)
    )]
    Syntax {
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
    /// The expression is longer than [`MAX_EXPRESSION_LEN`] or nests deeper
    /// than [`MAX_EXPRESSION_DEPTH`].
    #[error("index {index:?}: expression '{expression}' is too complex: {reason}")]
    TooComplex {
        /// Name of the index being declared.
        index: String,
        /// The expression as given (cut to its first 80 characters).
        expression: String,
        /// Which limit was exceeded.
        reason: String,
    },
    /// Evaluating the index function on one object failed: the expression
    /// returned an object, a closure returned an error or panicked, or the
    /// object could not be converted for JMESPath. The object is left out of
    /// that index; other objects and indexes are unaffected.
    #[error("index {index:?}: cannot index object {object:?}: {message}")]
    Evaluation {
        /// Name of the index.
        index: String,
        /// Key of the object (`namespace/name` or `name`).
        object: String,
        /// What went wrong.
        message: String,
    },
}

fn position(line: usize, column: usize) -> String {
    if line == 0 {
        format!("column {column}")
    } else {
        format!("line {line}, column {column}")
    }
}

type ClosureFn = dyn Fn(&DynamicObject) -> Result<Vec<String>, String> + Send + Sync;

/// A function from an object to the values it is filed under in one index.
///
/// Cheap to clone (the compiled expression or closure is shared). See the
/// [module docs](self) for how results map to values.
///
/// # Examples
///
/// ```
/// use kube_core::DynamicObject;
/// use kube_dynamic_informer::index::{IndexFn, IndexInput};
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
pub struct IndexFn {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Namespace,
    Jmespath(Arc<CompiledExpression>),
    Closure(Arc<ClosureFn>),
}

struct CompiledExpression {
    expression: jmespath::Expression<'static>,
    /// Set when the expression is a plain field path, evaluated without
    /// converting the object.
    field_path: Option<Box<[String]>>,
    /// The parts of the object the expression can observe; only those are
    /// converted.
    needs: Needs,
}

impl IndexFn {
    /// Compiles a JMESPath expression for the index `index`.
    ///
    /// The name is only used in error messages.
    ///
    /// # Errors
    ///
    /// [`IndexError::Syntax`] naming the index and the position of the error
    /// when the expression does not parse; [`IndexError::TooComplex`] when it
    /// exceeds [`MAX_EXPRESSION_LEN`] or [`MAX_EXPRESSION_DEPTH`].
    ///
    /// ```
    /// use kube_dynamic_informer::index::IndexFn;
    ///
    /// let err = IndexFn::jmespath("by-node", "spec.[").unwrap_err();
    /// assert!(err.to_string().starts_with(r#"index "by-node": expression 'spec.[' invalid at column 6"#));
    /// ```
    pub fn jmespath(index: &str, expression: &str) -> Result<Self, IndexError> {
        let ast = parse_guarded(expression).map_err(|failure| match failure {
            ParseFailure::Syntax(err) => IndexError::Syntax {
                index: index.to_owned(),
                expression: expression.to_owned(),
                line: err.line,
                column: err.column,
                offset: err.offset,
                message: match err.reason {
                    jmespath::ErrorReason::Parse(message) => message,
                    other => other.to_string(),
                },
            },
            ParseFailure::TooComplex(reason) => IndexError::TooComplex {
                index: index.to_owned(),
                expression: expression.chars().take(80).collect(),
                reason,
            },
        })?;
        let field_path = field_path(&ast).filter(|path| supports_field_path(path));
        let needs = Needs::of(&ast);
        Ok(Self {
            kind: Kind::Jmespath(Arc::new(CompiledExpression {
                needs,
                expression: jmespath::Expression::new(expression, ast, &jmespath::DEFAULT_RUNTIME),
                field_path: field_path.map(Vec::into_boxed_slice),
            })),
        })
    }

    /// Wraps a Rust closure that may fail. An `Err(message)` leaves that object
    /// out of the index and is reported as [`IndexError::Evaluation`]; so is a
    /// panic.
    ///
    /// ```
    /// use kube_dynamic_informer::index::IndexFn;
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
    /// reported as [`IndexError::Evaluation`]).
    ///
    /// ```
    /// use kube_dynamic_informer::index::IndexFn;
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
            Kind::Jmespath(compiled) => Some(compiled.expression.as_str()),
            Kind::Namespace | Kind::Closure(_) => None,
        }
    }

    /// Whether evaluating this function converts (part of) the object to a
    /// JMESPath value: true for JMESPath expressions that are not plain field
    /// paths. Informational; evaluation decides by itself.
    pub fn needs_conversion(&self) -> bool {
        matches!(&self.kind, Kind::Jmespath(compiled) if compiled.field_path.is_none())
    }

    /// Computes the values of one object, for the index named `index` (used in
    /// the error).
    ///
    /// # Errors
    ///
    /// [`IndexError::Evaluation`] when the result contains an object, a closure
    /// fails or panics, or the object cannot be converted for JMESPath.
    pub fn evaluate(&self, index: &str, input: &IndexInput<'_>) -> Result<Vec<String>, IndexError> {
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
        result.map_err(|message| IndexError::Evaluation {
            index: index.to_owned(),
            object: input.describe(),
            message,
        })
    }

    fn evaluate_unguarded(&self, input: &IndexInput<'_>) -> Result<Vec<String>, String> {
        let obj = input.object;
        match &self.kind {
            Kind::Namespace => Ok(obj
                .metadata
                .namespace
                .iter()
                .filter(|ns| !ns.is_empty())
                .cloned()
                .collect()),
            Kind::Closure(f) => f(obj),
            Kind::Jmespath(compiled) => match &compiled.field_path {
                Some(path) => eval_field_path(obj, path),
                None => {
                    let result = compiled.interpret(input)?;
                    values_of_variable(&result)
                }
            },
        }
    }
}

impl CompiledExpression {
    /// Runs the interpreter on the parts of the object the expression reads.
    fn interpret(&self, input: &IndexInput<'_>) -> Result<Rcvar, String> {
        let data = input.converted(&self.needs)?;
        let mut ctx = jmespath::Context::new(self.expression.as_str(), &jmespath::DEFAULT_RUNTIME);
        jmespath::interpret(&data, self.expression.as_ast(), &mut ctx)
            .map_err(|err| format!("evaluating '{}': {}", self.expression.as_str(), err.reason))
    }
}

impl fmt::Debug for IndexFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Namespace => f.write_str("IndexFn::Namespace"),
            Kind::Jmespath(compiled) => f
                .debug_tuple("IndexFn::Jmespath")
                .field(&compiled.expression.as_str())
                .finish(),
            Kind::Closure(_) => f.write_str("IndexFn::Closure(..)"),
        }
    }
}

/// One object prepared for evaluation by any number of index functions.
///
/// JMESPath expressions that are not plain field paths need the object as a
/// `jmespath::Variable` tree. The input converts, lazily, only the parts of the
/// object an expression can observe (for `spec.containers[].image`, just
/// `spec.containers`), and keeps every converted part for the following
/// expressions: a store with ten JMESPath indexes converts each part of an
/// object at most once, and never the parts no index reads (such as
/// `metadata.managedFields`). Field-path expressions, closures and the
/// namespace index never convert anything.
///
/// An input is meant to live for the indexing of one object on one thread (it
/// is not `Sync`).
pub struct IndexInput<'a> {
    object: &'a DynamicObject,
    /// Fully converted parts of the object by path from the root (the empty
    /// path is the whole object).
    parts: RefCell<HashMap<Box<[String]>, Rcvar>>,
}

impl<'a> IndexInput<'a> {
    /// Wraps an object; nothing is converted yet.
    pub fn new(object: &'a DynamicObject) -> Self {
        Self {
            object,
            parts: RefCell::new(HashMap::new()),
        }
    }

    /// The wrapped object.
    pub fn object(&self) -> &'a DynamicObject {
        self.object
    }

    /// Whether any part of the object has been converted for JMESPath (mostly
    /// useful in tests and benchmarks).
    pub fn is_converted(&self) -> bool {
        !self.parts.borrow().is_empty()
    }

    /// The object as a JMESPath value, complete wherever `needs` says the
    /// expression may look, and possibly missing anything else.
    fn converted(&self, needs: &Needs) -> Result<Rcvar, String> {
        let data = match &self.object.data {
            Value::Object(map) => Some(map),
            Value::Null => None,
            // serde cannot flatten these into the object's map, so the
            // crate's own conversion fails; fail the same way.
            _ => return Err(DATA_NOT_AN_OBJECT.to_owned()),
        };
        let mut path = Vec::new();
        if let Some(whole) = self.cached(&path) {
            return Ok(whole);
        }
        if needs.full {
            return Ok(self.cache(path, whole_object(self.object, data)?));
        }
        // The root is a map of `apiVersion`, `kind`, `metadata` and the keys
        // of `data`, a key of `data` shadowing the others (it is serialised
        // last).
        let mut root = BTreeMap::new();
        for (field, child) in &needs.fields {
            path.push(field.clone());
            let value = match data.and_then(|map| map.get(field)) {
                Some(value) => Some(self.json_part(value, child, &mut path)),
                None => match field.as_str() {
                    "apiVersion" => self
                        .object
                        .types
                        .as_ref()
                        .map(|t| string_var(&t.api_version)),
                    "kind" => self.object.types.as_ref().map(|t| string_var(&t.kind)),
                    "metadata" => Some(self.metadata_part(child, &mut path)?),
                    _ => None,
                },
            };
            path.pop();
            if let Some(value) = value {
                root.insert(field.clone(), value);
            }
        }
        Ok(Rcvar::new(Variable::Object(root)))
    }

    fn cached(&self, path: &[String]) -> Option<Rcvar> {
        self.parts.borrow().get(path).cloned()
    }

    fn cache(&self, path: Vec<String>, value: Variable) -> Rcvar {
        let value = Rcvar::new(value);
        self.parts
            .borrow_mut()
            .insert(path.into_boxed_slice(), value.clone());
        value
    }

    fn json_part(&self, value: &Value, needs: &Needs, path: &mut Vec<String>) -> Rcvar {
        if let Some(done) = self.cached(path) {
            return done;
        }
        if needs.full {
            return self.cache(path.clone(), json_to_variable(value));
        }
        // Only fields of this value are read. A field of a non-object is
        // null, exactly as a field missing from an empty object.
        let mut fields = BTreeMap::new();
        if let Value::Object(map) = value {
            for (field, child) in &needs.fields {
                if let Some(inner) = map.get(field) {
                    path.push(field.clone());
                    fields.insert(field.clone(), self.json_part(inner, child, path));
                    path.pop();
                }
            }
        }
        Rcvar::new(Variable::Object(fields))
    }

    fn metadata_part(&self, needs: &Needs, path: &mut Vec<String>) -> Result<Rcvar, String> {
        if let Some(done) = self.cached(path) {
            return Ok(done);
        }
        let meta = &self.object.metadata;
        if needs.full {
            let converted = Variable::from_serializable(meta).map_err(conversion_error)?;
            return Ok(self.cache(path.clone(), converted));
        }
        // Metadata fields are small (except managedFields, which is converted
        // only when read): each needed one is converted whole.
        let mut fields = BTreeMap::new();
        for field in needs.fields.keys() {
            path.push(field.clone());
            let value = match self.cached(path) {
                Some(done) => Some(done),
                None => metadata_field(meta, field)?.map(|v| self.cache(path.clone(), v)),
            };
            path.pop();
            if let Some(value) = value {
                fields.insert(field.clone(), value);
            }
        }
        Ok(Rcvar::new(Variable::Object(fields)))
    }

    fn describe(&self) -> String {
        let meta = &self.object.metadata;
        match meta.name.as_deref() {
            Some(name) => crate::object_key::key_from_parts(meta.namespace.as_deref(), name),
            None => "<unnamed>".to_owned(),
        }
    }
}

impl<'a> From<&'a DynamicObject> for IndexInput<'a> {
    fn from(object: &'a DynamicObject) -> Self {
        Self::new(object)
    }
}

impl fmt::Debug for IndexInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexInput")
            .field("object", &self.describe())
            .field("converted_parts", &self.parts.borrow().len())
            .finish()
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

// ---------------------------------------------------------------------------
// Result mapping
// ---------------------------------------------------------------------------

const OBJECT_RESULT: &str =
    "result is an object; an index value must be a string, number, boolean, or an array of them";

/// Maps a JMESPath result to index values (see the module docs). Nested
/// arrays are walked with an explicit stack, so no input depth can overflow.
fn values_of_variable(result: &Variable) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut pending: Vec<std::slice::Iter<'_, Rcvar>> = Vec::new();
    let mut next = Some(result);
    loop {
        if let Some(value) = next.take() {
            match value {
                Variable::Null => {}
                Variable::String(s) => out.push(s.clone()),
                Variable::Bool(b) => out.push(b.to_string()),
                Variable::Number(n) => out.push(n.to_string()),
                Variable::Array(items) => pending.push(items.iter()),
                Variable::Object(_) => return Err(OBJECT_RESULT.to_owned()),
                Variable::Expref(_) => {
                    return Err("result is an expression reference (&expr), not a value".to_owned());
                }
            }
        }
        let Some(items) = pending.last_mut() else {
            return Ok(out);
        };
        match items.next() {
            Some(item) => next = Some(item),
            None => {
                pending.pop();
            }
        }
    }
}

/// [`values_of_variable`] for a `serde_json::Value`; both must agree.
fn values_of_json(result: &Value) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut pending: Vec<std::slice::Iter<'_, Value>> = Vec::new();
    let mut next = Some(result);
    loop {
        if let Some(value) = next.take() {
            match value {
                Value::Null => {}
                Value::String(s) => out.push(s.clone()),
                Value::Bool(b) => out.push(b.to_string()),
                Value::Number(n) => out.push(n.to_string()),
                Value::Array(items) => pending.push(items.iter()),
                Value::Object(_) => return Err(OBJECT_RESULT.to_owned()),
            }
        }
        let Some(items) = pending.last_mut() else {
            return Ok(out);
        };
        match items.next() {
            Some(item) => next = Some(item),
            None => {
                pending.pop();
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Field-path fast path
// ---------------------------------------------------------------------------

/// The field names of an expression made only of field accesses joined by `.`
/// or `|` (`a.b`, `"a b".c`, `a | b`), in order; `None` for anything else.
fn field_path(ast: &Ast) -> Option<Vec<String>> {
    fn collect(ast: &Ast, out: &mut Vec<String>) -> bool {
        match ast {
            Ast::Field { name, .. } => {
                out.push(name.clone());
                true
            }
            // The depth is bounded by MAX_EXPRESSION_DEPTH, so recursion is fine.
            Ast::Subexpr { lhs, rhs, .. } => collect(lhs, out) && collect(rhs, out),
            _ => false,
        }
    }
    let mut path = Vec::new();
    collect(ast, &mut path).then_some(path)
}

/// `metadata` fields whose serialised form the fast path does not reproduce
/// (timestamps and nested structs); paths into them use the interpreter.
const METADATA_FIELDS_NOT_FAST: &[&str] = &[
    "creationTimestamp",
    "deletionTimestamp",
    "managedFields",
    "ownerReferences",
];

fn supports_field_path(path: &[String]) -> bool {
    !(path.len() >= 2
        && path[0] == "metadata"
        && METADATA_FIELDS_NOT_FAST.contains(&path[1].as_str()))
}

/// Evaluates a field path on the object exactly as the `jmespath` crate would
/// on `Variable::from_serializable(obj)`, without converting anything.
///
/// That conversion serialises `types` (flattened: `apiVersion`, `kind`), then
/// `metadata`, then flattens `data` into the same map; a later key wins, so a
/// key present in `data` shadows the typed fields.
fn eval_field_path(obj: &DynamicObject, path: &[String]) -> Result<Vec<String>, String> {
    let data = match &obj.data {
        Value::Object(map) => Some(map),
        Value::Null => None,
        _ => return Err(DATA_NOT_AN_OBJECT.to_owned()),
    };
    let Some((first, rest)) = path.split_first() else {
        return Ok(Vec::new());
    };
    if let Some(value) = data.and_then(|map| map.get(first)) {
        return json_path(value, rest);
    }
    match first.as_str() {
        "apiVersion" => Ok(string_path(
            obj.types.as_ref().map(|t| t.api_version.as_str()),
            rest,
        )),
        "kind" => Ok(string_path(
            obj.types.as_ref().map(|t| t.kind.as_str()),
            rest,
        )),
        "metadata" => metadata_path(&obj.metadata, rest),
        _ => Ok(Vec::new()),
    }
}

fn json_path(mut value: &Value, path: &[String]) -> Result<Vec<String>, String> {
    for field in path {
        match value.as_object().and_then(|map| map.get(field)) {
            Some(inner) => value = inner,
            // A field of a non-object, or a missing field, is null.
            None => return Ok(Vec::new()),
        }
    }
    values_of_json(value)
}

fn string_path(value: Option<&str>, rest: &[String]) -> Vec<String> {
    match value {
        Some(s) if rest.is_empty() => vec![s.to_owned()],
        _ => Vec::new(),
    }
}

fn number_path(value: Option<i64>, rest: &[String]) -> Vec<String> {
    match value {
        Some(n) if rest.is_empty() => vec![n.to_string()],
        _ => Vec::new(),
    }
}

fn metadata_path(meta: &ObjectMeta, path: &[String]) -> Result<Vec<String>, String> {
    let Some((field, rest)) = path.split_first() else {
        // `metadata` itself always serialises as an object.
        return Err(OBJECT_RESULT.to_owned());
    };
    let labels_like = |map: Option<&std::collections::BTreeMap<String, String>>| match (map, rest) {
        (None, _) => Ok(Vec::new()),
        (Some(_), []) => Err(OBJECT_RESULT.to_owned()),
        (Some(map), [key, deeper @ ..]) => {
            Ok(string_path(map.get(key).map(String::as_str), deeper))
        }
    };
    match field.as_str() {
        "name" => Ok(string_path(meta.name.as_deref(), rest)),
        "namespace" => Ok(string_path(meta.namespace.as_deref(), rest)),
        "generateName" => Ok(string_path(meta.generate_name.as_deref(), rest)),
        "resourceVersion" => Ok(string_path(meta.resource_version.as_deref(), rest)),
        "selfLink" => Ok(string_path(meta.self_link.as_deref(), rest)),
        "uid" => Ok(string_path(meta.uid.as_deref(), rest)),
        "generation" => Ok(number_path(meta.generation, rest)),
        "deletionGracePeriodSeconds" => Ok(number_path(meta.deletion_grace_period_seconds, rest)),
        "labels" => labels_like(meta.labels.as_ref()),
        "annotations" => labels_like(meta.annotations.as_ref()),
        "finalizers" => Ok(match &meta.finalizers {
            // A field of an array is null.
            Some(finalizers) if rest.is_empty() => finalizers.clone(),
            _ => Vec::new(),
        }),
        // Not an ObjectMeta field, so absent from the serialised object.
        // (The fields listed in METADATA_FIELDS_NOT_FAST never get here.)
        _ => Ok(Vec::new()),
    }
}

// ---------------------------------------------------------------------------
// Partial conversion
// ---------------------------------------------------------------------------

/// The parts of the input an expression can observe, as a tree of field
/// names. A `full` node is observed as a whole (passed to a function,
/// compared, projected, returned...); of any other node only the listed
/// fields are read, so only those need converting.
#[derive(Debug, Default, Clone, PartialEq)]
struct Needs {
    full: bool,
    fields: BTreeMap<String, Needs>,
}

/// What an expression node evaluates to, as far as the analysis can tell:
/// the part of the input at a path (not yet observed), or some other value
/// (derived from parts already marked as observed, or from literals).
#[derive(Clone)]
enum Part {
    At(Vec<String>),
    Other,
}

impl Needs {
    fn of(ast: &Ast) -> Self {
        let mut needs = Needs::default();
        let result = needs.analyze(ast, &Part::At(Vec::new()));
        needs.observe(result);
        needs
    }

    fn observe(&mut self, part: Part) {
        let Part::At(path) = part else { return };
        let mut node = self;
        for field in path {
            if node.full {
                return;
            }
            node = node.fields.entry(field).or_default();
        }
        node.full = true;
        node.fields.clear();
    }

    /// Records what evaluating `ast` against `current` observes and returns
    /// what it evaluates to. Field access on a part gives a deeper part;
    /// everything else observes its operands whole. Sub-expressions evaluated
    /// against `Part::Other` (projection right-hand sides, `&expr`) can only
    /// read values already observed whole, so they add nothing. The tree is
    /// at most MAX_EXPRESSION_DEPTH deep, so recursion is fine.
    fn analyze(&mut self, ast: &Ast, current: &Part) -> Part {
        match ast {
            Ast::Field { name, .. } => match current {
                Part::At(path) => {
                    let mut path = path.clone();
                    path.push(name.clone());
                    Part::At(path)
                }
                Part::Other => Part::Other,
            },
            Ast::Identity { .. } => current.clone(),
            Ast::Subexpr { lhs, rhs, .. } => {
                let left = self.analyze(lhs, current);
                self.analyze(rhs, &left)
            }
            Ast::Literal { .. } | Ast::Expref { .. } => Part::Other,
            Ast::Index { .. } | Ast::Slice { .. } => {
                self.observe(current.clone());
                Part::Other
            }
            Ast::Projection { lhs, .. } => {
                let left = self.analyze(lhs, current);
                self.observe(left);
                Part::Other
            }
            Ast::Flatten { node, .. } | Ast::ObjectValues { node, .. } | Ast::Not { node, .. } => {
                let part = self.analyze(node, current);
                self.observe(part);
                Part::Other
            }
            Ast::Comparison { lhs, rhs, .. }
            | Ast::And { lhs, rhs, .. }
            | Ast::Or { lhs, rhs, .. }
            | Ast::Condition {
                predicate: lhs,
                then: rhs,
                ..
            } => {
                for operand in [lhs, rhs] {
                    let part = self.analyze(operand, current);
                    self.observe(part);
                }
                Part::Other
            }
            Ast::Function { args, .. } | Ast::MultiList { elements: args, .. } => {
                for arg in args {
                    let part = self.analyze(arg, current);
                    self.observe(part);
                }
                Part::Other
            }
            Ast::MultiHash { elements, .. } => {
                for element in elements {
                    let part = self.analyze(&element.value, current);
                    self.observe(part);
                }
                Part::Other
            }
        }
    }
}

const DATA_NOT_AN_OBJECT: &str =
    "converting the object for JMESPath: object data is not a JSON object";

fn conversion_error(err: jmespath::JmespathError) -> String {
    format!("converting the object for JMESPath: {}", err.reason)
}

fn string_var(s: &str) -> Rcvar {
    Rcvar::new(Variable::String(s.to_owned()))
}

/// The whole object, as `Variable::from_serializable(obj)` builds it (the
/// tests check that), but converting `data` directly rather than through
/// serde's serializer.
fn whole_object(
    obj: &DynamicObject,
    data: Option<&serde_json::Map<String, Value>>,
) -> Result<Variable, String> {
    let mut root = BTreeMap::new();
    if let Some(types) = &obj.types {
        root.insert("apiVersion".to_owned(), string_var(&types.api_version));
        root.insert("kind".to_owned(), string_var(&types.kind));
    }
    let metadata = Variable::from_serializable(&obj.metadata).map_err(conversion_error)?;
    root.insert("metadata".to_owned(), Rcvar::new(metadata));
    for (field, value) in data.into_iter().flatten() {
        root.insert(field.clone(), Rcvar::new(json_to_variable(value)));
    }
    Ok(Variable::Object(root))
}

/// What serialising `value` into a `Variable` gives, without serde. Recursive
/// like serde's own conversion (JSON from the API server nests at most 128
/// levels).
fn json_to_variable(value: &Value) -> Variable {
    match value {
        Value::Null => Variable::Null,
        Value::Bool(b) => Variable::Bool(*b),
        Value::Number(n) => Variable::Number(n.clone()),
        Value::String(s) => Variable::String(s.clone()),
        Value::Array(items) => Variable::Array(
            items
                .iter()
                .map(|item| Rcvar::new(json_to_variable(item)))
                .collect(),
        ),
        Value::Object(map) => Variable::Object(
            map.iter()
                .map(|(field, item)| (field.clone(), Rcvar::new(json_to_variable(item))))
                .collect(),
        ),
    }
}

/// One field of `metadata` as its serialised form, `None` when absent.
fn metadata_field(meta: &ObjectMeta, field: &str) -> Result<Option<Variable>, String> {
    fn convert<T: serde::Serialize>(value: Option<&T>) -> Result<Option<Variable>, String> {
        value
            .map(|v| Variable::from_serializable(v).map_err(conversion_error))
            .transpose()
    }
    match field {
        "annotations" => convert(meta.annotations.as_ref()),
        "creationTimestamp" => convert(meta.creation_timestamp.as_ref()),
        "deletionGracePeriodSeconds" => convert(meta.deletion_grace_period_seconds.as_ref()),
        "deletionTimestamp" => convert(meta.deletion_timestamp.as_ref()),
        "finalizers" => convert(meta.finalizers.as_ref()),
        "generateName" => convert(meta.generate_name.as_ref()),
        "generation" => convert(meta.generation.as_ref()),
        "labels" => convert(meta.labels.as_ref()),
        "managedFields" => convert(meta.managed_fields.as_ref()),
        "name" => convert(meta.name.as_ref()),
        "namespace" => convert(meta.namespace.as_ref()),
        "ownerReferences" => convert(meta.owner_references.as_ref()),
        "resourceVersion" => convert(meta.resource_version.as_ref()),
        "selfLink" => convert(meta.self_link.as_ref()),
        "uid" => convert(meta.uid.as_ref()),
        _ => Ok(None),
    }
}

// ---------------------------------------------------------------------------
// Guarded compilation
// ---------------------------------------------------------------------------

enum ParseFailure {
    Syntax(jmespath::JmespathError),
    TooComplex(String),
}

/// Parses an expression without any risk of a panic or a stack overflow, and
/// rewrites what would make evaluation panic.
fn parse_guarded(expression: &str) -> Result<Ast, ParseFailure> {
    if expression.len() > MAX_EXPRESSION_LEN {
        return Err(ParseFailure::TooComplex(format!(
            "{} bytes long, the limit is {MAX_EXPRESSION_LEN}",
            expression.len()
        )));
    }
    let punctuation = punctuation_outside_quotes(expression);
    if punctuation <= INLINE_PARSE_PUNCTUATION {
        return parse_checked(expression);
    }
    let stack = (1 << 20) + punctuation * PARSE_STACK_PER_LEVEL;
    std::thread::scope(|scope| {
        let helper = std::thread::Builder::new()
            .name("jmespath-parse".to_owned())
            .stack_size(stack)
            .spawn_scoped(scope, || parse_checked(expression));
        match helper {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Err(ParseFailure::TooComplex(
                    "the parser failed unexpectedly".to_owned(),
                ))
            }),
            Err(err) => Err(ParseFailure::TooComplex(format!(
                "cannot start a thread to parse it: {err}"
            ))),
        }
    })
}

/// Counts punctuation characters outside quoted identifiers, raw strings and
/// JSON literals (escapes handled as the `jmespath` lexer does). Every token
/// that opens a nesting level in the parser is punctuation.
fn punctuation_outside_quotes(expression: &str) -> usize {
    let mut count = 0;
    let mut quote = None;
    let mut escaped = false;
    for c in expression.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            c if c.is_ascii_punctuation() => count += 1,
            _ => {}
        }
    }
    count
}

fn parse_checked(expression: &str) -> Result<Ast, ParseFailure> {
    let parsed = catch_unwind(|| jmespath::parse(expression)).map_err(|panic| {
        ParseFailure::TooComplex(format!("the parser panicked: {}", panic_message(&*panic)))
    })?;
    let mut ast = parsed.map_err(ParseFailure::Syntax)?;
    let depth = sanitize(&mut ast);
    if depth > MAX_EXPRESSION_DEPTH {
        return Err(ParseFailure::TooComplex(format!(
            "nested {depth} levels deep, the limit is {MAX_EXPRESSION_DEPTH}"
        )));
    }
    Ok(ast)
}

/// Returns the depth of the tree and clamps slice steps (see
/// [`MAX_SLICE_STEP`]). Iterative, so any depth is safe.
fn sanitize(ast: &mut Ast) -> usize {
    let mut max_depth = 0;
    let mut stack: Vec<(&mut Ast, usize)> = vec![(ast, 1)];
    while let Some((node, depth)) = stack.pop() {
        max_depth = max_depth.max(depth);
        let child = depth + 1;
        match node {
            Ast::Slice { step, .. } => *step = (*step).min(MAX_SLICE_STEP),
            Ast::Identity { .. } | Ast::Field { .. } | Ast::Index { .. } | Ast::Literal { .. } => {}
            Ast::Expref { ast: node, .. }
            | Ast::Flatten { node, .. }
            | Ast::Not { node, .. }
            | Ast::ObjectValues { node, .. } => stack.push((node, child)),
            Ast::Comparison { lhs, rhs, .. }
            | Ast::Projection { lhs, rhs, .. }
            | Ast::And { lhs, rhs, .. }
            | Ast::Or { lhs, rhs, .. }
            | Ast::Subexpr { lhs, rhs, .. } => {
                stack.push((lhs, child));
                stack.push((rhs, child));
            }
            Ast::Condition {
                predicate, then, ..
            } => {
                stack.push((predicate, child));
                stack.push((then, child));
            }
            Ast::Function { args, .. } | Ast::MultiList { elements: args, .. } => {
                stack.extend(args.iter_mut().map(|arg| (arg, child)));
            }
            Ast::MultiHash { elements, .. } => {
                stack.extend(elements.iter_mut().map(|kv| (&mut kv.value, child)));
            }
        }
    }
    max_depth
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn obj(value: Value) -> DynamicObject {
        serde_json::from_value(value).expect("valid object")
    }

    fn pod() -> DynamicObject {
        obj(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-0",
                "namespace": "shop",
                "uid": "u-1",
                "resourceVersion": "42",
                "generation": 3,
                "finalizers": ["a/b", "c/d"],
                "labels": {"app": "web", "tier": "front", "app.kubernetes.io/name": "web", "empty": ""},
                "annotations": {"note": "x"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "uid": "rs-1", "controller": true}],
                "creationTimestamp": "2024-01-02T03:04:05Z"
            },
            "spec": {
                "nodeName": "node-1",
                "priority": 7,
                "ratio": 1.5,
                "hostNetwork": false,
                "containers": [
                    {"name": "a", "image": "nginx:1", "ports": [{"containerPort": 80}, {"containerPort": 443}]},
                    {"name": "b", "image": "envoy:2", "ports": []}
                ],
                "nested": [["x", ["y"]], [], null, "z"],
                "nothing": null,
                "emptyList": [],
                "objInList": ["ok", {"no": 1}]
            },
            "status": {"phase": "Running"}
        }))
    }

    fn eval(expression: &str, object: &DynamicObject) -> Result<Vec<String>, IndexError> {
        let f = IndexFn::jmespath("test", expression).expect("compiles");
        f.evaluate("test", &IndexInput::new(object))
    }

    /// What the `jmespath` crate itself returns, through `search`, mapped.
    fn reference(expression: &str, object: &DynamicObject) -> Result<Vec<String>, ()> {
        let compiled = jmespath::compile(expression).expect("compiles");
        let data = Variable::from_serializable(object).map_err(|_| ())?;
        let result = compiled.search(data).map_err(|_| ())?;
        values_of_variable(&result).map_err(|_| ())
    }

    #[test]
    fn string_result_gives_one_value() {
        assert_eq!(eval("spec.nodeName", &pod()).unwrap(), ["node-1"]);
        assert_eq!(eval("metadata.labels.empty", &pod()).unwrap(), [""]);
    }

    #[test]
    fn array_result_gives_one_value_per_element() {
        assert_eq!(
            eval("spec.containers[].image", &pod()).unwrap(),
            ["nginx:1", "envoy:2"]
        );
        assert_eq!(eval("keys(metadata.labels)", &pod()).unwrap().len(), 4);
    }

    #[test]
    fn nested_arrays_are_flattened_and_nulls_skipped() {
        assert_eq!(eval("spec.nested", &pod()).unwrap(), ["x", "y", "z"]);
        assert_eq!(
            eval("spec.containers[].ports[].containerPort", &pod()).unwrap(),
            ["80", "443"]
        );
        assert_eq!(eval("@.spec.nested", &pod()).unwrap(), ["x", "y", "z"]);
    }

    #[test]
    fn numbers_and_booleans_become_json_text() {
        assert_eq!(eval("spec.priority", &pod()).unwrap(), ["7"]);
        assert_eq!(eval("spec.ratio", &pod()).unwrap(), ["1.5"]);
        assert_eq!(eval("spec.hostNetwork", &pod()).unwrap(), ["false"]);
        assert_eq!(eval("metadata.generation", &pod()).unwrap(), ["3"]);
        assert_eq!(eval("length(spec.containers)", &pod()).unwrap(), ["2"]);
        assert_eq!(eval("spec.priority > `5`", &pod()).unwrap(), ["true"]);
    }

    #[test]
    fn null_missing_and_empty_array_give_no_value() {
        for expression in [
            "spec.nothing",
            "spec.missing",
            "spec.emptyList",
            "spec.nodeName.deeper",
            "nope.nope.nope",
            "spec.containers[?name == 'zzz'].image",
        ] {
            assert_eq!(
                eval(expression, &pod()).unwrap(),
                Vec::<String>::new(),
                "{expression}"
            );
        }
    }

    #[test]
    fn object_result_is_an_evaluation_error_naming_index_and_object() {
        for expression in [
            "spec",
            "metadata",
            "metadata.labels",
            "spec.objInList",
            "spec.containers",
        ] {
            let err = eval(expression, &pod()).unwrap_err();
            assert!(
                matches!(&err, IndexError::Evaluation { index, object, .. } if index == "test" && object == "shop/web-0"),
                "{expression}: {err:?}"
            );
            assert!(
                err.to_string()
                    .starts_with(r#"index "test": cannot index object "shop/web-0": "#)
            );
        }
        let err = eval("&spec", &pod()).unwrap_err();
        assert!(err.to_string().contains("expression reference"), "{err}");
    }

    #[test]
    fn runtime_errors_are_evaluation_errors() {
        // abs() of a string is a type error at run time.
        let err = eval("abs(spec.nodeName)", &pod()).unwrap_err();
        assert!(matches!(err, IndexError::Evaluation { .. }), "{err:?}");
    }

    #[test]
    fn syntax_error_names_index_and_position() {
        let err = IndexFn::jmespath("by-node", "spec.[").unwrap_err();
        let IndexError::Syntax {
            index,
            line,
            column,
            offset,
            ..
        } = &err
        else {
            panic!("not a syntax error: {err:?}");
        };
        assert_eq!(
            (index.as_str(), *line, *column, *offset),
            ("by-node", 0, 6, 6)
        );
        assert!(
            err.to_string()
                .starts_with(r#"index "by-node": expression 'spec.[' invalid at column 6: "#),
            "{err}"
        );

        let err = IndexFn::jmespath("multi", "a\n.[").unwrap_err();
        assert!(
            err.to_string().contains("invalid at line 1, column 2"),
            "{err}"
        );
        assert!(matches!(
            IndexFn::jmespath("x", ""),
            Err(IndexError::Syntax { .. })
        ));
        assert!(matches!(
            IndexFn::jmespath("x", "a = b"),
            Err(IndexError::Syntax { .. })
        ));
    }

    #[test]
    fn too_complex_expressions_are_rejected_not_overflowing() {
        // Parentheses nest the parser (on its helper thread), not the tree.
        let parens = format!("{}a{}", "(".repeat(2000), ")".repeat(2000));
        assert!(IndexFn::jmespath("parens", &parens).is_ok());

        let err = IndexFn::jmespath("deep", &("!".repeat(60) + "a")).unwrap_err();
        assert!(matches!(err, IndexError::TooComplex { .. }), "{err:?}");
        assert!(
            err.to_string()
                .starts_with(r#"index "deep": expression '!!!"#),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("is too complex: nested 61 levels deep, the limit is 48"),
            "{err}"
        );

        for deep in [
            "!".repeat(1500) + "a",
            "a[*].".repeat(700) + "b",
            "a.".repeat(1500) + "b",
            "a[?".repeat(600) + "b" + &"]".repeat(600),
            format!("{}a{}", "[".repeat(1000), "]".repeat(1000)),
        ] {
            assert!(
                matches!(
                    IndexFn::jmespath("deep", &deep),
                    Err(IndexError::TooComplex { .. })
                ),
                "{}",
                &deep[..20]
            );
        }

        let long = "a".repeat(MAX_EXPRESSION_LEN + 1);
        assert!(matches!(
            IndexFn::jmespath("long", &long),
            Err(IndexError::TooComplex { .. })
        ));
    }

    #[test]
    fn deepest_accepted_expressions_evaluate_on_a_normal_stack() {
        let object = pod();
        for build in [
            |n: usize| "!".repeat(n - 1) + "a",
            |n: usize| "a[*].".repeat(n / 2 - 1) + "b",
            |n: usize| "a[?".repeat(n / 3) + "b" + &"]".repeat(n / 3),
            |n: usize| format!("{}a{}", "[".repeat(n - 1), "]".repeat(n - 1)),
        ] {
            let expression = build(MAX_EXPRESSION_DEPTH);
            let f = IndexFn::jmespath("deep", &expression).expect(&expression);
            let _ = f.evaluate("deep", &IndexInput::new(&object));
        }
    }

    #[test]
    fn huge_slice_steps_do_not_overflow() {
        let object = obj(json!({"metadata": {"name": "n"}, "a": [1, 2, 3, 4]}));
        assert_eq!(eval("a[1::2147483647]", &object).unwrap(), ["2"]);
        assert_eq!(eval("a[::2]", &object).unwrap(), ["1", "3"]);
        assert_eq!(eval("a[::-2147483647]", &object).unwrap(), ["4"]);
        assert!(eval("a[::0]", &object).is_err());
    }

    #[test]
    fn namespace_index() {
        let f = IndexFn::namespace();
        assert_eq!(
            f.evaluate(NAMESPACE_INDEX, &IndexInput::new(&pod()))
                .unwrap(),
            ["shop"]
        );
        let node = obj(json!({"metadata": {"name": "node-1"}}));
        assert!(
            f.evaluate(NAMESPACE_INDEX, &IndexInput::new(&node))
                .unwrap()
                .is_empty()
        );
        let empty_ns = obj(json!({"metadata": {"name": "x", "namespace": ""}}));
        assert!(
            f.evaluate(NAMESPACE_INDEX, &IndexInput::new(&empty_ns))
                .unwrap()
                .is_empty()
        );
        assert_eq!(f.expression(), None);
        assert_eq!(format!("{f:?}"), "IndexFn::Namespace");
    }

    #[test]
    fn closures_errors_and_panics_are_evaluation_errors() {
        let node = obj(json!({"metadata": {"name": "node-1"}}));
        let failing = IndexFn::closure(|_| Err("no luck".to_owned()));
        let err = failing.evaluate("f", &IndexInput::new(&node)).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"index "f": cannot index object "node-1": no luck"#
        );

        let panicking = IndexFn::closure_infallible(|_| panic!("boom"));
        let err = panicking
            .evaluate("p", &IndexInput::new(&node))
            .unwrap_err();
        assert!(
            err.to_string().contains("index function panicked: boom"),
            "{err}"
        );
        assert_eq!(format!("{panicking:?}"), "IndexFn::Closure(..)");
    }

    #[test]
    fn expression_text_and_debug() {
        let f = IndexFn::jmespath("n", "spec.nodeName").unwrap();
        assert_eq!(f.expression(), Some("spec.nodeName"));
        assert_eq!(format!("{f:?}"), r#"IndexFn::Jmespath("spec.nodeName")"#);
        assert!(!f.needs_conversion());
        assert!(
            IndexFn::jmespath("n", "spec.containers[].image")
                .unwrap()
                .needs_conversion()
        );
    }

    #[test]
    fn each_part_is_converted_once_and_only_when_read() {
        let object = pod();
        let input = IndexInput::new(&object);
        let run = |expression: &str| {
            IndexFn::jmespath("t", expression)
                .unwrap()
                .evaluate("t", &input)
                .unwrap()
        };
        let parts = |input: &IndexInput<'_>| {
            let mut parts: Vec<String> = input.parts.borrow().keys().map(|p| p.join(".")).collect();
            parts.sort();
            parts
        };
        run("metadata.labels.app");
        assert!(!input.is_converted(), "field paths must not convert");
        run("spec.containers[].image");
        assert_eq!(parts(&input), ["spec.containers"]);
        let containers = input
            .cached(&["spec".to_owned(), "containers".to_owned()])
            .unwrap();
        run("length(spec.containers)");
        run("keys(metadata.labels)");
        assert_eq!(parts(&input), ["metadata.labels", "spec.containers"]);
        let again = input
            .cached(&["spec".to_owned(), "containers".to_owned()])
            .unwrap();
        assert!(
            Arc::ptr_eq(&containers, &again),
            "converted once, then reused"
        );
        run("length(@)");
        assert!(parts(&input).contains(&String::new()), "the whole object");
    }

    #[test]
    fn analysis_marks_what_an_expression_observes() {
        let observed = |expression: &str| {
            fn walk(needs: &Needs, prefix: &str, out: &mut Vec<String>) {
                if needs.full {
                    out.push(prefix.to_owned());
                }
                for (field, child) in &needs.fields {
                    let path = if prefix.is_empty() {
                        field.clone()
                    } else {
                        format!("{prefix}.{field}")
                    };
                    walk(child, &path, out);
                }
            }
            let mut out = Vec::new();
            walk(
                &Needs::of(&jmespath::parse(expression).unwrap()),
                "",
                &mut out,
            );
            out
        };
        assert_eq!(observed("spec.containers[].image"), ["spec.containers"]);
        assert_eq!(
            observed("metadata.ownerReferences[?controller].uid"),
            ["metadata.ownerReferences"]
        );
        assert_eq!(
            observed("join('/', [metadata.namespace, spec.nodeName])"),
            ["metadata.namespace", "spec.nodeName"]
        );
        assert_eq!(observed("@.spec.nodeName"), ["spec.nodeName"]);
        assert_eq!(observed("spec | containers[0]"), ["spec.containers"]);
        assert_eq!(observed("spec.a == spec.b"), ["spec.a", "spec.b"]);
        assert_eq!(observed("spec.a || spec"), ["spec"]);
        assert_eq!(observed("`1`"), Vec::<String>::new());
        for whole in [
            "@",
            "keys(@)",
            "[?a]",
            "*.a",
            "[0]",
            "{a: @}",
            "@ | length(@)",
        ] {
            assert_eq!(observed(whole), [""], "{whole}");
        }
    }

    #[test]
    fn field_paths_are_recognised() {
        let path = |e: &str| field_path(&jmespath::parse(e).unwrap());
        assert_eq!(
            path("a.b.c"),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(
            path(r#""a b"."c.d""#),
            Some(vec!["a b".into(), "c.d".into()])
        );
        assert_eq!(path("a | b"), Some(vec!["a".into(), "b".into()]));
        assert_eq!(
            path("a | b.c"),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(path("@.a"), None);
        assert_eq!(path("a[0]"), None);
        assert_eq!(path("a.*"), None);
        assert!(
            IndexFn::jmespath("x", "metadata.ownerReferences")
                .unwrap()
                .needs_conversion()
        );
    }

    /// Field paths covering the identifier edge cases of the JMESPath
    /// compliance suite (quoted keys, escapes, missing keys, non-object
    /// intermediates, null) and every shape of a DynamicObject.
    const FIELD_PATHS: &[&str] = &[
        "apiVersion",
        "kind",
        "kind.x",
        "metadata",
        "metadata.name",
        "metadata.name.x",
        "metadata.namespace",
        "metadata.uid",
        "metadata.resourceVersion",
        "metadata.generateName",
        "metadata.selfLink",
        "metadata.generation",
        "metadata.generation.x",
        "metadata.deletionGracePeriodSeconds",
        "metadata.finalizers",
        "metadata.finalizers.x",
        "metadata.labels",
        "metadata.labels.app",
        "metadata.labels.app.x",
        "metadata.labels.missing",
        r#"metadata.labels."app.kubernetes.io/name""#,
        r#"metadata.labels."app.kubernetes.io/name".x"#,
        "metadata.annotations",
        "metadata.annotations.note",
        "metadata.nonexistent",
        "metadata.nonexistent.x",
        r#""metadata"."name""#,
        "metadata | name",
        "metadata | labels | app",
        "spec",
        "spec.nodeName",
        "spec.nodeName.x",
        "spec.priority",
        "spec.ratio",
        "spec.hostNetwork",
        "spec.containers",
        "spec.nested",
        "spec.nothing",
        "spec.nothing.x",
        "spec.emptyList",
        "spec.objInList",
        "spec.missing",
        "spec.missing.x",
        "status.phase",
        "missing",
        r#""""#,
        r#""a b""#,
        r#""with \"quote\"""#,
        r#""\u00e9t\u00e9""#,
        r#""🎉""#,
        "\"\".\"\"",
        "a.b.c.d",
        "_underscore",
        "A1",
        "x.y",
        "foo.bar.baz",
    ];

    fn assert_fast_path_matches(object: &DynamicObject) {
        for expression in FIELD_PATHS {
            let f = IndexFn::jmespath("t", expression).unwrap();
            let fast = f.evaluate("t", &IndexInput::new(object)).map_err(|_| ());
            let crate_result = reference(expression, object);
            assert_eq!(fast, crate_result, "{expression} on {object:?}");
        }
    }

    #[test]
    fn fast_path_matches_the_jmespath_crate() {
        let every_path_is_fast = FIELD_PATHS
            .iter()
            .all(|e| !IndexFn::jmespath("t", e).unwrap().needs_conversion());
        assert!(every_path_is_fast);

        let cases = [
            pod(),
            obj(json!({"metadata": {}})),
            obj(
                json!({"metadata": {"name": "n", "labels": {}, "annotations": {}, "finalizers": []}}),
            ),
            obj(json!({"kind": "K", "metadata": {"name": "n"}})),
            obj(json!({"apiVersion": "v", "metadata": {"name": "n"}})),
            obj(
                json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "n"},
                "": "empty key", "a b": 1, "with \"quote\"": true, "été": [1, [2]], "🎉": null,
                "a": {"b": {"c": {"d": "deep"}}}, "x": "not an object", "_underscore": 0, "A1": -1,
                "foo": {"bar": [1, 2]}}),
            ),
            obj(
                json!({"metadata": {"name": "n"}, "a": {"b": {"c": {"d": {"e": 1}}}}, "x": {"y": [[]]}, "foo": {"bar": {"baz": null}}}),
            ),
            obj(json!({"metadata": {"name": "n"}, "spec": "a string", "status": [1, 2]})),
        ];
        for object in &cases {
            assert_fast_path_matches(object);
        }

        // Keys of `data` shadow the typed fields in the converted object.
        let mut shadowed = pod();
        shadowed.data = json!({"metadata": {"name": "from-data"}, "apiVersion": 3, "kind": ["a"]});
        assert_fast_path_matches(&shadowed);
        assert_eq!(eval("metadata.name", &shadowed).unwrap(), ["from-data"]);

        // Data that cannot be flattened into the object fails both ways.
        for data in [json!("s"), json!(1), json!([1]), json!(true)] {
            let mut odd = pod();
            odd.data = data;
            assert_fast_path_matches(&odd);
            assert!(eval("spec.nodeName", &odd).is_err());
        }
        let mut no_data = pod();
        no_data.data = Value::Null;
        assert_fast_path_matches(&no_data);
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-z .\"/é]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(key(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("a".to_owned()),
            Just("b".to_owned()),
            Just("metadata".to_owned()),
            Just("kind".to_owned()),
            Just("spec".to_owned()),
            Just("name".to_owned()),
            "[a-z\" .]{0,3}",
        ]
    }

    fn arbitrary_object() -> impl Strategy<Value = DynamicObject> {
        (
            prop::option::of("[a-z]{1,4}"),
            prop::option::of("[a-z]{1,4}"),
            prop::option::of(prop::collection::btree_map(
                "[a-z.]{0,3}",
                "[a-z]{0,3}",
                0..4,
            )),
            prop::collection::btree_map(key(), arbitrary_json(), 0..5),
            prop::option::of(prop::option::of("[a-z/]{0,3}")),
        )
            .prop_map(|(name, namespace, labels, data, kind)| {
                let mut object = DynamicObject {
                    types: kind.map(|k| kube_core::TypeMeta {
                        api_version: "v1".to_owned(),
                        kind: k.unwrap_or_default(),
                    }),
                    metadata: ObjectMeta {
                        name,
                        namespace,
                        labels,
                        ..ObjectMeta::default()
                    },
                    data: Value::Object(data.into_iter().collect()),
                };
                if object.metadata.name.as_deref() == Some("zzzz") {
                    object.data = Value::Null;
                }
                object
            })
    }

    const EXPRESSIONS: &[&str] = &[
        "a",
        "a.b",
        "metadata.name",
        "metadata.labels.a",
        "kind",
        "spec.name",
        "a[]",
        "a[*].b",
        "a[].b[]",
        "*.a",
        "a.*",
        "a[0]",
        "a[-1]",
        "a[1:3:2]",
        "a[?b]",
        "a[?b == `1`].name",
        "keys(@)",
        "values(a)",
        "length(a)",
        "sort(a)",
        "sort_by(a, &b)",
        "max_by(a, &b)",
        "min_by(a, &name)",
        "to_string(a)",
        "to_number(a)",
        "abs(a)",
        "sum(a)",
        "avg(a)",
        "ceil(a)",
        "floor(a)",
        "join(',', a)",
        "contains(a, 'x')",
        "starts_with(a, 'x')",
        "merge(a, b)",
        "not_null(a, b)",
        "reverse(a)",
        "type(a)",
        "to_array(a)",
        "map(&b, a)",
        "[a, b]",
        "{x: a, y: b}",
        "a || b",
        "a && b",
        "!a",
        "a < b",
        "a == b",
        "@",
        "a | b | [0]",
    ];

    /// Evaluates through the library (fast path or partial conversion) and
    /// through the crate's `search` on a full conversion; they must agree,
    /// and so must the raw results of the interpreter on the partial
    /// conversion, even for results that are not valid index values.
    fn assert_same_as_crate(expression: &str, input: &IndexInput<'_>) {
        let Ok(f) = IndexFn::jmespath("p", expression) else {
            return;
        };
        let ours = f.evaluate("p", input).map_err(|_| ());
        let theirs = reference(expression, input.object());
        assert_eq!(ours, theirs, "{expression} on {:?}", input.object());

        let Kind::Jmespath(compiled) = &f.kind else {
            unreachable!()
        };
        let raw_ours = compiled.interpret(input).map_err(|_| ());
        let raw_theirs = Variable::from_serializable(input.object())
            .map_err(|_| ())
            .and_then(|data| {
                jmespath::compile(expression)
                    .unwrap()
                    .search(data)
                    .map_err(|_| ())
            });
        assert_eq!(
            raw_ours,
            raw_theirs,
            "raw result of {expression} on {:?}",
            input.object()
        );
    }

    /// Trickier than EXPRESSIONS for the analysis: whole-value observers at
    /// several depths, truthiness, shadowed typed fields, `&expr`.
    const TRICKY: &[&str] = &[
        "length(metadata)",
        "length(spec)",
        "keys(metadata)",
        "metadata.labels || spec",
        "spec && metadata.name",
        "!spec",
        "spec.a.b || a",
        "values(@)[0]",
        "to_string(spec)",
        "to_string(metadata.labels)",
        "type(kind)",
        "spec.* | [0]",
        "metadata.*",
        "metadata.labels.*",
        "@ | spec | a",
        "[spec, a][0]",
        "{x: spec.a}.x",
        "sort_by([spec, a], &to_string(@))[0]",
        "map(&name, [spec, metadata])",
        "not_null(spec.missing, metadata.name)",
        "metadata.labels.a == spec.a",
        "metadata.managedFields",
        "metadata.creationTimestamp",
        "metadata.ownerReferences[0].name",
        "length(@)",
        "a[?b].c",
        "[?a]",
        "`[1, [2, [3]]]`",
    ];

    #[test]
    fn interpreted_path_matches_the_jmespath_crate() {
        let mut shadowed = pod();
        shadowed.data = json!({"metadata": {"name": "from-data", "labels": {"a": "1"}}, "kind": {"x": 1}, "spec": {"a": [1]}});
        let mut odd = pod();
        odd.data = json!([1]);
        let objects = [
            pod(),
            shadowed,
            odd,
            obj(json!({"metadata": {}})),
            obj(
                json!({"metadata": {"name": "n", "labels": {"a": "x"}}, "spec": {"a": "x", "b": {"c": 1}}, "a": [{"b": true, "c": 1}, {"b": false, "c": 2}]}),
            ),
        ];
        for object in &objects {
            // One input shared by every expression, as in the store.
            let input = IndexInput::new(object);
            for expression in EXPRESSIONS.iter().chain(TRICKY).chain(FIELD_PATHS) {
                assert_same_as_crate(expression, &input);
            }
            // And each expression on a fresh input.
            for expression in EXPRESSIONS.iter().chain(TRICKY) {
                assert_same_as_crate(expression, &IndexInput::new(object));
            }
        }
    }

    /// Syntactically varied expressions over the field names the arbitrary
    /// objects use.
    fn arbitrary_expression() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("a"),
            Just("b"),
            Just("c"),
            Just("metadata"),
            Just("spec"),
            Just("name"),
            Just("labels"),
            Just("kind"),
            Just("\"a b\""),
            Just("@"),
            Just("`1`"),
            Just("'x'"),
            Just("`{\"a\": [1, {\"b\": 2}]}`"),
        ]
        .prop_map(str::to_owned);
        let function = prop_oneof![
            Just("length"),
            Just("keys"),
            Just("values"),
            Just("to_string"),
            Just("to_array"),
            Just("type"),
            Just("not_null"),
            Just("sort"),
            Just("reverse"),
            Just("abs"),
        ];
        leaf.prop_recursive(4, 32, 3, move |inner| {
            let pair = (inner.clone(), inner.clone());
            prop_oneof![
                pair.clone().prop_map(|(a, b)| format!("{a}.{b}")),
                pair.clone().prop_map(|(a, b)| format!("{a} | {b}")),
                inner.clone().prop_map(|a| format!("{a}[0]")),
                inner.clone().prop_map(|a| format!("{a}[-1:]")),
                pair.clone().prop_map(|(a, b)| format!("{a}[*].{b}")),
                pair.clone().prop_map(|(a, b)| format!("{a}[].{b}")),
                inner.clone().prop_map(|a| format!("{a}[]")),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(a, b, c)| format!("{a}[?{b} == {c}]")),
                inner.clone().prop_map(|a| format!("{a}.*")),
                pair.clone().prop_map(|(a, b)| format!("({a} || {b})")),
                pair.clone().prop_map(|(a, b)| format!("({a} && {b})")),
                inner.clone().prop_map(|a| format!("!{a}")),
                (function.clone(), inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
                pair.clone()
                    .prop_map(|(a, b)| format!("sort_by({a}, &{b})")),
                pair.clone().prop_map(|(a, b)| format!("map(&{a}, {b})")),
                pair.clone().prop_map(|(a, b)| format!("[{a}, {b}]")),
                pair.clone()
                    .prop_map(|(a, b)| format!("{{x: {a}, y: {b}}}")),
                pair.prop_map(|(a, b)| format!("merge({a}, {b})")),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_objects_match_the_crate(object in arbitrary_object()) {
            let input = IndexInput::new(&object);
            for expression in EXPRESSIONS.iter().chain(TRICKY) {
                assert_same_as_crate(expression, &input);
            }
            let _ = IndexFn::namespace().evaluate(NAMESPACE_INDEX, &input);
        }

        #[test]
        fn fast_path_matches_on_arbitrary_objects(object in arbitrary_object()) {
            assert_fast_path_matches(&object);
        }

        #[test]
        fn arbitrary_expressions_match_the_crate(
            expressions in prop::collection::vec(arbitrary_expression(), 1..4),
            object in arbitrary_object(),
        ) {
            let input = IndexInput::new(&object);
            for expression in &expressions {
                assert_same_as_crate(expression, &input);
            }
        }

        #[test]
        fn arbitrary_strings_never_panic(
            expression in "[a-z.@*|&!\\[\\](){},:?<>=0-9 '`\"\\-]{0,40}",
            object in arbitrary_object(),
        ) {
            assert_same_as_crate(&expression, &IndexInput::new(&object));
        }
    }
}
