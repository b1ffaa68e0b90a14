"""Questions about a repository of real code: the standard library's own source, as a dict.

The context is ``{relative path: source text}`` (``"email/header.py": "..."``), taken from the
Python that runs the generator, package by package in a seeded order until the task's length is
reached (of a package that would overshoot, the files that fit); ``meta`` records the real size.
A question needs one step of reading code, found with :mod:`ast`:

- ``default``: the default value of a parameter, where the default is the name of a constant (of
  the same file, of the class body, or of another file of the repository, imported by name or
  read as ``module.NAME``): the answer is the constant's value, so the name has to be followed to
  its definition;
- ``compare``: the value of the one module-level constant a function compares something with
  (again a name to follow);
- ``base``: the class that a class inherits from directly;
- ``params``: how many parameters a function declares (only functions with five or more);
- ``line``: the line of a file on which a function's ``def`` stands.

Every function and class is named with its file, and with its class for a method; names bound
more than once in a file, in a class body or in the function are never asked about, so each
question has one answer. For the kinds with a number or a constant's value for an answer, every
value found is as likely as any other, and 0, 1 and -1 come only when there is nothing else, so
no value is a good guess. Score: ``exact`` (numbers as numbers).

Splits: the standard library is cut in two. ``dev`` reads ``email``, ``http``, ``json``,
``logging``, ``xml``, ``xmlrpc``, ``urllib``, ``html``, ``wsgiref``, ``re``, ``collections``,
``ctypes``, ``dbm``, ``sqlite3`` and ``curses``; ``test`` reads ``asyncio``, ``concurrent``,
``multiprocessing``, ``unittest``, ``importlib``, ``zoneinfo`` and ``tomllib``. The top-level
modules (``shlex.py``, ``heapq.py``, …) go to one split or the other by a hash of their name. Each
split words its questions its own way. Tests and the modules that Linux distributions split off or
patch (``tkinter``, ``idlelib``, ``lib2to3``, ``distutils``, ``ensurepip``, ``site``,
``sysconfig``, …) are left out, so that a given CPython version gives the same tasks on any install. The
source is the Python Software Foundation's, under the PSF License; ``meta`` records the version.
"""

from __future__ import annotations

import ast
import builtins
import os
import platform
import random
import re
import sysconfig
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from .tasks import Task, TaskRef, family

__all__ = ["KINDS", "PACKAGES", "stdlib_files", "make"]

KINDS = ("default", "compare", "base", "params", "line")

PACKAGES = {
    "dev": (
        "email", "http", "json", "logging", "xml", "xmlrpc", "urllib", "html", "wsgiref", "re",
        "collections", "ctypes", "dbm", "sqlite3", "curses",
    ),
    "test": ("asyncio", "concurrent", "multiprocessing", "unittest", "importlib", "zoneinfo", "tomllib"),
}  # fmt: skip

# Top-level modules that distributions move to other packages, patch, or that hold no real code.
_LEFT_OUT = {"site", "sysconfig", "pydoc", "turtle", "this", "antigravity", "__hello__", "_sysconfigdata"}
_SKIP_DIRS = {"test", "tests", "idle_test", "__pycache__"}


def _side(module: str) -> str:
    """The split a top-level module belongs to (a hash, so that the cut never moves)."""
    return ("dev", "test")[zlib.crc32(module.encode()) % 2]


@cache
def stdlib_files(split: str) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """The split's half of the standard library: ``(unit, ((path, source), ...))`` for every
    package and top-level module, in name order."""
    root = sysconfig.get_paths()["stdlib"]
    units: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.endswith(".py") and os.path.isfile(path):
            module = name[:-3]
            if module in _LEFT_OUT or module.startswith("_sysconfigdata") or _side(module) != split:
                continue
            source = _read(path)
            if source:
                units.append((module, ((name, source),)))
        elif name in PACKAGES[split] and os.path.isdir(path):
            files = _package_files(path, root)
            if files:
                units.append((name, files))
    return tuple(units)


def _package_files(path: str, root: str) -> tuple[tuple[str, str], ...]:
    """A package's ``.py`` files, ``(path from root, source)``, folders and files in name order."""
    files = []
    for folder, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for file in sorted(names):
            if file.endswith(".py"):
                source = _read(os.path.join(folder, file))
                if source:
                    rel = os.path.relpath(os.path.join(folder, file), root)
                    files.append((rel.replace(os.sep, "/"), source))
    return tuple(files)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return ""


