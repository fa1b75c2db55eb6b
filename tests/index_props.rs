//! JMESPath index values depend only on the object and the expression.
//!
//! Generated objects (nulls, numbers in every spelling, nested arrays and
//! objects, unicode and dotted keys) and generated expressions (multi-selects
//! after values that may be null, pipes, `@`, filters, functions, literals)
//! are evaluated three ways, which must agree:
//!
//! 1. on one shared `IndexInput`, as the store does, in two different orders
//!    (what an expression converts must not change what another gives);
//! 2. each on a fresh `IndexInput`;
//! 3. by the `jmespath` crate itself on the whole object, converted by the
//!    crate, its result mapped by the rules of the `index` module docs
//!    (restated here independently of the library's code).
//!
//! The unit tests in `src/index/tests.rs` hold the library's internals (the
//! partial conversion, the field-path reader) to the crate; this test holds
//! the public behaviour to the documented rules.

use std::sync::LazyLock;

use jmespath::functions::{AvgFn, Function, ToStringFn};
use jmespath::{Context, Rcvar, Runtime, SearchResult, Variable};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::{DynamicObject, TypeMeta};
use kube_dynamic_informer::cache::{CacheError, IndexFn, IndexInput};
use proptest::prelude::*;
use serde_json::{Number, Value};

// ---------------------------------------------------------------------------
// The documented rules
// ---------------------------------------------------------------------------

/// The text a number is filed under: an integral number from -2^63 to
/// 2^64 - 1 as its integer digits, any other in the shortest form that reads
/// back as the same double (as serde_json writes a double).
fn spelling(number: &Number) -> String {
    if let Some(i) = number.as_i64() {
        return i.to_string();
    }
    if let Some(u) = number.as_u64() {
        return u.to_string();
    }
    let f = number.as_f64().expect("a JSON number");
    if f.fract() == 0.0 && f >= -(2f64.powi(63)) && f < 2f64.powi(64) {
        // i128 holds both ends of the range; -0.0 becomes 0.
        (f as i128).to_string()
    } else {
        serde_json::to_string(&f).expect("a finite double")
    }
}

/// A JSON value with every number in its one spelling.
fn respelt(value: Value) -> Value {
    match value {
        Value::Number(n) => serde_json::from_str(&spelling(&n)).expect("a number"),
        Value::Array(items) => Value::Array(items.into_iter().map(respelt).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key, respelt(value)))
                .collect(),
        ),
        other => other,
    }
}

/// The crate's built-in functions, with the two differences the docs give:
/// `avg([])` is null, and `to_string` spells numbers as index values do.
static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    let mut runtime = Runtime::new();
    runtime.register_builtin_functions();
    runtime.register_function("avg", Box::new(avg));
    runtime.register_function("to_string", Box::new(to_string));
    runtime
});

fn avg(args: &[Rcvar], ctx: &mut Context<'_>) -> SearchResult {
    if args.len() == 1 && args[0].as_array().is_some_and(Vec::is_empty) {
        return Ok(Rcvar::new(Variable::Null));
    }
    AvgFn::new().evaluate(args, ctx)
}

fn to_string(args: &[Rcvar], ctx: &mut Context<'_>) -> SearchResult {
    let result = ToStringFn::new().evaluate(args, ctx)?;
    if args[0].is_string() {
        return Ok(result);
    }
    let json = respelt(serde_json::to_value(&*args[0]).expect("JSON"));
    Ok(Rcvar::new(Variable::String(json.to_string())))
}

/// Index values of a result: strings as they are, numbers spelt, booleans
/// as `true`/`false`, arrays flattened, nulls skipped, objects an error.
fn values(result: &Variable, out: &mut Vec<String>) -> Result<(), ()> {
    match result {
        Variable::Null => {}
        Variable::String(s) => out.push(s.clone()),
        Variable::Bool(b) => out.push(b.to_string()),
        Variable::Number(n) => out.push(spelling(n)),
        Variable::Array(items) => {
            for item in items {
                values(item, out)?;
            }
        }
        Variable::Object(_) | Variable::Expref(_) => return Err(()),
    }
    Ok(())
}

/// What the documented rules give: the crate on the whole object, mapped.
fn reference(expression: &str, object: &DynamicObject) -> Result<Vec<String>, ()> {
    let ast = jmespath::parse(expression).expect("the library parsed it");
    let data = Variable::from_serializable(object).map_err(|_| ())?;
    let result = jmespath::Expression::new(expression, ast, &RUNTIME)
        .search(data)
        .map_err(|_| ())?;
    let mut out = Vec::new();
    values(&result, &mut out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------
// Objects
// ---------------------------------------------------------------------------

const KEYS: &[&str] = &[
    "a", "b", "x", "spec", "kind", "metadata", "a.b", "é", "🎉", "a b", "",
];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_owned)
}

