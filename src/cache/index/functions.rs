//! The JMESPath functions an expression may call: the runtime that evaluates
//! them, and their signatures, so that a call that can never succeed is
//! rejected when the expression is compiled rather than on every object.
//!
//! The `jmespath` crate checks a call (name, number of arguments, argument
//! types) only when it evaluates it, and keeps the signatures private; the
//! table here restates them (the unit tests hold the two to agreement).

use std::sync::LazyLock;

use jmespath::functions::{
    ArgumentType, AvgFn, CustomFunction, Function, Signature as FnSignature, ToStringFn,
};
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, Runtime, SearchResult, Variable};

use super::numbers;
use crate::vocabulary::resource::bounded_edit_distance;

/// The runtime expressions are evaluated with: the crate's built-in
/// functions, except
///
/// - `avg` of an empty array is `null`, as the JMESPath specification says
///   (the crate divides by zero and fails);
/// - `to_string` spells numbers as index values do (``to_string(`3.0`)`` is
///   `"3"`), so that equal numbers give equal text there too;
///
/// and two string functions of JMESPath Community's specification,
/// `lower(string)` and `upper(string)`, so that a condition can compare
/// without regard to case, as `kubectl wait --for=condition=ready` does.
pub(super) static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    let mut runtime = Runtime::new();
    runtime.register_builtin_functions();
    runtime.register_function("avg", Box::new(AvgOfEmptyIsNull(AvgFn::new())));
    runtime.register_function("to_string", Box::new(CanonicalToString(ToStringFn::new())));
    runtime.register_function("lower", Box::new(string_function(str::to_lowercase)));
    runtime.register_function("upper", Box::new(string_function(str::to_uppercase)));
    runtime
});

/// A function of one string to a string, its argument checked as the
/// crate checks its own functions' arguments.
fn string_function(f: fn(&str) -> String) -> CustomFunction {
    CustomFunction::new(
        FnSignature::new(vec![ArgumentType::String], None),
        Box::new(move |args: &[Rcvar], _: &mut Context<'_>| {
            let text = args
                .first()
                .and_then(|arg| arg.as_string())
                .map_or_else(String::new, |s| f(s));
            Ok(Rcvar::new(Variable::String(text)))
        }),
    )
}

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

/// A type a function parameter accepts, as the crate's `ArgumentType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Type {
    Any,
    Null,
    String,
    Number,
    Boolean,
    Array,
    Object,
    Expref,
    /// An array of numbers.
    Numbers,
    /// An array of strings.
    Strings,
}

impl Type {
    fn accepts(self, value: &Variable) -> bool {
        let all = |each: fn(&Variable) -> bool| {
            value.as_array().is_some_and(|a| a.iter().all(|v| each(v)))
        };
        match self {
            Type::Any => true,
            Type::Null => value.is_null(),
            Type::String => value.is_string(),
            Type::Number => value.is_number(),
            Type::Boolean => value.is_boolean(),
            Type::Array => value.is_array(),
            Type::Object => value.is_object(),
            Type::Expref => value.is_expref(),
            Type::Numbers => all(Variable::is_number),
            Type::Strings => all(Variable::is_string),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Type::Any => "any",
            Type::Null => "null",
            Type::String => "string",
            Type::Number => "number",
            Type::Boolean => "boolean",
            Type::Array => "array",
            Type::Object => "object",
            Type::Expref => "expref",
            Type::Numbers => "array[number]",
            Type::Strings => "array[string]",
        }
    }
}

/// One parameter: the types it accepts (any one of them).
type Param = &'static [Type];

/// A built-in function's signature.
pub(super) struct Signature {
    pub(super) name: &'static str,
    params: &'static [Param],
    /// The type of any further arguments, for variadic functions.
    rest: Option<Param>,
}

const fn sig(name: &'static str, params: &'static [Param]) -> Signature {
    Signature {
        name,
        params,
        rest: None,
    }
}

const fn variadic(name: &'static str, params: &'static [Param], rest: Param) -> Signature {
    Signature {
        name,
        params,
        rest: Some(rest),
    }
}

use Type as T;

