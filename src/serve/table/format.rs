//! How the API server writes what goes into a cell: ages as
//! `duration.HumanDuration` words them, values as Go prints them (`%v`),
//! maps and lists as Go's `encoding/json` writes them.

use std::fmt::Write as _;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

/// The age of `timestamp` at `now` as the API server's printers give it
/// (`translateTimestampSince`): `<unknown>` without a timestamp.
pub(super) fn age(timestamp: Option<&Value>, now: Timestamp) -> String {
    match timestamp.and_then(Value::as_str).map(parse_time) {
        Some(Time::At(at)) => human_duration(now.duration_since(at)),
        _ => "<unknown>".to_owned(),
    }
}

/// A timestamp as `metav1.Time` reads one from text.
#[derive(Debug, PartialEq)]
pub(super) enum Time {
    /// A time (not the zero time).
    At(Timestamp),
    /// Empty, `null` or Go's zero time: no time at all.
    Zero,
    /// Not RFC 3339.
    Invalid,
}

/// `text` read as RFC 3339, as `metav1.Time.UnmarshalQueryParameter` does.
pub(super) fn parse_time(text: &str) -> Time {
    if text.is_empty() || text == "null" {
        return Time::Zero;
    }
    match text.parse::<Timestamp>() {
        // Go's zero time, 0001-01-01T00:00:00Z, reads as no time.
        Ok(at) if at.as_second() == ZERO_TIME_SECONDS && at.subsec_nanosecond() == 0 => Time::Zero,
        Ok(at) => Time::At(at),
        Err(_) => Time::Invalid,
    }
}

/// 0001-01-01T00:00:00Z in seconds since the Unix epoch.
const ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// `duration.HumanDuration` of apimachinery: about two or three
/// significant figures (`45s`, `5m30s`, `3h10m`, `12d`, `2y30d`).
pub(super) fn human_duration(d: SignedDuration) -> String {
    let seconds = d.as_secs();
    // Up to two seconds in the future is taken for clock skew.
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            days => format!("{}y{days}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// A creation timestamp as the API server's default table writes it:
/// RFC 3339 in UTC, whole seconds (Go's zero time when there is none).
pub(super) fn created_at(timestamp: Option<&Value>) -> String {
    let at = match timestamp.and_then(Value::as_str).map(parse_time) {
        Some(Time::At(at)) => at,
        _ => Timestamp::from_second(ZERO_TIME_SECONDS).unwrap_or(Timestamp::UNIX_EPOCH),
    };
    let whole = Timestamp::from_second(at.as_second()).unwrap_or(at);
    whole.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `value` as Go's `fmt.Print` writes what a JSONPath found (a CRD's
/// `string` columns): strings as they are, numbers as `%v` writes them,
/// lists and maps as JSON. `None` for `null`, which has no text.
pub(super) fn text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => go_float(f),
            (None, None, None) => n.to_string(),
        }),
        Value::Array(_) | Value::Object(_) => {
            let mut out = String::new();
            go_json(value, &mut out);
            Some(out)
        }
    }
}

/// A float as Go's `%v` writes it: the shortest digits that read back,
/// with an exponent below 1e-4 and from 1e6 (`1.5`, `100000`, `1e+06`,
/// `1.2345675e+06`, `1e-05`).
pub(super) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    let (negative, digits, exponent) = shortest_digits(f);
    let sign = if negative { "-" } else { "" };
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{sign}{first}{point}{rest}e{exponent_sign}{:02}",
            exponent.unsigned_abs()
        );
    }
    // Plain: the digits with the point placed.
    let point = exponent + 1;
    let mut out = String::from(sign);
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
        out.push_str(&digits);
    } else {
        let point = point as usize;
        if digits.len() <= point {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point - digits.len()));
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
    out
}

/// The sign, the shortest decimal digits that read back as `f`, and the
/// exponent of the first digit (`1.5` → `("15", 0)`, `0.001` → `("1", -3)`).
fn shortest_digits(f: f64) -> (bool, String, i32) {
    // Rust's `{:e}` writes the shortest round-trip digits: `1.5e0`, `-1e-5`.
    let written = format!("{f:e}");
    let (negative, written) = match written.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, written.as_str()),
    };
    let (mantissa, exponent) = written.split_once('e').unwrap_or((written, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (negative, digits, exponent.parse().unwrap_or(0))
}

/// `value` as Go's `json.Marshal` writes it: compact, map keys sorted,
/// `<`, `>` and `&` escaped.
fn go_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (None, Some(u), _) => out.push_str(&u.to_string()),
            (None, None, Some(f)) => out.push_str(&go_json_float(f)),
            (None, None, None) => out.push_str(&n.to_string()),
        },
        Value::String(s) => go_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(key, out);
                out.push(':');
                go_json(item, out);
            }
            out.push('}');
        }
    }
}