def take_files(rng: random.Random, split: str, chars: int) -> dict[str, str]:
    """Whole packages and modules, in a seeded order, until about ``chars`` characters; of a unit
    that would overshoot, the files that still fit."""
    units = list(stdlib_files(split))
    rng.shuffle(units)
    files: dict[str, str] = {}
    total = 0
    for _, unit in units:
        size = sum(len(s) for _, s in unit)
        if total + size <= chars:
            files.update(unit)
            total += size
            continue
        for path, source in unit:
            if total + len(source) <= chars:
                files[path] = source
                total += len(source)
        if total >= 0.97 * chars:
            break
    if not files:  # shorter than any file: the smallest one
        path, source = min((f for _, u in units for f in u), key=lambda f: len(f[1]))
        files[path] = source
    return files


# -- what a file defines ------------------------------------------------------------------------


Value = int | float | str


@dataclass(frozen=True)
class Function:
    qualname: str  # "f" or "Class.method"
    lineno: int  # of the ``def`` line
    params: int  # every parameter, ``self``, ``*args`` and ``**kwargs`` included
    defaults: tuple[tuple[str, str], ...]  # (parameter, name) where the default is a name or mod.name
    compared: frozenset[str]  # names (or mod.name) it compares with, that it does not bind itself
    class_constants: tuple[tuple[str, Value], ...]  # a method's class: literals bound there once
    class_bindings: frozenset[str]  # a method's class: every name its body binds


@dataclass(frozen=True)
class Class:
    name: str
    base: str  # the one base's bare name, or ""


@dataclass(frozen=True)
class Module:
    constants: dict[str, Value]  # module-level names bound once, to a literal
    imported: dict[str, tuple[str, str]]  # a name imported once -> (dotted module, its name there)
    modules: dict[str, str]  # a name bound once by ``import a`` or ``import a.b as c`` -> the module
    functions: tuple[Function, ...]
    classes: tuple[Class, ...]


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b, ast.LShift: lambda a, b: a << b}  # fmt: skip


def _literal(node: ast.AST) -> Value | None:
    """The value of a literal number (or of integer arithmetic on literals) or of a short string."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal(node.operand)
        return -inner if isinstance(inner, (int, float)) else None
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _literal(node.left), _literal(node.right)
        if (
            isinstance(a, int)
            and isinstance(b, int)
            and 0 <= b < 64
            and not (b == 0 and isinstance(node.op, ast.FloorDiv))
        ):
            value = _OPS[type(node.op)](a, b)
            return value if abs(value) < 10**12 else None
        return None
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return None
    value = node.value
    if isinstance(value, (int, float)):
        return value if abs(value) < 10**12 else None
    if isinstance(value, str) and 0 < len(value) <= 40 and value.isprintable():
        if value.strip("\"'`*. ") == value and any(c.isalnum() for c in value):
            return value
    return None


def _bindings(body: list[ast.stmt], counts: dict[str, int]) -> None:
    """Count the names that the statements bind in their own scope (not inside functions,
    classes, lambdas or comprehensions)."""

    def bind(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(child.name)
                continue
            if isinstance(child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                bind(child.id)
            elif isinstance(child, ast.alias):
                bind(child.asname or child.name.split(".")[0])
            elif isinstance(child, ast.ExceptHandler) and child.name:
                bind(child.name)
            elif isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
                bind(child.target.id)
            visit(child)

    visit(ast.Module(body=body, type_ignores=[]))


def _constants(body: list[ast.stmt], counts: dict[str, int]) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, _literal(stmt.value)
            if value is not None and counts.get(name) == 1 and not _self_named(name, value):
                out[name] = value
    return out


def _self_named(name: str, value: Value) -> bool:
    """A string that spells its own name (``ROUND_UP = 'ROUND_UP'``) would give the answer away."""
    if not isinstance(value, str):
        return False
    a, b = (re.sub(r"[^a-z0-9]", "", x.lower()) for x in (name, value))
    return bool(a and b) and (a in b or b in a)


def _params(args: ast.arguments) -> int:
    return (
        len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs) + bool(args.vararg) + bool(args.kwarg)
    )


def _function(qualname: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: tuple) -> Function:
    args = fn.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    defaults = tuple((a.arg, n) for a, d in pairs if (n := _name(d)))
    local = {a.arg for a in ast.walk(args) if isinstance(a, ast.arg)}
    compared: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            local.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            local.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fn:
            local.add(node.name)
        elif isinstance(node, ast.alias):
            local.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.Compare):
            compared.update(n for x in [node.left, *node.comparators] if (n := _name(x)))
    outer = frozenset(n for n in compared if n.split(".")[0] not in local)
    return Function(qualname, fn.lineno, _params(args), defaults, outer, *cls)


def _name(node: ast.AST) -> str:
    """``NAME`` or ``module.NAME`` as written, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


