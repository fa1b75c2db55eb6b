//! Conditions: JMESPath expressions over an object that are true or false.
//!
//! The [layer docs](crate::cache) say more.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use jmespath::Variable;
use kube_core::DynamicObject;

use crate::cache::index::{CompiledExpression, IndexInput, json_text};
use crate::cache::{CacheError, ExpressionOf};

mod kubectl;

/// The longest text of a value a [`Verdict::NotBoolean`] quotes, in
/// characters.
const QUOTED_VALUE_CHARS: usize = 60;

/// A JMESPath expression over an object that is true or false: what a wait
/// waits for (see [`crate::informer::Wait`]).
///
/// Compiled once, by the same compiler as index expressions, and checked as
/// they are: an expression that does not parse, or that calls a function in
/// a way that fails on every object, is refused with its position. It is
/// evaluated on one object at a time, with the JMESPath values of the cache
/// (numbers compare by value: `3 == 3.0`), and gives a [`Verdict`]:
///
/// | the expression gives | verdict |
/// |---|---|
/// | `true` | [`Verdict::Met`] |
/// | `false` | [`Verdict::NotMet`] |
/// | `null`: a field it reads is missing, or an ordering comparison (`<`, `>=`) of values that are not numbers | [`Verdict::Null`]: not met |
/// | anything else: a string, a number, an array, an object | [`Verdict::NotBoolean`]: not met, and a mistake to report |
/// | an error on this object (a function given a value of the wrong type) | [`Verdict::Failed`]: not met, and a mistake to report |
///
/// Only `true` holds: JMESPath's truthiness (a non-empty string or list is
/// "true") is not applied to the result, so that `status.phase` (a string,
/// meant as `status.phase == 'Running'`) is a mistake that is said rather
/// than a condition that holds. Write `!!(expr)` to ask for truthiness.
/// Inside the expression JMESPath's rules apply as usual (`&&`, `||`, `!`,
/// filters); mind that `!` binds tighter than `.`: `!status.ready` is
/// `(!status).ready`, and `!(status.ready)` is what is meant.
///
/// Cheap to clone; clones share the compiled expression.
///
/// ```
/// use kube_core::DynamicObject;
/// use kube_dynamic_informer::cache::{Condition, Verdict};
///
/// let deployment: DynamicObject = serde_json::from_value(serde_json::json!({
///     "apiVersion": "apps/v1", "kind": "Deployment",
///     "metadata": { "name": "web", "namespace": "shop" },
///     "spec": { "replicas": 3 },
///     "status": { "readyReplicas": 2, "phase": "Progressing" }
/// }))?;
///
/// let ready = Condition::new("status.readyReplicas == spec.replicas")?;
/// assert_eq!(ready.evaluate_object(&deployment), Verdict::NotMet);
/// let some = Condition::new("status.readyReplicas >= `1`")?;
/// assert!(some.evaluate_object(&deployment).is_met());
/// // A field that is not there: null, not met.
/// let observed = Condition::new("status.observedGeneration >= metadata.generation")?;
/// assert_eq!(observed.evaluate_object(&deployment), Verdict::Null);
/// // Not a boolean: not met, and worth saying.
/// let phase = Condition::new("status.phase")?;
/// assert_eq!(
///     phase.evaluate_object(&deployment).to_string(),
///     r#"not a boolean: "Progressing""#
/// );
///
/// let err = Condition::new("status.[").unwrap_err();
/// assert!(err.to_string().starts_with("condition 'status.[' invalid at column 8"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Condition {
    inner: Arc<Inner>,
}

struct Inner {
    compiled: CompiledExpression,
    /// What the condition was written as when that is not its expression
    /// (a `kubectl wait` form), for messages.
    written: Option<String>,
}

impl Condition {
    /// Compiles a condition.
    ///
    /// # Errors
    /// [`CacheError::ExpressionSyntax`] with the position of the error, when
    /// the expression does not parse; [`CacheError::ExpressionFunction`] with
    /// the position of the call or argument, when it calls an unknown
    /// function, or a function with the wrong number of arguments or a
    /// literal argument of the wrong type; [`CacheError::ExpressionTooComplex`]
    /// beyond [`MAX_EXPRESSION_LEN`](crate::cache::MAX_EXPRESSION_LEN) or
    /// [`MAX_EXPRESSION_DEPTH`](crate::cache::MAX_EXPRESSION_DEPTH).
    ///
    /// ```
    /// use kube_dynamic_informer::cache::Condition;
    ///
    /// let err = Condition::new("lenght(status.conditions) > `0`").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "condition 'lenght(status.conditions) > `0`' invalid at column 0: unknown function lenght() (did you mean length()?)"
    /// );
    /// ```
    pub fn new(expression: &str) -> Result<Self, CacheError> {
        Ok(Self {
            inner: Arc::new(Inner {
                compiled: CompiledExpression::compile(expression, ExpressionOf::Condition)?,
                written: None,
            }),
        })
    }

