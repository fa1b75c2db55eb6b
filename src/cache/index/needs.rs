//! Which parts of an object an expression can observe, worked out when it
//! is compiled, so that evaluation converts only those (see
//! [`IndexInput`](super::IndexInput)).

use std::collections::BTreeMap;

use jmespath::ast::Ast;

/// The parts of the input an expression can observe, as a tree of field
/// names. A `full` node is observed as a whole (passed to a function,
/// compared, projected, returned...); of any other node only the listed
/// fields are read, and whether it is null, so only those need converting.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Needs {
    pub(super) full: bool,
    pub(super) fields: BTreeMap<String, Needs>,
}

/// What an expression node evaluates to, as far as the analysis can tell:
/// the part of the input at a path (not yet observed), or some other value
/// (derived from parts already marked as observed, or from literals).
#[derive(Clone)]
enum Part {
    At(Vec<String>),
    Other,
}

impl Needs {
    /// What `ast` observes. Its tree must be at most
    /// [`MAX_EXPRESSION_DEPTH`](super::MAX_EXPRESSION_DEPTH) deep: the
    /// analysis recurses.
    pub(super) fn of(ast: &Ast) -> Self {
        let mut needs = Needs::default();
        let result = needs.analyze(ast, &Part::At(Vec::new()));
        needs.observe(result);
        needs
    }

    /// What a plain field path observes: the value at its end.
    pub(super) fn of_path(path: &[String]) -> Self {
        let mut needs = Needs::default();
        needs.observe(Part::At(path.to_vec()));
        needs
    }

    fn observe(&mut self, part: Part) {
        if let Part::At(path) = part
            && let Some(node) = self.node(&path)
        {
            node.full = true;
            node.fields.clear();
        }
    }

    /// Makes `part` converted, at least an empty object when it is one,
    /// without observing it whole: a multi-select tests whether its value is
    /// null even when it reads no field of it (``x.{a: `1`}``).
    fn touch(&mut self, part: &Part) {
        if let Part::At(path) = part {
            self.node(path);
        }
    }

    /// The node for `path`, added if missing; `None` when a node on the way
    /// is observed whole already (and so everything below it).
    fn node(&mut self, path: &[String]) -> Option<&mut Needs> {
        let mut node = self;
        for field in path {
            if node.full {
                return None;
            }
            node = node.fields.entry(field.clone()).or_default();
        }
        Some(node)
    }

    /// Records what evaluating `ast` against `current` observes and returns
    /// what it evaluates to. Field access on a part gives a deeper part;
    /// everything else observes its operands whole. Sub-expressions evaluated
    /// against `Part::Other` (projection right-hand sides, `&expr`) can only
    /// read values already observed whole, so they add nothing. The tree is
    /// at most MAX_EXPRESSION_DEPTH deep, so recursion is fine.
    ///
    /// A multi-select (`x.[a, b]`, `x.{k: a}`) also tests whether `x` is null,
    /// without observing more of it than its fields `a` and `b`: it touches
    /// `x`, and the conversion keeps the answer true, since a part it
    /// converts only in part is always an object (see
    /// `IndexInput::json_part`).
    fn analyze(&mut self, ast: &Ast, current: &Part) -> Part {
        match ast {
            Ast::Field { name, .. } => match current {
                Part::At(path) => {
                    let mut path = path.clone();
                    path.push(name.clone());
                    Part::At(path)
                }
                Part::Other => Part::Other,
            },
            Ast::Identity { .. } => current.clone(),
            Ast::Subexpr { lhs, rhs, .. } => {
                let left = self.analyze(lhs, current);
                self.analyze(rhs, &left)
            }
            Ast::Literal { .. } | Ast::Expref { .. } => Part::Other,
            Ast::Index { .. } | Ast::Slice { .. } => {
                self.observe(current.clone());
                Part::Other
            }
            Ast::Projection { lhs: node, .. }
            | Ast::Flatten { node, .. }
            | Ast::ObjectValues { node, .. }
            | Ast::Not { node, .. } => self.observe_all([&**node], current),
            Ast::Comparison { lhs, rhs, .. }
            | Ast::And { lhs, rhs, .. }
            | Ast::Or { lhs, rhs, .. }
            | Ast::Condition {
                predicate: lhs,
                then: rhs,
                ..
            } => self.observe_all([&**lhs, &**rhs], current),
            Ast::Function { args, .. } => self.observe_all(args, current),
            Ast::MultiList { elements, .. } => {
                self.touch(current);
                self.observe_all(elements, current)
            }
            Ast::MultiHash { elements, .. } => {
                self.touch(current);
                self.observe_all(elements.iter().map(|element| &element.value), current)
            }
        }
    }

    /// Observes whole what each of `operands` evaluates to against
    /// `current`; what they make up together is `Part::Other`.
    fn observe_all<'a>(
        &mut self,
        operands: impl IntoIterator<Item = &'a Ast>,
        current: &Part,
    ) -> Part {
        for operand in operands {
            let part = self.analyze(operand, current);
            self.observe(part);
        }
        Part::Other
    }
}
