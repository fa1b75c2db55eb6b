//! The label selector grammar: lexer and parser, after apimachinery's
//! `labels.Lexer` and `labels.Parser`.

use super::column_at;
use super::requirement::check_value;
use super::validate::check_label_key;
use super::{Operator, Requirement};
use crate::vocabulary::VocabularyError;

/// The requirements of a label selector string, validated, in the order
/// written.
pub(super) fn parse(input: &str) -> Result<Vec<Requirement>, VocabularyError> {
    let tokens = lex(input);
    Parser {
        input,
        tokens: &tokens,
        pos: 0,
    }
    .parse()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// Keys and values; `in` and `notin` are identifiers too, and act as
    /// operators only in operator position (as in apimachinery, where
    /// `in in (in)` is a valid selector).
    Ident,
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    OpenParen,
    CloseParen,
    Comma,
    End,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Every token ends at an ASCII byte or at the end of the input, so slicing
/// `input[start..end]` is always on a character boundary.
///
/// apimachinery's lexer treats a NUL byte as the end of the input and
/// silently ignores what follows; here NUL is an ordinary character, which
/// then fails key or value validation.
fn lex(input: &str) -> Vec<Token> {
    let bytes = input.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        let start = i;
        let Some(&b) = bytes.get(i) else {
            tokens.push(Token {
                tok: Tok::End,
                start,
                end: start,
            });
            return tokens;
        };
        let next = bytes.get(i + 1).copied();
        let (tok, len) = match (b, next) {
            (b'=', Some(b'=')) => (Tok::DoubleEquals, 2),
            (b'!', Some(b'=')) => (Tok::NotEquals, 2),
            (b'=', _) => (Tok::Equals, 1),
            (b'!', _) => (Tok::Not, 1),
            (b'>', _) => (Tok::Greater, 1),
            (b'<', _) => (Tok::Less, 1),
            (b'(', _) => (Tok::OpenParen, 1),
            (b')', _) => (Tok::CloseParen, 1),
            (b',', _) => (Tok::Comma, 1),
            _ => {
                let len = bytes[i..]
                    .iter()
                    .position(|&b| is_special(b) || is_space(b))
                    .unwrap_or(bytes.len() - i);
                (Tok::Ident, len)
            }
        };
        i += len;
        tokens.push(Token { tok, start, end: i });
    }
}

struct Parser<'a> {
    input: &'a str,
    /// Always ends with a `Tok::End` token, which is never consumed past.
    tokens: &'a [Token],
    pos: usize,
}

pub(super) const EXPECT_KEY: &str = "a label key or '!'";
pub(super) const EXPECT_KEY_AFTER_COMMA: &str = "a label key or '!' after ','";
pub(super) const EXPECT_KEY_AFTER_NOT: &str = "a label key after '!'";
pub(super) const EXPECT_END: &str = "',' or the end of the selector";
pub(super) const EXPECT_OPERATOR: &str = "an operator ('=', '==', '!=', 'in', 'notin', '>' or '<')";
pub(super) const EXPECT_OPEN: &str = "'('";
pub(super) const EXPECT_LIST_START: &str = "a value, ',' or ')'";
pub(super) const EXPECT_LIST_NEXT: &str = "')' or ','";
pub(super) const EXPECT_VALUE: &str = "a value";

/// Longest token text quoted in an error, so that a huge input does not make
/// a huge message.
pub(super) const MAX_FOUND_LEN: usize = 64;

impl<'a> Parser<'a> {
    fn peek(&self) -> Token {
        self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let token = self.peek();
        if token.tok != Tok::End {
            self.pos += 1;
        }
        token
    }