    /// The condition every object meets: that it exists (`kubectl wait
    /// --for=create`). Its expression is `` `true` ``.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::Condition;
    ///
    /// let any: kube_core::DynamicObject = serde_json::from_value(serde_json::json!({
    ///     "metadata": { "name": "x" }
    /// }))?;
    /// assert!(Condition::exists().evaluate_object(&any).is_met());
    /// assert_eq!(Condition::exists().to_string(), "exists");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn exists() -> Self {
        Self::written_as("`true`", "exists").unwrap_or_else(|_| unreachable!("a literal compiles"))
    }

    /// A condition compiled from `expression` that messages call `written`
    /// (the form the user wrote, translated to `expression`).
    fn written_as(expression: &str, written: &str) -> Result<Self, CacheError> {
        Ok(Self {
            inner: Arc::new(Inner {
                compiled: CompiledExpression::compile(expression, ExpressionOf::Condition)?,
                written: Some(written.to_owned()),
            }),
        })
    }

    /// The JMESPath expression evaluated: as given to [`new`](Self::new),
    /// or what a `kubectl wait` form translates to.
    #[must_use]
    pub fn expression(&self) -> &str {
        self.inner.compiled.text()
    }

    /// Whether `self` and `other` evaluate the same expression.
    #[must_use]
    pub fn same_definition(&self, other: &Condition) -> bool {
        self.expression() == other.expression()
    }

    /// Evaluates the condition on one object, prepared as an
    /// [`IndexInput`] (which converts each part of the object for JMESPath
    /// at most once, for every index and condition evaluated on it).
    #[must_use]
    pub fn evaluate(&self, input: &IndexInput<'_>) -> Verdict {
        // The compiler rules out what makes the jmespath crate panic; this
        // is the guard should one be missed: one object never ends a wait.
        let result = catch_unwind(AssertUnwindSafe(|| self.inner.compiled.result(input)));
        let value = match result {
            Ok(Ok(value)) => value,
            Ok(Err(message)) => return Verdict::Failed { message },
            Err(_) => {
                return Verdict::Failed {
                    message: format!("evaluating '{}' panicked", self.expression()),
                };
            }
        };
        match &*value {
            Variable::Bool(true) => Verdict::Met,
            Variable::Bool(false) => Verdict::NotMet,
            Variable::Null => Verdict::Null,
            other => Verdict::NotBoolean {
                value: quoted(other),
            },
        }
    }

    /// [`evaluate`](Self::evaluate) on an object alone.
    #[must_use]
    pub fn evaluate_object(&self, object: &DynamicObject) -> Verdict {
        self.evaluate(&IndexInput::new(object))
    }
}

/// A value as a verdict quotes it: its JSON text, cut to
/// [`QUOTED_VALUE_CHARS`].
fn quoted(value: &Variable) -> String {
    let text = json_text(value).unwrap_or_else(|_| value.get_type().to_string());
    if text.chars().count() <= QUOTED_VALUE_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(QUOTED_VALUE_CHARS).collect();
    cut.push('…');
    cut
}

/// As it was written: the expression, or the `kubectl wait` form it was
/// translated from (`condition=Ready`), or `exists`.
impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.inner.written.as_deref().unwrap_or(self.expression()))
    }
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Condition");
        d.field("expression", &self.expression());
        if let Some(written) = &self.inner.written {
            d.field("written", written);
        }
        d.finish()
    }
}

/// Two conditions are equal when they evaluate the same expression.
impl PartialEq for Condition {
    fn eq(&self, other: &Self) -> bool {
        self.same_definition(other)
    }
}

impl Eq for Condition {}

/// What a [`Condition`] gave on one object (see the table there).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// The expression gave `true`: the condition holds.
    Met,
    /// It gave `false`.
    NotMet,
    /// It gave `null`: a field it reads is missing (`status.readyReplicas`
    /// before a controller wrote it), or it ordered values that are not
    /// numbers. Not met; no mistake.
    Null,
    /// It gave a value that is not a boolean: not met, and most likely a
    /// mistake in the expression (`status.phase` for `status.phase ==
    /// 'Running'`).
    NotBoolean {
        /// The value's JSON text (numbers in their one spelling), cut to 60
        /// characters.
        value: String,
    },
    /// The expression failed on this object (a function given a value of a
    /// type it does not take): not met, and worth saying.
    Failed {
        /// What went wrong.
        message: String,
    },
}

impl Verdict {
    /// Whether the condition holds.
    #[must_use]
    pub fn is_met(&self) -> bool {
        matches!(self, Verdict::Met)
    }

    /// Whether this says something is wrong with the condition on this
    /// object ([`NotBoolean`](Self::NotBoolean), [`Failed`](Self::Failed)),
    /// as opposed to an answer.
    #[must_use]
    pub fn is_mistake(&self) -> bool {
        matches!(self, Verdict::NotBoolean { .. } | Verdict::Failed { .. })
    }

    /// The verdict in one camelCase word, for JSON and tables: `met`,
    /// `notMet`, `null`, `notBoolean` or `failed`.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::NotMet => "notMet",
            Verdict::Null => "null",
            Verdict::NotBoolean { .. } => "notBoolean",
            Verdict::Failed { .. } => "failed",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Met => f.write_str("met"),
            Verdict::NotMet => f.write_str("not met"),
            Verdict::Null => f.write_str("not met (null: a field it reads is missing)"),
            Verdict::NotBoolean { value } => write!(f, "not a boolean: {value}"),
            Verdict::Failed { message } => write!(f, "failed: {message}"),
        }
    }
}

#[cfg(test)]
mod tests;
