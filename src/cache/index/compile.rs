//! From an expression's text to a [`Plan`] for evaluating it: guarded
//! parsing (no panic and no stack overflow, whatever the text), the limits,
//! the checks of function calls, and the choice between reading a plain
//! field path directly and interpreting the expression.

use std::panic::catch_unwind;

use jmespath::ast::Ast;

use super::functions::{self, Blame, Known};
use super::needs::Needs;
use super::{MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LEN, field_path, panic_message};

/// Expressions with at most this many punctuation characters (outside quoted
/// text) are parsed on the caller's thread. Each nesting level of the parser
/// consumes at least one such character, so this bounds its recursion.
/// Longer ones are parsed on a helper thread with a stack sized for them.
const INLINE_PARSE_PUNCTUATION: usize = 32;

/// Stack reserved per punctuation character for the helper parse thread. A
/// debug build of the `jmespath` parser uses up to ~8 KiB per nesting level.
const PARSE_STACK_PER_LEVEL: usize = 16 * 1024;

/// Slice steps larger than this are clamped. The `jmespath` crate adds the
/// step to an `i32` index and overflows (a panic) for huge steps; no array in
/// a Kubernetes object (at most a few MB) has this many elements, so clamping
/// never changes a result.
const MAX_SLICE_STEP: i32 = 1 << 24;

/// How a compiled expression is evaluated.
pub(super) enum Plan {
    /// A plain field path, read straight from the object.
    Direct(Box<[String]>),
    /// A plain field path into a part of `metadata` the direct reader does
    /// not reproduce: that part is converted, then the path followed.
    Converted { path: Box<[String]>, needs: Needs },
    /// Anything else: the parts of the object it observes are converted,
    /// then the `jmespath` interpreter runs. The tree is at most
    /// [`MAX_EXPRESSION_DEPTH`] deep.
    Interpreted { ast: Ast, needs: Needs },
}

/// Why an expression does not compile.
pub(super) enum Failure {
    /// The parser rejected it; `offset` in bytes, as the parser counts.
    Syntax { offset: usize, message: String },
    /// It calls a function that does not exist, or one in a way that can
    /// never succeed; `offset` in bytes.
    Call { offset: usize, message: String },
    /// It exceeds a limit.
    TooComplex(String),
}

/// Where an error is: `line` from 0, `column` the characters before it on
/// its line, `offset` the characters before it in the whole expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    pub(super) line: usize,
    pub(super) column: usize,
    pub(super) offset: usize,
}

impl Position {
    /// The position of the byte offset `at` (as the parser gives it) in
    /// `expression`. The crate's own line and column count that many
    /// characters, which goes wrong after a non-ASCII character.
    pub(super) fn at(expression: &str, at: usize) -> Self {
        let before = expression.get(..at).unwrap_or(expression);
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        Self {
            line: before.matches('\n').count(),
            column: before[line_start..].chars().count(),
            offset: before.chars().count(),
        }
    }
}

/// Compiles an expression without any risk of a panic or a stack overflow,
/// and rewrites what would make evaluation panic.
pub(super) fn compile(expression: &str) -> Result<Plan, Failure> {
    if expression.len() > MAX_EXPRESSION_LEN {
        return Err(Failure::TooComplex(format!(
            "{} bytes long, the limit is {MAX_EXPRESSION_LEN}",
            expression.len()
        )));
    }
    let punctuation = punctuation_outside_quotes(expression);
    if punctuation <= INLINE_PARSE_PUNCTUATION {
        return parse_and_plan(expression);
    }
    // A long expression's tree is also dropped on the helper thread
    // (dropping recurses as deep as the tree): what comes back is a plan,
    // whose tree, if any, is at most MAX_EXPRESSION_DEPTH deep.
    let stack = (1 << 20) + punctuation * PARSE_STACK_PER_LEVEL;
    std::thread::scope(|scope| {
        let helper = std::thread::Builder::new()
            .name("jmespath-parse".to_owned())
            .stack_size(stack)
            .spawn_scoped(scope, || parse_and_plan(expression));
        match helper {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Err(Failure::TooComplex(
                    "the parser failed unexpectedly".to_owned(),
                ))
            }),
            Err(err) => Err(Failure::TooComplex(format!(
                "cannot start a thread to parse it: {err}"
            ))),
        }
    })
}

/// Counts punctuation characters outside quoted identifiers, raw strings and
/// JSON literals (escapes handled as the `jmespath` lexer does). Every token
/// that opens a nesting level in the parser is punctuation.
fn punctuation_outside_quotes(expression: &str) -> usize {
    let mut count = 0;
    let mut quote = None;
    let mut escaped = false;
    for c in expression.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            c if c.is_ascii_punctuation() => count += 1,
            _ => {}
        }
    }
    count
}