    fn text(&self, token: Token) -> &'a str {
        &self.input[token.start..token.end]
    }

    fn is_keyword(&self, token: Token, keyword: &str) -> bool {
        token.tok == Tok::Ident && self.text(token) == keyword
    }

    fn syntax(&self, token: Token, expected: &'static str) -> VocabularyError {
        let found = (token.tok != Tok::End).then(|| {
            let text = self.text(token);
            match text.char_indices().nth(MAX_FOUND_LEN) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text.to_owned(),
            }
        });
        VocabularyError::SelectorSyntax {
            input: self.input.to_owned(),
            offset: token.start,
            column: column_at(self.input, token.start),
            expected,
            found,
        }
    }

    fn parse(mut self) -> Result<Vec<Requirement>, VocabularyError> {
        let mut requirements = Vec::new();
        if self.peek().tok == Tok::End {
            return Ok(requirements);
        }
        loop {
            requirements.push(self.requirement()?);
            let token = self.next();
            match token.tok {
                Tok::End => return Ok(requirements),
                Tok::Comma => {
                    let after = self.peek();
                    if !matches!(after.tok, Tok::Ident | Tok::Not) {
                        return Err(self.syntax(after, EXPECT_KEY_AFTER_COMMA));
                    }
                }
                _ => return Err(self.syntax(token, EXPECT_END)),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, VocabularyError> {
        let mut token = self.next();
        let negated = token.tok == Tok::Not;
        if negated {
            token = self.next();
            if token.tok != Tok::Ident {
                return Err(self.syntax(token, EXPECT_KEY_AFTER_NOT));
            }
        } else if token.tok != Tok::Ident {
            return Err(self.syntax(token, EXPECT_KEY));
        }
        let key_token = token;
        let key = self.text(key_token);
        if let Err(reason) = check_label_key(key) {
            return Err(VocabularyError::InvalidKey {
                input: self.input.to_owned(),
                key: key.to_owned(),
                offset: key_token.start,
                column: column_at(self.input, key_token.start),
                reason,
            });
        }
        // `!key` takes no operator; whatever follows it must end the
        // requirement, which the caller checks.
        if negated || matches!(self.peek().tok, Tok::End | Tok::Comma) {
            let operator = if negated {
                Operator::DoesNotExist
            } else {
                Operator::Exists
            };
            return Ok(Requirement::new_unchecked(
                key.to_owned(),
                operator,
                Vec::new(),
            ));
        }

        let op_token = self.next();
        let operator = match op_token.tok {
            Tok::Equals | Tok::DoubleEquals => Operator::Equals,
            Tok::NotEquals => Operator::NotEquals,
            Tok::Greater => Operator::GreaterThan,
            Tok::Less => Operator::LessThan,
            Tok::Ident if self.is_keyword(op_token, "in") => Operator::In,
            Tok::Ident if self.is_keyword(op_token, "notin") => Operator::NotIn,
            _ => return Err(self.syntax(op_token, EXPECT_OPERATOR)),
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        for &(value, offset) in &values {
            if let Err(reason) = check_value(operator, value) {
                return Err(VocabularyError::InvalidValue {
                    input: self.input.to_owned(),
                    key: key.to_owned(),
                    value: value.to_owned(),
                    offset,
                    column: column_at(self.input, offset),
                    reason,
                });
            }
        }
        let values = values.into_iter().map(|(v, _)| v.to_owned()).collect();
        Ok(Requirement::new_unchecked(key.to_owned(), operator, values))
    }

    /// The value of `=`, `==`, `!=`, `>` and `<`, with its offset; a missing
    /// value (`key=` followed by `,` or the end) is the empty string.
    fn exact_value(&mut self) -> Result<(&'a str, usize), VocabularyError> {
        let token = self.peek();
        match token.tok {
            Tok::End | Tok::Comma => Ok(("", token.start)),
            Tok::Ident => {
                self.next();
                Ok((self.text(token), token.start))
            }
            _ => Err(self.syntax(token, EXPECT_VALUE)),
        }
    }

    /// `( v1, v2, ... )`. As in apimachinery, empty entries are the empty
    /// string: `()`, `(,a)`, `(a,)` and `(a,,b)` all contain `""`.
    fn value_set(&mut self) -> Result<Vec<(&'a str, usize)>, VocabularyError> {
        let open = self.next();
        if open.tok != Tok::OpenParen {
            return Err(self.syntax(open, EXPECT_OPEN));
        }
        let mut values = Vec::new();
        let mut expect_value = true;
        loop {
            let token = self.next();
            match token.tok {
                Tok::CloseParen | Tok::Comma => {
                    if expect_value {
                        values.push(("", token.start));
                    }
                    if token.tok == Tok::CloseParen {
                        return Ok(values);
                    }
                    expect_value = true;
                }
                Tok::Ident if expect_value => {
                    values.push((self.text(token), token.start));
                    expect_value = false;
                }
                _ if expect_value => return Err(self.syntax(token, EXPECT_LIST_START)),
                _ => return Err(self.syntax(token, EXPECT_LIST_NEXT)),
            }
        }
    }
}
