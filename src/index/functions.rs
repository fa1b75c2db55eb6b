//! The JMESPath functions an expression may call: the runtime that evaluates
//! them.

use std::sync::LazyLock;

use jmespath::functions::{AvgFn, Function, ToStringFn};
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, Runtime, SearchResult, Variable};

use super::numbers;

/// The runtime expressions are evaluated with: the crate's built-in
/// functions, except
///
/// - `avg` of an empty array is `null`, as the JMESPath specification says
///   (the crate divides by zero and fails);
/// - `to_string` spells numbers as index values do (``to_string(`3.0`)`` is
///   `"3"`), so that equal numbers give equal text there too.
pub(super) static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    let mut runtime = Runtime::new();
    runtime.register_builtin_functions();
    runtime.register_function("avg", Box::new(AvgOfEmptyIsNull(AvgFn::new())));
    runtime.register_function("to_string", Box::new(CanonicalToString(ToStringFn::new())));
    runtime
});

struct AvgOfEmptyIsNull(AvgFn);

impl Function for AvgOfEmptyIsNull {
    fn evaluate(&self, args: &[Rcvar], ctx: &mut Context<'_>) -> SearchResult {
        match args {
            [array] if array.as_array().is_some_and(Vec::is_empty) => {
                Ok(Rcvar::new(Variable::Null))
            }
            _ => self.0.evaluate(args, ctx),
        }
    }
}

struct CanonicalToString(ToStringFn);

impl Function for CanonicalToString {
    fn evaluate(&self, args: &[Rcvar], ctx: &mut Context<'_>) -> SearchResult {
        match args {
            // Everything but a string or an expref is written as JSON; the
            // built-in function returns a string as it is and rejects the
            // rest (an expref, a wrong number of arguments).
            [value] if !value.is_string() && !value.is_expref() => numbers::json_text(value)
                .map(|text| Rcvar::new(Variable::String(text)))
                .map_err(|err| {
                    JmespathError::from_ctx(ctx, ErrorReason::Parse(format!("to_string: {err}")))
                }),
            _ => self.0.evaluate(args, ctx),
        }
    }
}
