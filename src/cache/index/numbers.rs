//! The one spelling of a number.
//!
//! JSON and JMESPath know one kind of number: `3`, `3.0`, `30e-1` and `3e0`
//! are the same value, and so are `0` and `-0`. `serde_json` keeps the
//! spelling's kind (an integer as `i64`/`u64`, anything with a fraction or
//! an exponent as `f64`) and the `jmespath` crate computes `abs`, `sum`,
//! `ceil`... in `f64`, so one value reaches the places where a number
//! becomes text (the result mapping and `to_string`) in several forms.
//! Both go through [`canonical`], so equal numbers get equal text.

use jmespath::Variable;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Number;

/// 2^63 and 2^64, exact in an `f64`: integral doubles in
/// `[-2^63, 2^64)` have an exact `i64` or `u64` counterpart.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

/// `number` in the form whose JSON text is its one spelling:
///
/// - an integer `serde_json` holds as `i64` or `u64` stays as it is, exact
///   (`9007199254740993`, which no `f64` holds);
/// - a double with no fractional part in `[-2^63, 2^64)` becomes that integer
///   (`3.0`, `1e3`, `-0.0` → `3`, `1000`, `0`);
/// - any other double stays a double, written as the shortest text that
///   reads back as the same double (`1.5`, `0.1`, `1e-7`, `2e+19`).
pub(super) fn canonical(number: &Number) -> Number {
    if number.is_i64() || number.is_u64() {
        return number.clone();
    }
    let Some(f) = number.as_f64() else {
        return number.clone();
    };
    // `-0.0 >= 0.0`, so negative zero becomes `0`. The casts are exact: `f`
    // is integral and inside the target type's range.
    if f.fract() == 0.0 && (0.0..TWO_64).contains(&f) {
        Number::from(f as u64)
    } else if f.fract() == 0.0 && (-TWO_63..0.0).contains(&f) {
        Number::from(f as i64)
    } else {
        // Rebuilt so that the text is ryu's shortest form even should
        // serde_json keep the original text (its arbitrary_precision).
        Number::from_f64(f).unwrap_or_else(|| number.clone())
    }
}

/// The text an index files `number` under.
pub(super) fn text(number: &Number) -> String {
    canonical(number).to_string()
}

/// The compact JSON text of `value` as the `jmespath` crate writes it for
/// `to_string`, but with every number in its one spelling.
pub(in crate::cache) fn json_text(value: &Variable) -> Result<String, serde_json::Error> {
    serde_json::to_string(&Canonical(value))
}

/// Serialises like `Variable`'s own `Serialize`, numbers made canonical.
struct Canonical<'a>(&'a Variable);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Variable::Number(n) => canonical(n).serialize(serializer),
            Variable::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Canonical(item))?;
                }
                seq.end()
            }
            Variable::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, item) in fields {
                    map.serialize_entry(key, &Canonical(item))?;
                }
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}