/// Numbers spelt every way JSON allows, several spellings per value.
fn number() -> impl Strategy<Value = Value> {
    let spelt = prop::sample::select(
        &[
            "3",
            "3.0",
            "30e-1",
            "3e0",
            "0.3E1",
            "1e3",
            "1000.0",
            "-0",
            "-0.0",
            "0",
            "0.0",
            "-3.0",
            "1.5",
            "15e-1",
            "0.1",
            "1e-7",
            "2e19",
            "20000000000000000000",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "9007199254740993",
            "9007199254740992.0",
            "1e300",
            "-1.5e-300",
        ][..],
    );
    prop_oneof![
        spelt.prop_map(|text| serde_json::from_str(text).expect("a number")),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1000i32..1000).prop_map(|i| Value::from(f64::from(i))),
        (-1e6f64..1e6).prop_map(Value::from),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        4 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => number(),
        2 => "[a-zé🎉 .]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            2 => prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = DynamicObject> {
    (
        prop::option::of(Just(TypeMeta {
            api_version: "v1".to_owned(),
            kind: "X".to_owned(),
        })),
        prop::option::of("[a-z]{1,3}"),
        prop::option::of(prop::collection::btree_map(key(), "[a-zé]{0,2}", 0..3)),
        prop::option::of(any::<i64>()),
        prop::collection::btree_map(key(), json(), 1..7),
    )
        .prop_map(
            |(types, namespace, labels, generation, data)| DynamicObject {
                types,
                metadata: ObjectMeta {
                    name: Some("n".to_owned()),
                    namespace,
                    labels,
                    generation,
                    ..ObjectMeta::default()
                },
                data: Value::Object(data.into_iter().collect()),
            },
        )
}

// ---------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------

/// A key as a JMESPath identifier, quoted when it is not a plain one.
fn identifier(key: &str) -> String {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        key.to_owned()
    } else {
        serde_json::to_string(key).expect("a string")
    }
}

/// The paths to every value of the object's data, down to three fields,
/// as JMESPath field paths; expressions are built mostly from these, so they
/// meet the object's nulls, numbers and nested values.
fn paths(object: &DynamicObject) -> Vec<String> {
    fn walk(value: &Value, prefix: &str, depth: usize, out: &mut Vec<String>) {
        let Some(fields) = value.as_object() else {
            return;
        };
        for (key, inner) in fields {
            let path = if prefix.is_empty() {
                identifier(key)
            } else {
                format!("{prefix}.{}", identifier(key))
            };
            if depth > 1 {
                walk(inner, &path, depth - 1, out);
            }
            out.push(path);
        }
    }
    let mut out = vec!["metadata".to_owned(), "metadata.labels".to_owned()];
    walk(&object.data, "", 3, &mut out);
    out
}

fn expression(paths: Vec<String>) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        6 => prop::sample::select(paths),
        2 => key().prop_map(|k| identifier(&k)),
        2 => Just("@".to_owned()),
        2 => prop::sample::select(&[
            "`3`",
            "`3.0`",
            "`-0.0`",
            "`1e3`",
            "`null`",
            "'x'",
            "`\"é\"`",
            "`[1, 2.5, \"a\"]`",
            "`[]`",
            "`{\"a\": 1.0}`",
            "`true`",
        ][..])
        .prop_map(str::to_owned),
    ];
    let unary = prop::sample::select(
        &[
            "length",
            "keys",
            "values",
            "type",
            "to_string",
            "to_number",
            "to_array",
            "abs",
            "ceil",
            "floor",
            "sum",
            "avg",
            "min",
            "max",
            "sort",
            "reverse",
            "not_null",
        ][..],
    );
    leaf.prop_recursive(4, 24, 3, move |inner| {
        let pair = (inner.clone(), inner.clone());
        prop_oneof![
            // Paths, pipes and multi-selects after values that may be null.
            3 => (inner.clone(), key()).prop_map(|(a, k)| format!("{a}.{}", identifier(&k))),
            2 => pair.clone().prop_map(|(a, b)| format!("{a} | {b}")),
            2 => pair.clone().prop_map(|(a, b)| format!("{a}.[{b}]")),
            2 => (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("{a}.{{k: {b}, l: {c}}}")),
            1 => pair.clone().prop_map(|(a, b)| format!("{a} | [{b}, @]")),
            1 => pair.clone().prop_map(|(a, b)| format!("[{a}, {b}]")),
            // Filters and projections.
            1 => pair.clone().prop_map(|(a, b)| format!("{a}[?{b}]")),
            1 => (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("{a}[?{b} == {c}]")),
            1 => pair.clone().prop_map(|(a, b)| format!("{a}[*].{b}")),
            1 => inner.clone().prop_map(|a| format!("{a}[]")),
            1 => inner.clone().prop_map(|a| format!("{a}.*")),
            1 => inner.clone().prop_map(|a| format!("{a}[0]")),
            1 => inner.clone().prop_map(|a| format!("{a}[-1:]")),
            // Logic and comparison.
            1 => pair.clone().prop_map(|(a, b)| format!("({a} || {b})")),
            1 => pair.clone().prop_map(|(a, b)| format!("({a} && {b})")),
            1 => inner.clone().prop_map(|a| format!("!{a}")),
            1 => pair.clone().prop_map(|(a, b)| format!("({a} < {b})")),
            // Functions.
            3 => (unary.clone(), inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
            1 => pair.clone().prop_map(|(a, b)| format!("contains({a}, {b})")),
            1 => pair.clone().prop_map(|(a, b)| format!("merge({a}, {b})")),
            1 => pair.clone().prop_map(|(a, b)| format!("not_null({a}, {b})")),
            1 => inner.clone().prop_map(|a| format!("join(',', {a})")),
            1 => pair.clone().prop_map(|(a, b)| format!("sort_by({a}, &{b})")),
            1 => pair.prop_map(|(a, b)| format!("map(&{a}, {b})")),
        ]
    })
}

