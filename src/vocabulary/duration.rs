//! Go-style durations (`30s`, `10m`, `1h30m`, `250ms`, `0`), as Kubernetes
//! writes them (`metav1.Duration`), for options and config files.
//!
//! The [layer docs](crate::vocabulary) say more.

use std::time::Duration;

/// The longest duration accepted: ten years.
const MAX: Duration = Duration::from_secs(10 * 365 * 86_400);

/// Parses a Go-style duration: `0`, or a sequence of decimal numbers with
/// units `ns`, `us`, `ms`, `s`, `m`, `h` (e.g. `1h30m`, `1.5s`). Negative and
/// longer than ten years are refused.
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::vocabulary::parse_duration;
/// assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
/// assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
/// assert!(parse_duration("10 minutes").is_err());
/// ```
///
/// # Errors
/// A message naming the text and what was expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "invalid duration {text:?}: expected e.g. \"30s\", \"10m\", \"1h30m\", \"500ms\" or \"0\""
        )
    };
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    // What kube-core's parser accepts, less what can make it panic: only
    // plain decimal numbers (no `inf`, `nan` or exponent), each followed by
    // a unit, and no number of more than 12 integer digits.
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    // Bounds the number of terms, whose sum could otherwise overflow.
    if text.len() > 64 {
        return Err(format!("duration {text:?} is too long"));
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number = &rest[..digits];
        if number.is_empty() || number.split('.').count() > 2 || number == "." {
            return Err(bad());
        }
        if number.split('.').next().is_some_and(|int| int.len() > 12) {
            return Err(format!("duration {text:?} is too long"));
        }
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        if !matches!(
            &rest[..unit],
            "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h"
        ) {
            return Err(bad());
        }
        rest = &rest[unit..];
    }
    let parsed: kube_core::Duration = text.parse().map_err(|_| bad())?;
    let parsed = Duration::from(parsed);
    if parsed > MAX {
        return Err(format!("duration {text:?} is too long"));
    }
    Ok(parsed)
}

/// `duration` as Go writes it (`10m0s` is written `600s`; both parse).
#[must_use]
pub fn format_duration(duration: Duration) -> String {
    if duration.is_zero() {
        "0".into()
    } else {
        kube_core::Duration::from(duration).to_string()
    }
}

/// Serde of a `Duration` as a Go-style string, for `#[serde(with)]`.
pub(crate) mod go {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_duration(*d))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_duration(&text).map_err(serde::de::Error::custom)
    }

    /// The JSON Schema of such a string.
    #[cfg(feature = "config")]
    pub(crate) fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$",
            "description": "A Go-style duration: `30s`, `10m`, `1h30m`, `500ms`, or `0`."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2h45m"), Ok(Duration::from_secs(9900)));
        assert_eq!(parse_duration("10us"), Ok(Duration::from_micros(10)));
        for bad in [
            "",
            "10",
            "s",
            "-1s",
            "+1s",
            "1e3s",
            "infh",
            "nanh",
            "1..2s",
            ".s",
            "1 s",
            "1d",
            "10 minutes",
            "99999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_duration("100000h").unwrap_err().contains("too long"));
        for d in [
            Duration::ZERO,
            Duration::from_millis(800),
            Duration::from_secs(600),
            Duration::from_secs(5400),
        ] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }
}
