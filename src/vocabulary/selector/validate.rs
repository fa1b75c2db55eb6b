//! The rules for label keys and values, after apimachinery's
//! `content.IsLabelKey`, `IsLabelValue` and `IsDNS1123Subdomain`.

const LABEL_NAME_MAX: usize = 63;
const DNS_SUBDOMAIN_MAX: usize = 253;
const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
                         and must start and end with an alphanumeric character";
const SUBDOMAIN_RULE: &str = "must be a lowercase RFC 1123 subdomain: lowercase alphanumeric \
                              characters, '-' or '.', starting and ending with an alphanumeric \
                              character";

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
    s.split('.').all(|label| is_dns_label(label, usize::MAX))
}

/// An RFC 1123 DNS label: lowercase letters, digits and `-`, at most
/// `max`, starting and ending with a letter or digit.
pub(crate) fn is_dns_label(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

pub(super) fn check_label_key(key: &str) -> Result<(), String> {
    let mut problems = Vec::new();
    // The same three rules for both parts of a key, each part with its own
    // limit and shape (`valid`, which `rule` says in words).
    let mut check = |part: &str, text: &str, max: usize, valid: bool, rule: &str| {
        if text.is_empty() {
            problems.push(format!("{part} part must be non-empty"));
            return;
        }
        if text.len() > max {
            problems.push(format!("{part} part must be no more than {max} characters"));
        }
        if !valid {
            problems.push(format!("{part} part {rule}"));
        }
    };
    let name = match key.split_once('/') {
        None => key,
        Some((_, name)) if name.contains('/') => {
            return Err(format!(
                "a label key {NAME_RULE}, with an optional DNS subdomain prefix and a single '/' \
                 (e.g. 'example.com/MyName')"
            ));
        }
        Some((prefix, name)) => {
            let valid = is_dns1123_subdomain(prefix);
            check("prefix", prefix, DNS_SUBDOMAIN_MAX, valid, SUBDOMAIN_RULE);
            name
        }
    };
    let valid = is_qualified_name(name);
    check("name", name, LABEL_NAME_MAX, valid, NAME_RULE);
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