/// Expressions that observe much of the object: run before the others on a
/// shared input, they leave large parts converted.
fn observer() -> impl Strategy<Value = String> {
    prop::sample::select(
        &[
            "keys(@)",
            "to_string(@)",
            "length(spec)",
            "spec",
            "a",
            "metadata",
            "values(@)[].x",
        ][..],
    )
    .prop_map(str::to_owned)
}

/// An expression, possibly inside something that tells a null from an
/// empty array or object, or a number's spelling from another's.
fn observed(paths: Vec<String>) -> impl Strategy<Value = String> {
    let wrapper = prop::sample::select(
        &[
            "{}",
            "{}",
            "type({})",
            "to_string({})",
            "length({})",
            "{} || 'dflt'",
            "not_null({}, 'n')",
            "[{}][0]",
            "{} == `null`",
        ][..],
    );
    (wrapper, expression(paths)).prop_map(|(wrapper, e)| wrapper.replace("{}", &e))
}

/// An object, expressions over it, and an order to evaluate them in.
fn cases() -> impl Strategy<Value = (DynamicObject, Vec<String>, Vec<usize>)> {
    object()
        .prop_flat_map(|object| {
            let paths = paths(&object);
            let expressions =
                prop::collection::vec(prop_oneof![4 => observed(paths), 1 => observer()], 1..6);
            (Just(object), expressions)
        })
        .prop_flat_map(|(object, expressions)| {
            let order = Just((0..expressions.len()).collect::<Vec<usize>>()).prop_shuffle();
            (Just(object), Just(expressions), order)
        })
}

// ---------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------

fn values_on(f: &IndexFn, input: &IndexInput<'_>) -> Result<Vec<String>, ()> {
    f.evaluate("p", input).map_err(|_| ())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn values_depend_only_on_object_and_expression(
        (object, expressions, order) in cases(),
    ) {
        // The functions, by position in `expressions`.
        let mut compiled = Vec::new();
        for expression in &expressions {
            compiled.push(match IndexFn::jmespath("p", expression) {
                Ok(f) => Some(f),
                Err(CacheError::ExpressionSyntax { .. }) => {
                    prop_assert!(jmespath::parse(expression).is_err(), "{}", expression);
                    None
                }
                // A call that fails whatever the object, or too deep: not
                // evaluated.
                Err(_) => None,
            });
        }
        let want: Vec<Option<Result<Vec<String>, ()>>> = expressions
            .iter()
            .zip(&compiled)
            .map(|(expression, f)| f.as_ref().map(|_| reference(expression, &object)))
            .collect();
        let runs = |order: &mut dyn Iterator<Item = usize>, input: &IndexInput<'_>| {
            order
                .filter_map(|i| Some((i, compiled[i].as_ref()?)))
                .map(|(i, f)| (i, values_on(f, input)))
                .collect::<Vec<_>>()
        };

        for (i, f) in compiled.iter().enumerate() {
            let Some(f) = f else { continue };
            let fresh = values_on(f, &IndexInput::new(&object));
            prop_assert_eq!(
                Some(&fresh), want[i].as_ref(), "{} on a fresh input", &expressions[i]
            );
        }
        for order in [(0..expressions.len()).collect(), order] {
            let shared = IndexInput::new(&object);
            for (i, got) in runs(&mut order.iter().copied(), &shared) {
                prop_assert_eq!(
                    Some(&got),
                    want[i].as_ref(),
                    "{} on an input shared by {:?} in the order {:?}",
                    &expressions[i],
                    &expressions,
                    &order
                );
            }
        }
    }
}