/// The functions of [`RUNTIME`], by name: the crate's built-in ones
/// (`jmespath::functions`) and `lower` and `upper`.
pub(super) const FUNCTIONS: &[Signature] = &[
    sig("abs", &[&[T::Number]]),
    sig("avg", &[&[T::Numbers]]),
    sig("ceil", &[&[T::Number]]),
    sig("contains", &[&[T::String, T::Array], &[T::Any]]),
    sig("ends_with", &[&[T::String], &[T::String]]),
    sig("floor", &[&[T::Number]]),
    sig("join", &[&[T::String], &[T::Strings]]),
    sig("keys", &[&[T::Object]]),
    sig("length", &[&[T::Array, T::Object, T::String]]),
    sig("lower", &[&[T::String]]),
    sig("map", &[&[T::Expref], &[T::Array]]),
    sig("max", &[&[T::Strings, T::Numbers]]),
    sig("max_by", &[&[T::Array], &[T::Expref]]),
    variadic("merge", &[&[T::Object]], &[T::Object]),
    sig("min", &[&[T::Strings, T::Numbers]]),
    sig("min_by", &[&[T::Array], &[T::Expref]]),
    variadic("not_null", &[&[T::Any]], &[T::Any]),
    sig("reverse", &[&[T::Array, T::String]]),
    sig("sort", &[&[T::Strings, T::Numbers]]),
    sig("sort_by", &[&[T::Array], &[T::Expref]]),
    sig("starts_with", &[&[T::String], &[T::String]]),
    sig("sum", &[&[T::Numbers]]),
    sig("to_array", &[&[T::Any]]),
    sig("to_number", &[&[T::Any]]),
    sig(
        "to_string",
        &[&[
            T::Object,
            T::Array,
            T::Boolean,
            T::Number,
            T::String,
            T::Null,
        ]],
    ),
    sig("type", &[&[T::Any]]),
    sig("upper", &[&[T::String]]),
    sig("values", &[&[T::Object]]),
];

/// What a call is known to give an argument before evaluation: a literal's
/// value, an expression reference, or nothing (it depends on the object).
pub(super) enum Known<'a> {
    Value(&'a Variable),
    Expref,
    Unknown,
}

/// Which part of a call an error is about.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Blame {
    /// The function's name (unknown function, wrong number of arguments).
    Name,
    /// The argument at this index (0-based).
    Argument(usize),
}

/// Checks a call of `name` with arguments known as far as `args` says.
///
/// # Errors
///
/// What is wrong and which part of the call to point at: an unknown
/// function, a wrong number of arguments, or an argument whose type the
/// function does not accept.
pub(super) fn check_call(name: &str, args: &[Known<'_>]) -> Result<(), (Blame, String)> {
    let Some(signature) = FUNCTIONS.iter().find(|s| s.name == name) else {
        let hint =
            closest(name).map_or_else(String::new, |near| format!(" (did you mean {near}()?)"));
        return Err((Blame::Name, format!("unknown function {name}(){hint}")));
    };
    let expected = signature.params.len();
    let arity_ok = match signature.rest {
        Some(_) => args.len() >= expected,
        None => args.len() == expected,
    };
    if !arity_ok {
        let at_least = if signature.rest.is_some() {
            "at least "
        } else {
            ""
        };
        let plural = if expected == 1 { "" } else { "s" };
        return Err((
            Blame::Name,
            format!(
                "{name}() takes {at_least}{expected} argument{plural}, not {}",
                args.len()
            ),
        ));
    }
    for (i, arg) in args.iter().enumerate() {
        let Some(param) = signature.params.get(i).copied().or(signature.rest) else {
            continue;
        };
        let given = match arg {
            Known::Value(value) if !param.iter().any(|t| t.accepts(value)) => {
                value.get_type().to_string()
            }
            Known::Expref if !param.iter().any(|t| matches!(t, T::Any | T::Expref)) => {
                "expref".to_owned()
            }
            _ => continue,
        };
        let wanted: Vec<&str> = param.iter().map(|t| t.name()).collect();
        return Err((
            Blame::Argument(i),
            format!(
                "{name}() argument {} must be {}, not {given}",
                i + 1,
                wanted.join("|")
            ),
        ));
    }
    Ok(())
}

/// The known function nearest to a misspelt name, if one is near enough
/// to be what was meant: at most two edits, and fewer than the name has
/// characters.
fn closest(name: &str) -> Option<&'static str> {
    let length = name.chars().count();
    FUNCTIONS
        .iter()
        .filter_map(|s| Some((bounded_edit_distance(name, s.name, 2)?, s.name)))
        .filter(|(distance, _)| *distance < length)
        .min()
        .map(|(_, near)| near)
}