@cache
def _analyse(source: str, path: str) -> Module | None:
    """What one file defines, kept as plain data (its syntax tree is dropped)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    counts: dict[str, int] = {}
    _bindings(tree.body, counts)
    for node in ast.walk(tree):  # a function that declares a name global may rebind it
        if isinstance(node, ast.Global):
            for name in node.names:
                counts[name] = counts.get(name, 0) + 2
    constants = _constants(tree.body, counts)
    imported, modules = _imports(tree.body, path, counts)
    functions, classes = _definitions(tree.body, counts)
    names = Counter(f.qualname for f in functions)
    class_names = Counter(c.name for c in classes)
    return Module(
        constants,
        imported,
        modules,
        tuple(f for f in functions if names[f.qualname] == 1),
        tuple(c for c in classes if class_names[c.name] == 1),
    )


def _imports(
    body: list[ast.stmt], path: str, counts: dict[str, int]
) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """Names bound once by ``from m import x`` (to ``(m, x)``) and by ``import m`` (to ``m``)."""
    imported: dict[str, tuple[str, str]] = {}
    modules: dict[str, str] = {}
    for stmt in body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if (alias.asname or "." not in alias.name) and counts.get(alias.asname or alias.name) == 1:
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(stmt, ast.ImportFrom):
            target = _resolve(path, stmt.module, stmt.level)
            for alias in stmt.names:
                name = alias.asname or alias.name
                if target and alias.name != "*" and counts.get(name) == 1:
                    imported[name] = (target, alias.name)
    return imported, modules


def _definitions(body: list[ast.stmt], counts: dict[str, int]) -> tuple[list[Function], list[Class]]:
    """The module's functions and classes, and the methods of its classes as ``Class.method``."""
    functions: list[Function] = []
    classes: list[Class] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(_function(stmt.name, stmt, ((), frozenset())))
        elif isinstance(stmt, ast.ClassDef):
            only = stmt.bases[0] if len(stmt.bases) == 1 and not stmt.keywords else None
            base = _name(only).rpartition(".")[2] if only is not None else ""
            classes.append(Class(stmt.name, base if counts.get(stmt.name) == 1 else ""))
            in_class: dict[str, int] = {}
            _bindings(stmt.body, in_class)
            cls = (tuple(_constants(stmt.body, in_class).items()), frozenset(in_class))
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions.append(_function(f"{stmt.name}.{item.name}", item, cls))
    return functions, classes


def _resolve(path: str, module: str | None, level: int) -> str:
    """The dotted name of the module that ``from <level dots><module> import`` names in ``path``."""
    if level == 0:
        return module or ""
    parts = path[:-3].split("/")[:-1]  # the package the file is in
    if not parts or len(parts) < level - 1:
        return ""
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _file_of(dotted: str, files: dict[str, str]) -> str | None:
    path = dotted.replace(".", "/")
    for candidate in (f"{path}.py", f"{path}/__init__.py"):
        if candidate in files:
            return candidate
    return None


def _constant(name: str, path: str, module: Module, files: dict[str, str]) -> tuple[Value, str] | None:
    """The value of a module-level name of ``path`` and the file that defines it, when it is a
    literal constant there or a literal constant imported from another file of the repository."""
    if name in module.constants:
        return module.constants[name], path
    first, _, original = name.partition(".")
    if original:  # module.NAME: the module imported by ``import`` or ``from package import module``
        dotted = module.modules.get(first) or ".".join(module.imported.get(first, ("", "")))
        other = _file_of(dotted, files) if dotted.strip(".") else None
    elif name in module.imported:
        dotted, original = module.imported[name]
        other = _file_of(dotted, files)
    else:
        return None
    if other:
        if other != path:
            defining = _analyse(files[other], other)
            if defining and original in defining.constants:
                return defining.constants[original], other
    return None


# -- questions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    kind: str
    path: str
    subject: str  # "Class.method", "function" or "Class"
    answer: Value
    detail: dict


def _candidates(kind: str, path: str, files: dict[str, str]) -> list[Candidate]:
    module = _analyse(files[path], path)
    if module is None:
        return []
    return _CANDIDATES.get(kind, _line_numbers)(kind, path, module, files)


def _default_values(kind: str, path: str, module: Module, files: dict[str, str]) -> list[Candidate]:
    out: list[Candidate] = []
    for f in module.functions:
        for parameter, name in f.defaults:
            if name in f.class_bindings:  # a method's default is read in its class body
                value = dict(f.class_constants).get(name)
                found, hop = ((value, path) if value is not None else None), "class body"
            else:
                found = _constant(name, path, module, files)
                hop = "same file" if found and found[1] == path else "other file"
            if found:
                detail = {"parameter": parameter, "name": name, "hop": hop, "defined_in": found[1]}
                out.append(Candidate(kind, path, f.qualname, found[0], detail))
    return out