/// A float as `encoding/json` writes it: plain digits from 1e-6 up to
/// 1e21, an exponent beyond (`1e+21`, `1e-7`).
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (negative, digits, exponent) = shortest_digits(f);
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let sign = if negative { "-" } else { "" };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{sign}{first}{point}{rest}e{exponent_sign}{}",
            exponent.unsigned_abs()
        );
    }
    // Rust writes the shortest digits without an exponent, as Go's 'f'.
    format!("{f}")
}

fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A `number` cell: an integral value as an integer, as Go writes a
/// `float64` that has no fraction.
pub(super) fn number_cell(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        // Exact: below 2^53 every integral float is an i64.
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_read_as_the_api_server_words_them() {
        let words = |seconds: i64| human_duration(SignedDuration::from_secs(seconds));
        assert_eq!(words(-5), "<invalid>");
        assert_eq!(words(-1), "0s");
        assert_eq!(words(0), "0s");
        assert_eq!(words(119), "119s");
        assert_eq!(words(120), "2m");
        assert_eq!(words(5 * 60 + 30), "5m30s");
        assert_eq!(words(10 * 60 + 30), "10m");
        assert_eq!(words(179 * 60), "179m");
        assert_eq!(words(3 * 3600 + 10 * 60), "3h10m");
        assert_eq!(words(5 * 3600), "5h");
        assert_eq!(words(47 * 3600), "47h");
        assert_eq!(words(3 * 86400 + 4 * 3600), "3d4h");
        assert_eq!(words(7 * 86400), "7d");
        assert_eq!(words(400 * 86400), "400d");
        assert_eq!(words(6 * 365 * 86400 + 341 * 86400), "6y341d");
        assert_eq!(words(9 * 365 * 86400 + 30 * 86400), "9y");
    }

    #[test]
    fn ages_and_creation_times_read_the_timestamp() {
        let now: Timestamp = "2024-05-01T12:00:00Z".parse().unwrap();
        assert_eq!(age(Some(&json!("2024-05-01T11:55:00Z")), now), "5m");
        assert_eq!(age(Some(&json!("2024-05-01T11:59:59.5Z")), now), "0s");
        assert_eq!(age(None, now), "<unknown>");
        assert_eq!(age(Some(&json!("soon")), now), "<unknown>");
        assert_eq!(
            created_at(Some(&json!("2024-05-01T13:55:00.25+02:00"))),
            "2024-05-01T11:55:00Z"
        );
        assert_eq!(created_at(None), "0001-01-01T00:00:00Z");
        assert_eq!(parse_time(""), Time::Zero);
        assert_eq!(parse_time("0001-01-01T00:00:00Z"), Time::Zero);
        assert_eq!(parse_time("2020-01-01"), Time::Invalid);
    }

    #[test]
    fn values_print_as_go_prints_them() {
        assert_eq!(text(&json!("x")).as_deref(), Some("x"));
        assert_eq!(text(&json!(3)).as_deref(), Some("3"));
        assert_eq!(text(&json!(true)).as_deref(), Some("true"));
        assert_eq!(text(&json!(null)), None);
        assert_eq!(text(&json!(1.5)).as_deref(), Some("1.5"));
        assert_eq!(text(&json!(1e23)).as_deref(), Some("1e+23"));
        assert_eq!(text(&json!(1234567.5)).as_deref(), Some("1.2345675e+06"));
        assert_eq!(text(&json!(0.00001)).as_deref(), Some("1e-05"));
        assert_eq!(text(&json!(0.0001)).as_deref(), Some("0.0001"));
        assert_eq!(text(&json!(100000.0)).as_deref(), Some("100000"));
        assert_eq!(text(&json!(-2.5)).as_deref(), Some("-2.5"));
        assert_eq!(
            text(&json!([1.5, { "b": "<x>", "a": 2 }])).as_deref(),
            Some(r#"[1.5,{"a":2,"b":"\u003cx\u003e"}]"#)
        );
        assert_eq!(go_json_float(1e21), "1e+21");
        assert_eq!(go_json_float(1e-7), "1e-7");
        assert_eq!(go_json_float(1e20), "100000000000000000000");
    }

    #[test]
    fn number_cells_drop_a_fraction_of_zero() {
        assert_eq!(number_cell(2.0), json!(2));
        assert_eq!(number_cell(1.5), json!(1.5));
        assert_eq!(number_cell(1e300), json!(1e300));
    }
}