fn parse_and_plan(expression: &str) -> Result<Plan, Failure> {
    let parsed = catch_unwind(|| jmespath::parse(expression)).map_err(|panic| {
        Failure::TooComplex(format!("the parser panicked: {}", panic_message(&*panic)))
    })?;
    let mut ast = parsed.map_err(|err| Failure::Syntax {
        offset: err.offset,
        message: match err.reason {
            jmespath::ErrorReason::Parse(message) => message,
            other => other.to_string(),
        },
    })?;
    // A field path is read without recursion, however long.
    if let Some(path) = field_path::of(&ast) {
        return Ok(if field_path::is_direct(&path) {
            Plan::Direct(path.into_boxed_slice())
        } else {
            Plan::Converted {
                needs: Needs::of_path(&path),
                path: path.into_boxed_slice(),
            }
        });
    }
    let checked = check(&mut ast, expression);
    if checked.depth > MAX_EXPRESSION_DEPTH {
        return Err(Failure::TooComplex(format!(
            "nested {} levels deep, the limit is {MAX_EXPRESSION_DEPTH}",
            checked.depth
        )));
    }
    if let Some((offset, message)) = checked.call_error {
        return Err(Failure::Call { offset, message });
    }
    Ok(Plan::Interpreted {
        needs: Needs::of(&ast),
        ast,
    })
}

struct Checked {
    depth: usize,
    /// The leftmost call that can never succeed: where, and why.
    call_error: Option<(usize, String)>,
}

/// Walks the whole tree: measures its depth, clamps slice steps (see
/// [`MAX_SLICE_STEP`]) and checks every function call. Iterative, so any
/// depth is safe.
fn check(ast: &mut Ast, expression: &str) -> Checked {
    let mut checked = Checked {
        depth: 0,
        call_error: None,
    };
    let mut stack: Vec<(&mut Ast, usize)> = vec![(ast, 1)];
    while let Some((node, depth)) = stack.pop() {
        checked.depth = checked.depth.max(depth);
        let child = depth + 1;
        match node {
            Ast::Slice { step, .. } => *step = (*step).min(MAX_SLICE_STEP),
            Ast::Identity { .. } | Ast::Field { .. } | Ast::Index { .. } | Ast::Literal { .. } => {}
            Ast::Expref { ast: node, .. }
            | Ast::Flatten { node, .. }
            | Ast::Not { node, .. }
            | Ast::ObjectValues { node, .. } => stack.push((node, child)),
            Ast::Comparison { lhs, rhs, .. }
            | Ast::Projection { lhs, rhs, .. }
            | Ast::And { lhs, rhs, .. }
            | Ast::Or { lhs, rhs, .. }
            | Ast::Subexpr { lhs, rhs, .. } => {
                stack.push((lhs, child));
                stack.push((rhs, child));
            }
            Ast::Condition {
                predicate, then, ..
            } => {
                stack.push((predicate, child));
                stack.push((then, child));
            }
            Ast::Function {
                name, args, offset, ..
            } => {
                if let Err((at, message)) = check_call(expression, name, args, *offset)
                    && checked
                        .call_error
                        .as_ref()
                        .is_none_or(|(known, _)| at < *known)
                {
                    checked.call_error = Some((at, message));
                }
                stack.extend(args.iter_mut().map(|arg| (arg, child)));
            }
            Ast::MultiList { elements, .. } => {
                stack.extend(elements.iter_mut().map(|e| (e, child)))
            }
            Ast::MultiHash { elements, .. } => {
                stack.extend(elements.iter_mut().map(|kv| (&mut kv.value, child)));
            }
        }
    }
    checked
}

/// Checks one call, with what is known of its arguments before evaluation
/// (literals and `&expr`). `paren` is where the parser puts a call: at its
/// opening parenthesis. An error comes with the byte offset to report.
fn check_call(
    expression: &str,
    name: &str,
    args: &[Ast],
    paren: usize,
) -> Result<(), (usize, String)> {
    let known: Vec<Known<'_>> = args
        .iter()
        .map(|arg| match arg {
            Ast::Literal { value, .. } => Known::Value(value),
            Ast::Expref { .. } => Known::Expref,
            _ => Known::Unknown,
        })
        .collect();
    functions::check_call(name, &known).map_err(|(blame, message)| {
        let offset = match blame {
            Blame::Argument(i) => args.get(i).map_or(paren, offset_of),
            // The name ends where the parenthesis (after any blanks) starts.
            Blame::Name => {
                let before = expression.get(..paren).unwrap_or_default().trim_end();
                before.strip_suffix(name).map_or(paren, str::len)
            }
        };
        (offset, message)
    })
}

fn offset_of(ast: &Ast) -> usize {
    match ast {
        Ast::Comparison { offset, .. }
        | Ast::Condition { offset, .. }
        | Ast::Identity { offset }
        | Ast::Expref { offset, .. }
        | Ast::Flatten { offset, .. }
        | Ast::Function { offset, .. }
        | Ast::Field { offset, .. }
        | Ast::Index { offset, .. }
        | Ast::Literal { offset, .. }
        | Ast::MultiList { offset, .. }
        | Ast::MultiHash { offset, .. }
        | Ast::Not { offset, .. }
        | Ast::Projection { offset, .. }
        | Ast::ObjectValues { offset, .. }
        | Ast::And { offset, .. }
        | Ast::Or { offset, .. }
        | Ast::Slice { offset, .. }
        | Ast::Subexpr { offset, .. } => *offset,
    }
}