def _compared(kind: str, path: str, module: Module, files: dict[str, str]) -> list[Candidate]:
    out: list[Candidate] = []
    for f in module.functions:
        used = {n: c for n in f.compared if (c := _constant(n, path, module, files))}
        if len(used) == 1:
            (name, (value, where)), *_ = used.items()
            hop = "same file" if where == path else "other file"
            detail = {"name": name, "hop": hop, "defined_in": where}
            out.append(Candidate(kind, path, f.qualname, value, detail))
    return out


def _base_classes(kind: str, path: str, module: Module, files: dict[str, str]) -> list[Candidate]:
    out: list[Candidate] = []
    for cls in module.classes:
        name = cls.base
        if not name or hasattr(builtins, name) or name in _GUESSABLE_BASES:
            continue
        if name.lower() in cls.name.lower():
            continue
        out.append(Candidate(kind, path, cls.name, name, {}))
    return out


def _many_params(kind: str, path: str, module: Module, files: dict[str, str]) -> list[Candidate]:
    return [Candidate(kind, path, f.qualname, f.params, {}) for f in module.functions if f.params >= 5]


def _line_numbers(kind: str, path: str, module: Module, files: dict[str, str]) -> list[Candidate]:
    return [Candidate(kind, path, f.qualname, f.lineno, {}) for f in module.functions]


_CANDIDATES: dict[str, Callable[[str, str, Module, dict[str, str]], list[Candidate]]] = {
    "default": _default_values,
    "compare": _compared,
    "base": _base_classes,
    "params": _many_params,
}

_GUESSABLE_BASES = {"ABC", "Protocol", "Generic", "NamedTuple", "TypedDict", "Enum", "IntEnum", "Flag",
                    "IntFlag", "StrEnum", "Structure", "Union", "Error"}  # fmt: skip

_ASK = {
    "dev": {
        "default": "In `{path}`, what is the default value of the parameter `{parameter}` of `{subject}`? "
        "Give the value itself, not a name.",
        "compare": "The function `{subject}` in `{path}` compares something with a module-level constant. "
        "What is the value of that constant?",
        "base": "Which class does the class `{subject}` (defined in `{path}`) inherit from directly? "
        "Give the base class's name only.",
        "params": "How many parameters does `{subject}` in `{path}` declare? Count every one, `self` "
        "or `cls` and `*args`/`**kwargs` included.",
        "line": "On which line of `{path}` is `{subject}` defined (the line with its `def`)?",
    },
    "test": {
        "default": "If `{subject}` from the file `{path}` is called without its `{parameter}` argument, "
        "which value does `{parameter}` take? Answer with the literal value.",
        "compare": "Look at `{subject}` in the repository file `{path}`: it tests a value against one "
        "constant defined at module level. Which value does that constant hold?",
        "base": "`{subject}` is a class in `{path}`. Name its direct parent class (the bare name, "
        "without a module prefix).",
        "params": "Counting all of them (including `self`/`cls`, `*args` and `**kwargs`), how many "
        "parameters are in the signature of `{subject}` in `{path}`?",
        "line": "What is the 1-based line number of the `def` line of `{subject}` in the file `{path}`?",
    },
}


@family("repo", "one step of reading a repository of real code (the standard library's packages) as a dict")
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    files = take_files(rng, ref.split, ref.chars)
    paths = sorted(files)
    first = KINDS[ref.index % len(KINDS)]
    order = [first] + [k for k in KINDS if k != first]
    for kind in order:
        pool = [c for p in paths for c in _candidates(kind, p, files)]
        if kind in ("default", "compare"):  # a hop out of the file or into the class, half the time
            far = [c for c in pool if c.detail["hop"] != "same file"]
            if far and rng.random() < 0.5:
                pool = far
        if pool:
            break
    if kind in ("default", "compare", "params"):
        # Answers a guess would often hit (0, 1, -1) only where there is nothing else, and every
        # value as likely as any other, so that the commonest value is no good guess either.
        pool = [c for c in pool if c.answer not in (-1, 0, 1)] or pool
        value = rng.choice(sorted({repr(c.answer) for c in pool}))
        pool = [c for c in pool if repr(c.answer) == value]
    choice = rng.choice(pool)
    question = _ASK[ref.split][choice.kind].format(
        path=choice.path, subject=choice.subject, parameter=choice.detail.get("parameter", "")
    )
    return Task(
        id=ref.id,
        family="repo",
        context=files,
        question=question,
        answer=choice.answer,
        scorer="exact",
        split=ref.split,
        length=ref.length,
        meta={
            "question_type": choice.kind,
            "path": choice.path,
            "subject": choice.subject,
            **choice.detail,
            "files": len(files),
            "chars": sum(len(s) for s in files.values()),
            "python": platform.python_version(),
        },
        ref=ref,
    )
