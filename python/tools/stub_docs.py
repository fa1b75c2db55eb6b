"""Copies the extension's docstrings into its type stubs (``_native.pyi``),
so that editors show them: the Rust doc comments are the one source.

    target/python-venv/bin/python python/tools/stub_docs.py          # rewrite the stubs
    target/python-venv/bin/python python/tools/stub_docs.py --check  # exit 1 if they differ

Run with the package installed (``scripts/python-env``). ``tests/test_api.py``
checks that the committed stubs carry the docstrings of the built module.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import kube_dynamic_informer._native as native

STUBS = Path(__file__).resolve().parents[1] / "kube_dynamic_informer" / "_native.pyi"


def runtime_doc(owner: object, name: str) -> str | None:
    value = inspect.getattr_static(owner, name, None)
    if value is None:
        return None
    if isinstance(value, (staticmethod, classmethod)):
        # The wrapper's own __doc__ is the builtin's ("staticmethod(function)
        # -> method ..."); the method's is on what it wraps.
        value = value.__func__
    doc = inspect.getdoc(value)
    # PyO3 puts the text signature first in a method's __doc__ when there is
    # no docstring; a text that is only a signature is no docstring.
    if not doc or doc.startswith(f"{name}("):
        return None
    return doc


def quoted(doc: str, indent: str) -> list[str]:
    lines = doc.replace('"""', '\\"\\"\\"').splitlines()
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}'] + [f"{indent}{line}" if line else "" for line in lines[1:]] + [f'{indent}"""']


def with_docs(text: str) -> str:
    tree = ast.parse(text)
    lines = text.splitlines()
    edits: list[tuple[int, int, list[str]]] = []  # (first, last) line indexes, replacement

    def visit(body: list[ast.stmt], owner: object) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                cls = getattr(owner, node.name, None)
                if cls is None:
                    continue
                doc = inspect.getdoc(cls)
                first = node.body[0]
                if (
                    doc
                    and isinstance(first, ast.Expr)
                    and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)
                ):
                    indent = " " * (node.col_offset + 4)
                    edits.append((first.lineno - 1, (first.end_lineno or first.lineno) - 1, quoted(doc, indent)))
                visit(node.body, cls)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("__") and node.name != "__init__":
                    continue
                doc = runtime_doc(owner if node.name != "__init__" else owner, node.name)
                if node.name == "__init__":
                    doc = None  # the class docstring says it
                if not doc:
                    continue
                first = node.body[0]
                header_end = node.body[0].lineno - 1
                indent = " " * (node.col_offset + 4)
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    if isinstance(first.value.value, str):
                        # A docstring already: replace it (and a `...` after it).
                        last = (node.body[-1].end_lineno or first.lineno) - 1
                        edits.append((first.lineno - 1, last, quoted(doc, indent)))
                        continue
                    # `def f(...) -> T: ...` on the header's last line.
                    line = lines[header_end]
                    head = line[: line.rstrip().rfind("...")].rstrip()
                    edits.append((header_end, header_end, [head] + quoted(doc, indent)))

    visit(tree.body, native)
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first : last + 1] = replacement
    return "\n".join(lines) + "\n"


def main() -> int:
    current = STUBS.read_text()
    wanted = with_docs(current)
    if "--check" in sys.argv[1:]:
        if wanted != current:
            print(f"{STUBS} lacks the extension's docstrings: run python/tools/stub_docs.py", file=sys.stderr)
            return 1
        return 0
    STUBS.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
