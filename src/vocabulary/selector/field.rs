//! Field selectors: checked for syntax only, since which fields can be
//! selected depends on the resource and only the server knows.

use super::VocabularyError;
use super::column_at;

/// Checks a field selector's syntax as apimachinery's `fields.ParseSelector`
/// does, so that a mistake is reported when the selector is declared instead
/// of by the server on the first list.
///
/// Terms are separated by `,`; each is `field=value`, `field==value` or
/// `field!=value`; in a value, `\,`, `\=` and `\\` escape those characters.
/// Whether the field is selectable for a resource is known only to the server
/// and is not checked. Stricter than apimachinery in two ways, both of which
/// the server would reject anyway: the field name must not be empty nor
/// contain whitespace.
///
/// # Errors
///
/// [`VocabularyError::FieldSyntax`] naming the problem and its column.
///
/// ```
/// use kube_dynamic_informer::vocabulary::validate_field_selector;
///
/// assert!(validate_field_selector("metadata.name=web,status.phase!=Running").is_ok());
/// assert!(validate_field_selector("").is_ok());
/// let err = validate_field_selector("metadata.name").unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"field selector "metadata.name": expected '=', '==' or '!=' in term "metadata.name" at column 1"#
/// );
/// ```
pub fn validate_field_selector(input: &str) -> Result<(), VocabularyError> {
    let error = |offset: usize, reason: String| VocabularyError::FieldSyntax {
        input: input.to_owned(),
        offset,
        column: column_at(input, offset),
        reason,
    };
    for (start, term) in split_field_terms(input) {
        if term.is_empty() {
            continue;
        }
        let Some((op_at, op)) = term.char_indices().find_map(|(i, _)| {
            ["!=", "==", "="]
                .into_iter()
                .find(|op| term[i..].starts_with(op))
                .map(|op| (i, op))
        }) else {
            return Err(error(
                start,
                format!("expected '=', '==' or '!=' in term {term:?}"),
            ));
        };
        let field = &term[..op_at];
        if field.is_empty() {
            return Err(error(start, format!("missing field name before {op:?}")));
        }
        if let Some((i, _)) = field.char_indices().find(|(_, c)| c.is_whitespace()) {
            return Err(error(
                start + i,
                format!("field name {field:?} contains whitespace"),
            ));
        }
        let value_start = start + op_at + op.len();
        let mut chars = input[value_start..start + term.len()].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, '\\' | ',' | '=')) => {}
                    Some((_, other)) => {
                        return Err(error(
                            value_start + i,
                            format!(
                                "invalid escape sequence \"\\{other}\" (only \\\\, \\, and \\= are allowed)"
                            ),
                        ));
                    }
                    None => {
                        return Err(error(
                            value_start + i,
                            "value ends with a lone '\\'".to_owned(),
                        ));
                    }
                },
                '=' => {
                    return Err(error(
                        value_start + i,
                        "unescaped '=' in value (write it as '\\=')".to_owned(),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Splits a field selector on commas not escaped by a backslash, keeping the
/// byte offset of each term.
pub(crate) fn split_field_terms(input: &str) -> Vec<(usize, &str)> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in input.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push((start, &input[start..i]));
            start = i + 1;
        }
    }
    terms.push((start, &input[start..]));
    terms
}
