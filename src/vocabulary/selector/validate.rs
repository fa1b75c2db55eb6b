//! The rules for label keys and values, after apimachinery's
//! `content.IsLabelKey`, `IsLabelValue` and `IsDNS1123Subdomain`.

const LABEL_NAME_MAX: usize = 63;
const DNS_SUBDOMAIN_MAX: usize = 253;
const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
                         and must start and end with an alphanumeric character";

/// Alphanumeric at both ends, alphanumerics, `-`, `_` and `.` inside; the
/// shape shared by label names and non-empty label values.
fn is_qualified_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    let edge_ok = |b: Option<&u8>| b.is_some_and(u8::is_ascii_alphanumeric);
    edge_ok(bytes.first())
        && edge_ok(bytes.last())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        let end_ok = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        bytes.first().is_some_and(end_ok)
            && bytes.last().is_some_and(end_ok)
            && bytes.iter().all(|b| end_ok(b) || *b == b'-')
    })
}

pub(super) fn check_label_key(key: &str) -> Result<(), String> {
    let mut problems = Vec::new();
    let name = match key.split_once('/') {
        None => key,
        Some((_, name)) if name.contains('/') => {
            return Err(format!(
                "a label key {NAME_RULE}, with an optional DNS subdomain prefix and a single '/' \
                 (e.g. 'example.com/MyName')"
            ));
        }
        Some((prefix, name)) => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > DNS_SUBDOMAIN_MAX {
                    problems.push(format!(
                        "prefix part must be no more than {DNS_SUBDOMAIN_MAX} characters"
                    ));
                }
                if !is_dns1123_subdomain(prefix) {
                    problems.push(
                        "prefix part must be a lowercase RFC 1123 subdomain: lowercase alphanumeric \
                         characters, '-' or '.', starting and ending with an alphanumeric character"
                            .to_owned(),
                    );
                }
            }
            name
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_owned());
    } else {
        if name.len() > LABEL_NAME_MAX {
            problems.push(format!(
                "name part must be no more than {LABEL_NAME_MAX} characters"
            ));
        }
        if !is_qualified_name(name) {
            problems.push(format!("name part {NAME_RULE}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

pub(super) fn check_label_value(value: &str) -> Result<(), String> {
    let mut problems = Vec::new();
    if value.len() > LABEL_NAME_MAX {
        problems.push(format!("must be no more than {LABEL_NAME_MAX} characters"));
    }
    if !value.is_empty() && !is_qualified_name(value) {
        problems.push(format!("a label value must be empty or {NAME_RULE}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}
