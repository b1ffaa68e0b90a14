"""Questions about a package lockfile: a ``poetry.lock`` file as one string (``dev``) or an npm
``package-lock.json`` as a nested dict (``test``).

What a notebook holds when someone audits a project's resolved dependencies: every package with
the version that was resolved, what it requires, and whether it is only for development. Package
names that extend another's stand beside each other (``pytest`` and ``pytest-cov``); in ``test``
some packages are installed twice, a nested copy at another version under the package that needs
it. Packages are added until the text (or the indented JSON) is about the length asked for. Kinds
of question:

- ``version``: the version resolved for one package (the top-level copy in ``test``);
- ``dependents``: how many packages require one package directly;
- ``count``: how many packages of one group (``dev``) or development-only packages (``test``) meet
  a condition;
- ``most``: the package with the most direct requirements, among one group (``dev``) or among the
  packages of one license that are not development-only (``test``) (a clear leader).

Every answer is computed from the packages the generator wrote. Score: ``exact`` (numbers as
numbers, names and versions without case).

Splits: ``dev`` is a Poetry 1.x lock file of a Python service (``[[package]]`` tables with
``name``, ``version``, ``category`` of ``main`` or ``dev``, ``python-versions``, ``files`` hashes,
``[package.dependencies]`` with some requirements as inline tables with markers, ``[metadata]``);
``test`` is a ``package-lock.json`` v3 of a web app (``packages`` keyed by ``node_modules/`` paths
with ``version``, ``resolved``, ``integrity``, ``license``, ``dev``, ``dependencies``, nested
``node_modules/a/node_modules/b`` copies): other containers, fields, names and wording.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("version", "dependents", "count", "most")

_DEV_NAMES = (
    "requests", "requests-toolbelt", "urllib3", "certifi", "idna", "charset-normalizer", "pydantic",
    "pydantic-core", "pydantic-settings", "typing-extensions", "typing-inspect", "annotated-types", "fastapi",
    "starlette", "uvicorn", "h11", "httpx", "httpcore", "anyio", "sniffio", "sqlalchemy", "alembic", "mako",
    "markupsafe", "jinja2", "click", "click-plugins", "greenlet", "psycopg", "psycopg-binary", "redis",
    "celery", "kombu", "billiard", "vine", "amqp", "python-dateutil", "six", "pytz", "tzdata", "orjson",
    "structlog", "pyyaml", "packaging", "attrs", "cattrs", "boto3", "botocore", "s3transfer", "jmespath",
    "cryptography", "cffi", "pycparser", "pyjwt", "passlib", "bcrypt", "tenacity", "rich", "pygments",
    "markdown-it-py", "mdurl", "pytest", "pytest-cov", "pytest-asyncio", "pytest-mock", "pytest-xdist",
    "coverage", "execnet", "iniconfig", "pluggy", "mypy", "mypy-extensions", "ruff", "black", "pathspec",
    "platformdirs", "pre-commit", "identify", "nodeenv", "virtualenv", "filelock", "distlib", "cfgv",
    "faker", "freezegun", "respx", "types-requests", "types-pyyaml", "types-python-dateutil", "mkdocs",
    "mkdocs-material", "mkdocs-material-extensions", "ghp-import", "watchdog", "babel", "paginate",
)  # fmt: skip
_DEV_TOOLS = {
    "pytest", "pytest-cov", "pytest-asyncio", "pytest-mock", "pytest-xdist", "coverage", "execnet",
    "iniconfig", "pluggy", "mypy", "mypy-extensions", "ruff", "black", "pathspec", "pre-commit", "identify",
    "nodeenv", "virtualenv", "filelock", "distlib", "cfgv", "faker", "freezegun", "respx", "types-requests",
    "types-pyyaml", "types-python-dateutil", "mkdocs", "mkdocs-material", "mkdocs-material-extensions",
    "ghp-import", "watchdog", "babel", "paginate",
}  # fmt: skip
_TEST_NAMES = (
    "react", "react-dom", "react-router", "react-router-dom", "scheduler", "loose-envify", "js-tokens",
    "@tanstack/react-query", "@tanstack/query-core", "axios", "follow-redirects", "form-data",
    "proxy-from-env", "asynckit", "combined-stream", "delayed-stream", "mime-types", "mime-db", "zustand",
    "use-sync-external-store", "clsx", "date-fns", "zod", "immer", "lodash", "lodash.debounce",
    "lodash.merge", "classnames", "nanoid", "postcss", "postcss-value-parser", "picocolors", "source-map-js",
    "tailwindcss", "autoprefixer", "browserslist", "caniuse-lite", "electron-to-chromium", "node-releases",
    "update-browserslist-db", "escalade", "vite", "esbuild", "rollup", "fsevents", "typescript", "eslint",
    "eslint-plugin-react", "eslint-plugin-react-hooks", "@eslint/js", "globals", "chalk", "ansi-styles",
    "supports-color", "has-flag", "debug", "ms", "semver", "minimatch", "brace-expansion", "balanced-match",
    "glob", "vitest", "@vitest/expect", "@vitest/runner", "@testing-library/react", "@testing-library/dom",
    "@testing-library/jest-dom", "jsdom", "whatwg-url", "tr46", "webidl-conversions", "prettier",
    "@types/react", "@types/react-dom", "@types/node", "csstype", "@types/prop-types", "undici-types",
)  # fmt: skip
_TEST_DEV = {
    "tailwindcss", "autoprefixer", "vite", "esbuild", "rollup", "fsevents", "typescript", "eslint",
    "eslint-plugin-react", "eslint-plugin-react-hooks", "@eslint/js", "globals", "chalk", "ansi-styles",
    "supports-color", "has-flag", "minimatch", "brace-expansion", "balanced-match", "glob", "vitest",
    "@vitest/expect", "@vitest/runner", "@testing-library/react", "@testing-library/dom",
    "@testing-library/jest-dom", "jsdom", "whatwg-url", "tr46", "webidl-conversions", "prettier",
    "@types/react", "@types/react-dom", "@types/node", "csstype", "@types/prop-types", "undici-types",
    "postcss", "postcss-value-parser", "picocolors", "source-map-js", "browserslist", "caniuse-lite",
    "electron-to-chromium", "node-releases", "update-browserslist-db", "escalade",
}  # fmt: skip
_LICENSES = ("MIT", "MIT", "MIT", "ISC", "Apache-2.0", "BSD-3-Clause", "BSD-2-Clause")
_PYTHONS = (">=3.7", ">=3.8", ">=3.8", ">=3.9", ">=3.10", ">=3.7,<4.0", "*")


@dataclass
class Package:
    name: str
    version: str
    dev: bool
    requires: dict[str, str]  # name -> version range
    license: str = "MIT"
    python: str = ">=3.8"
    files: int = 1
    nested: dict[str, str] = field(default_factory=dict)  # (test) name -> version of its own copy
    marker: dict[str, str] = field(default_factory=dict)  # (dev) name -> environment marker


def _version(rng: random.Random) -> str:
    return f"{rng.choice((0, 1, 1, 2, 2, 3, 4, 5, 7, 18))}.{rng.randint(0, 40)}.{rng.randint(0, 12)}"


def _packages(split: str, seed: str, n: int) -> list[Package]:
    rng = random.Random(f"{seed}/{n}")
    pool = list(_DEV_NAMES if split == "dev" else _TEST_NAMES)
    dev_set = _DEV_TOOLS if split == "dev" else _TEST_DEV
    # more packages than the names: big lock files hold more, with a suffix (plugins of a family)
    names = pool[:]
    suffixes = (
        ("-utils", "-core", "-compat", "-plugin", "-types")
        if split == "dev"
        else ("-utils", "-lite", "-compat", "-es")
    )
    k = 0
    while len(names) < n:
        cycle = k // len(pool)
        again = str(cycle // len(suffixes) + 1) if cycle >= len(suffixes) else ""
        names.append(f"{pool[k % len(pool)]}{suffixes[cycle % len(suffixes)]}{again}")
        k += 1
    chosen = sorted(rng.sample(names, n) if n < len(names) else names[:n])
    packages = []
    for name in chosen:
        base = name.split("-")[0] if name not in pool else name
        dev = (name if name in pool else base) in dev_set or (name not in pool and rng.random() < 0.4)
        packages.append(
            Package(
                name, _version(rng), dev, {}, rng.choice(_LICENSES), rng.choice(_PYTHONS), rng.randint(1, 6)
            )
        )
    hubs = rng.sample(range(len(packages)), max(3, len(packages) // 8))  # required by many
    # what the project runs requires only what it runs; development tools may require anything
    everything = list(range(len(packages)))
    runtime = [i for i, p in enumerate(packages) if not p.dev] or everything
    runtime_hubs = [i for i in hubs if not packages[i].dev] or runtime
    for p in packages:
        m = rng.randint(7, 16) if rng.random() < 0.05 else rng.choice((0, 0, 1, 1, 2, 2, 3, 4, 5, 6))
        among, among_hubs = (everything, hubs) if p.dev else (runtime, runtime_hubs)
        picks = {rng.choice(among_hubs) if rng.random() < 0.5 else rng.choice(among) for _ in range(m)}
        for q in sorted(picks):
            other = packages[q]
            if other.name == p.name:
                continue
            major, minor, _ = other.version.split(".")
            if split == "dev":
                p.requires[other.name] = f">={major}.{minor}" if major == "0" else f">={major}.0"
            else:
                p.requires[other.name] = f"^0.{minor}.0" if major == "0" else f"^{major}.0.0"
            if split == "dev" and rng.random() < 0.1:
                p.marker[other.name] = rng.choice(('sys_platform == "win32"', 'python_version < "3.11"'))
            if split == "test" and rng.random() < 0.12:  # needs another major: its own nested copy
                if major == "0":
                    older = f"0.{int(minor) + rng.randint(1, 5)}"
                    p.requires[other.name] = f"^{older}.0"
                else:
                    older = f"{int(major) - 1}.{rng.randint(0, 20)}"
                    p.requires[other.name] = f"^{int(major) - 1}.0.0"
                p.nested[other.name] = f"{older}.{rng.randint(0, 9)}"
    return packages


# -- the files ----------------------------------------------------------------------------------


def _hash(name: str, version: str, i: int) -> str:
    r = random.Random(f"{name}/{version}/{i}")
    return f"{r.getrandbits(256):064x}"


def _poetry(packages: list[Package]) -> str:
    out = []
    for p in packages:
        under = p.name.replace("-", "_")
        out += [
            "[[package]]",
            f'name = "{p.name}"',
            f'version = "{p.version}"',
            f'description = "{p.name.replace("-", " ").capitalize()} for Python"',
            f'category = "{"dev" if p.dev else "main"}"',
            "optional = false",
            f'python-versions = "{p.python}"',
            "files = [",
        ]
        kinds = [
            "py3-none-any.whl",
            "tar.gz",
            "cp311-cp311-manylinux_2_17_x86_64.whl",
            "cp312-cp312-macosx_11_0_arm64.whl",
            "cp311-cp311-win_amd64.whl",
            "cp310-cp310-musllinux_1_1_x86_64.whl",
        ]
        for i in range(p.files):
            file = (
                f"{under}-{p.version}.tar.gz" if kinds[i] == "tar.gz" else f"{under}-{p.version}-{kinds[i]}"
            )
            out.append(f'    {{file = "{file}", hash = "sha256:{_hash(p.name, p.version, i)}"}},')
        out += ["]", ""]
        if p.requires:
            out.append("[package.dependencies]")
            for name, spec in p.requires.items():
                if name in p.marker:
                    marker = p.marker[name].replace('"', '\\"')
                    out.append(f'{name} = {{version = "{spec}", markers = "{marker}"}}')
                else:
                    out.append(f'{name} = "{spec}"')
            out.append("")
    out += [
        "[metadata]",
        'lock-version = "2.0"',
        'python-versions = "^3.11"',
        f'content-hash = "{_hash("content", str(len(packages)), 0)}"',
        "",
    ]
    return "\n".join(out)


def _npm(packages: list[Package]) -> dict:
    by_name = {p.name: p for p in packages}
    root_deps = {
        p.name: f"^{p.version}"
        for p in packages
        if not p.dev and p.name.startswith(("react", "axios", "zod", "@tanstack"))
    }
    root_dev = {
        p.name: f"^{p.version}"
        for p in packages
        if p.dev and p.name in ("vite", "typescript", "vitest", "eslint", "prettier")
    }
    out: dict = {
        "": {
            "name": "basketly-web",
            "version": "0.14.2",
            "dependencies": root_deps,
            "devDependencies": root_dev,
        }
    }

    def entry(name: str, version: str, p: Package, deps: dict[str, str]) -> dict:
        e: dict = {
            "version": version,
            "resolved": f"https://registry.npmjs.org/{name}/-/{name.split('/')[-1]}-{version}.tgz",
            "integrity": "sha512-" + base64.b64encode(bytes.fromhex(_hash(name, version, 0) * 2)).decode(),
        }
        if p.dev:
            e["dev"] = True
        if deps:
            e["dependencies"] = deps
        e["license"] = p.license
        return e

    for p in packages:
        out[f"node_modules/{p.name}"] = entry(p.name, p.version, p, dict(p.requires))
        for name, version in p.nested.items():
            out[f"node_modules/{p.name}/node_modules/{name}"] = entry(name, version, by_name[name], {})
    return {
        "name": "basketly-web",
        "version": "0.14.2",
        "lockfileVersion": 3,
        "requires": True,
        "packages": out,
    }


def _fit(split: str, seed: str, chars: int) -> tuple[list[Package], object]:
    per = 560 if split == "dev" else 330
    n = max(10, chars // per)
    for _ in range(6):
        packages = _packages(split, seed, n)
        context = _poetry(packages) if split == "dev" else _npm(packages)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(10, round(n * chars / size))
    return packages, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _ask_version(split: str, rng: random.Random, packages: list[Package]) -> _Asked:
    if split == "dev":
        p = rng.choice(packages)
        return f"Which version of {p.name} does poetry.lock pin?", p.version, {"name": p.name}
    nested = [name for p in packages for name in p.nested]
    name = rng.choice(nested) if nested and rng.random() < 0.6 else rng.choice(packages).name
    p = next(q for q in packages if q.name == name)
    q = f"What version of the package {name} is installed at the top level of node_modules?"
    return q, p.version, {"name": name}


def _ask_dependents(split: str, rng: random.Random, packages: list[Package]) -> _Asked:
    name = rng.choice(packages).name
    n = sum(name in p.requires for p in packages)
    if split == "dev":
        return f"How many locked packages list {name} among their own dependencies?", n, {"name": name}
    q = f"How many installed packages (the project's own entry aside) name {name} directly as a dependency?"
    return q, n, {"name": name}


def _ask_count(split: str, rng: random.Random, packages: list[Package]) -> _Asked:
    if split == "dev":
        group = rng.choice(("main", "dev"))
        files = rng.randint(2, 4)
        n = sum((p.dev == (group == "dev")) and p.files >= files for p in packages)
        q = f"How many packages in the {group} category have at least {files} distribution files listed?"
        return q, n, {"category": group, "files": files}
    license = rng.choice(("MIT", "ISC", "Apache-2.0", "BSD-3-Clause"))
    n = sum(p.dev and p.license == license for p in packages)
    n += sum(
        by.dev and by.license == license
        for p in packages
        for by in [_copy(packages, name) for name in p.nested]
    )
    q = f"How many installed entries are marked dev and carry the license {license}? Nested copies count too."
    return q, n, {"license": license}


def _copy(packages: list[Package], name: str) -> Package:
    return next(q for q in packages if q.name == name)


def _ask_most(split: str, rng: random.Random, packages: list[Package]) -> _Asked:
    if split == "dev":
        group = rng.choice(("main", "dev"))
        mine = [p for p in packages if p.dev == (group == "dev")]
    else:
        license = rng.choice(("MIT", "ISC", "Apache-2.0", "BSD-3-Clause"))
        mine = [p for p in packages if not p.dev and p.license == license]
    ranked = sorted(mine, key=lambda p: -len(p.requires))
    if len(ranked) < 2 or len(ranked[0].requires) == len(ranked[1].requires):
        return None
    if split == "dev":
        q = f"Among the {group}-category packages, which one declares the most dependencies of its own?"
        return q, ranked[0].name, {"category": group}
    q = (
        f"Of the installed packages with the license {license} that are not marked dev (the project's own "
        "entry aside), which lists the most direct dependencies?"
    )
    return q, ranked[0].name, {"license": license}


_ASK = {"version": _ask_version, "dependents": _ask_dependents, "count": _ask_count, "most": _ask_most}


@family(
    "lockfile",
    "a package lockfile: poetry.lock as a string (dev) or package-lock.json as a nested dict (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    packages, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other packages, groups and licenses, then one package's version, which is always there
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, packages), kind, "version", nonzero=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (TOML)" if ref.split == "dev" else "dict (package-lock.json)",
        packages=len(packages),
    )
