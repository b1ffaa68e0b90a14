"""Questions about a test run's report: a JUnit XML file as one string (``dev``) or a pytest JSON
report as a nested dict (``test``).

What a notebook holds after a CI job's test report is downloaded and read: every test case of the
run, grouped by class or module, with how long it took and how it ended (passed, failed, raised an
error, skipped) and, for those that did not pass, the exception and where it was raised. Test cases
are added class by class (module by module) until the text (or the indented JSON) is about the
length asked for. Kinds of question:

- ``failed``: how many test cases of one class (``dev``) or module (``test``) failed, errors and
  skips aside (classes and modules whose names differ by a package or a suffix stand beside it);
- ``slowest``: the test case of one class that took longest (``dev``), or the test of one module
  with the longest call phase (``test``) (a clear leader);
- ``time``: the total time of one class's test cases (``dev``) or of one module's call phases
  (``test``), in seconds;
- ``where``: the exception type one failing test case reported (``dev``) or the line its crash
  points at (``test``).

Every answer is computed from the test cases the generator wrote. Score: ``exact`` (numbers as
numbers, names without case).

Splits: ``dev`` is a Maven Surefire-like JUnit XML report of a Java service (``<testsuites>``,
``<testsuite name=... time=...>``, ``<testcase classname= name= time=>`` with ``<failure>``,
``<error>`` or ``<skipped>``; a suite's own ``time`` includes its set-up); ``test`` is a
pytest-json-report file of a Python service (``summary``, ``tests`` as a list of dicts with
``nodeid``, ``outcome``, and ``setup``/``call``/``teardown`` phases each with a ``duration``, a
``crash`` with ``lineno`` on failures, parametrised ids such as ``test_x[EUR]``): other
containers, fields, names and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("failed", "slowest", "time", "where")

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"


@dataclass
class Case:
    group: str  # the class (dev) or the module's path (test)
    klass: str  # the test class inside a module (test); "" for a module-level test
    name: str
    outcome: str
    micros: int  # the time (dev) or the call phase (test), in microseconds (dev: whole milliseconds)
    setup: int = 0  # microseconds (test)
    teardown: int = 0
    exception: str = ""
    message: str = ""
    line: int = 0  # where it was raised
    defined: int = 0  # the line of the test's def (test)
    extra: dict = field(default_factory=dict)


# -- dev: a Java service ------------------------------------------------------------------------

_DEV_CLASSES = (
    "com.acme.billing.InvoiceServiceTest", "com.acme.billing.InvoiceServiceIT",
    "com.acme.billing.tax.TaxCalculatorTest", "com.acme.billing.TaxCalculatorTest",
    "com.acme.billing.PaymentGatewayClientTest", "com.acme.orders.OrderControllerTest",
    "com.acme.orders.OrderControllerIT", "com.acme.orders.api.OrderMapperTest",
    "com.acme.orders.OrderMapperTest", "com.acme.inventory.StockLevelServiceTest",
    "com.acme.inventory.WarehouseRepositoryIT", "com.acme.auth.TokenServiceTest",
    "com.acme.auth.PasswordPolicyTest", "com.acme.notify.EmailSenderTest",
    "com.acme.notify.SmsSenderTest", "com.acme.reporting.MonthlyReportJobTest",
    "com.acme.reporting.CsvExporterTest", "com.acme.common.MoneyTest",
    "com.acme.common.DateRangeTest", "com.acme.common.RetryPolicyTest",
)  # fmt: skip
_DEV_VERBS = ("rejects", "accepts", "computes", "rounds", "returns", "throwsOn", "retries", "maps",
              "persists", "loads", "skips", "validates", "sends", "formats", "splits", "merges")  # fmt: skip
_DEV_OBJECTS = ("NegativeAmount", "EmptyCart", "ExpiredToken", "HalfUp", "NullCustomer", "DuplicateOrder",
                "UnknownCurrency", "LargeInvoice", "MissingAddress", "LeapYear", "ZeroQuantity",
                "InvalidIban", "TimeoutResponse", "UnicodeName", "PartialRefund",
                "LockedAccount")  # fmt: skip
_DEV_FAILURES = (
    ("org.opentest4j.AssertionFailedError", "expected: <{a}> but was: <{b}>"),
    ("org.opentest4j.AssertionFailedError", "expected: <true> but was: <false>"),
    ("org.mockito.exceptions.verification.WantedButNotInvoked", "Wanted but not invoked: repository.save()"),
    ("org.assertj.core.error.AssertJMultipleFailuresError", "Multiple Failures (2 failures)"),
)
_DEV_ERRORS = (
    ("java.lang.NullPointerException", 'Cannot invoke "String.length()" because "name" is null'),
    ("java.lang.IllegalStateException", "Connection pool shut down"),
    ("java.net.SocketTimeoutException", "Read timed out"),
    ("java.util.NoSuchElementException", "No value present"),
    ("org.springframework.dao.DataIntegrityViolationException", "could not execute statement"),
)

# -- test: a Python service ---------------------------------------------------------------------

_TEST_MODULES = (
    ("tests/api/test_orders.py", ("TestCheckout", "TestRefunds", "")),
    ("tests/unit/test_orders.py", ("TestOrderTotals", "")),
    ("tests/api/test_users.py", ("TestSignup", "TestLogin")),
    ("tests/api/test_users_admin.py", ("TestRoles", "")),
    ("tests/unit/test_pricing.py", ("TestDiscounts", "TestTaxes", "")),
    ("tests/unit/test_pricing_rules.py", ("", "TestRuleEngine")),
    ("tests/integration/test_payments.py", ("TestStripeWebhook", "")),
    ("tests/integration/test_payment.py", ("TestPaymentRetry",)),
    ("tests/unit/test_inventory.py", ("TestReservations", "")),
    ("tests/unit/test_emails.py", ("",)),
    ("tests/integration/test_search.py", ("TestIndexing", "TestQueries")),
    ("tests/unit/test_utils.py", ("",)),
)  # fmt: skip
_TEST_VERBS = ("test_applies", "test_rejects", "test_returns", "test_creates", "test_updates",
               "test_deletes", "test_lists", "test_retries", "test_caches", "test_sorts")  # fmt: skip
_TEST_OBJECTS = ("coupon", "expired_card", "empty_cart", "guest_user", "partial_refund", "rate_limit",
                 "duplicate_email", "bulk_order", "tax_exempt", "webhook_signature", "stale_cache",
                 "unicode_query")  # fmt: skip
_TEST_PARAMS = ("EUR", "USD", "GBP", "0", "1", "10", "sqlite", "postgres")
_TEST_FAILURES = (
    ("AssertionError", "assert {a} == {b}"),
    ("AssertionError", "assert 'paid' == 'pending'"),
    ("KeyError", "'customer_id'"),
    ("httpx.ReadTimeout", "timed out"),
    ("TypeError", "unsupported operand type(s) for +: 'Decimal' and 'float'"),
)


def _outcome(rng: random.Random) -> str:
    return rng.choices((PASSED, FAILED, ERROR, SKIPPED), (80, 10, 4, 6))[0]


def _dev_class(name: str, rng: random.Random) -> list[Case]:
    names = sorted({rng.choice(_DEV_VERBS) + rng.choice(_DEV_OBJECTS) for _ in range(rng.randint(5, 14))})
    rng.shuffle(names)
    slow = name.endswith("IT")
    cases = []
    for n in names:
        outcome = _outcome(rng)
        ms = 0 if outcome == SKIPPED else rng.randint(40, 4000) if slow else rng.randint(1, 400)
        case = Case(name, "", n, outcome, ms * 1000)
        if outcome in (FAILED, ERROR):
            exc, message = rng.choice(_DEV_FAILURES if outcome == FAILED else _DEV_ERRORS)
            case.exception = exc
            case.message = message.format(a=rng.randint(2, 99), b=rng.randint(100, 999))
            case.line = rng.randint(30, 400)
        elif outcome == SKIPPED:
            case.message = rng.choice(
                ("flaky on CI, see JIRA-1423", "requires Docker", "not implemented yet")
            )
        cases.append(case)
    return cases


def _test_module(path: str, classes: tuple[str, ...], rng: random.Random) -> list[Case]:
    cases, line = [], rng.randint(8, 30)
    for klass in classes:
        line += 4
        bases: set[str] = set()
        for _ in range(rng.randint(2, 5)):
            base = f"{rng.choice(_TEST_VERBS)}_{rng.choice(_TEST_OBJECTS)}"
            if base in bases:
                continue
            bases.add(base)
            params = rng.sample(_TEST_PARAMS, rng.choice((0, 0, 2, 3)))
            line += rng.randint(4, 25)
            for name in [f"{base}[{p}]" for p in params] or [base]:
                outcome = _outcome(rng)
                call = 0 if outcome in (SKIPPED, ERROR) else rng.randint(300, 2_500_000)
                case = Case(path, klass, name, outcome, call, rng.randint(90, 9000), rng.randint(60, 4000))
                case.defined = line
                if outcome in (FAILED, ERROR):
                    exc, message = rng.choice(_TEST_FAILURES)
                    case.exception = exc
                    case.message = message.format(a=rng.randint(2, 99), b=rng.randint(100, 999))
                    case.line = line + rng.randint(2, 18)
                elif outcome == SKIPPED:
                    case.message = rng.choice(("needs redis", "slow; run with --runslow", "broken on py3.12"))
                cases.append(case)
    return cases


def _cases(split: str, rng: random.Random, chars: int) -> list[Case]:
    """Whole classes (modules) until the text is about the length asked for; at least one test fails."""
    per = 180 if split == "dev" else 530  # about what a test case costs as text
    groups = list(_DEV_CLASSES if split == "dev" else _TEST_MODULES)
    rng.shuffle(groups)
    cases: list[Case] = []
    round_ = 0
    while len(cases) * per < chars - 700:
        for group in groups:
            if len(cases) * per >= chars - 700:
                break
            if split == "dev":
                name = group if round_ == 0 else f"{group}{round_ + 1}"
                cases += _dev_class(name, rng)
            else:
                path, classes = group
                path = path if round_ == 0 else path.replace(".py", f"_{round_ + 1}.py")
                cases += _test_module(path, classes, rng)
        round_ += 1
    del cases[max(4, (chars - 700) // per + 1) :]  # the last class or module cut short
    if not any(c.outcome == FAILED for c in cases):
        c = rng.choice([c for c in cases if c.outcome == PASSED])
        c.outcome = FAILED
        exc, message = (_DEV_FAILURES if split == "dev" else _TEST_FAILURES)[0]
        c.exception, c.message = exc, message.format(a=3, b=4)
        c.line = c.defined + 3 if split == "test" else 88
    return cases


# -- the files ----------------------------------------------------------------------------------


def _seconds(micros: int, places: int) -> str:
    return f"{micros / 1_000_000:.{places}f}"


def _junit(cases: list[Case], rng: random.Random) -> str:
    groups: dict[str, list[Case]] = {}
    for c in cases:
        groups.setdefault(c.group, []).append(c)
    suites, totals = [], Counter()
    for name, mine in groups.items():
        counts = Counter(c.outcome for c in mine)
        overhead = rng.randint(20, 900) * 1000  # the suite's set-up, in its own time only
        micros = sum(c.micros for c in mine) + overhead
        totals.update(counts)
        totals["tests"] += len(mine)
        totals["micros"] += micros
        lines = [
            f'  <testsuite name="{name}" tests="{len(mine)}" failures="{counts[FAILED]}" '
            f'errors="{counts[ERROR]}" skipped="{counts[SKIPPED]}" time="{_seconds(micros, 3)}" '
            f'timestamp="2024-05-02T10:{rng.randint(10, 59)}:{rng.randint(10, 59)}" hostname="ci-runner-7">'
        ]
        simple = name.rsplit(".", 1)[1]
        for c in mine:
            head = f'    <testcase name="{c.name}" classname="{name}" time="{_seconds(c.micros, 3)}"'
            if c.outcome == PASSED:
                lines.append(head + "/>")
                continue
            lines.append(head + ">")
            if c.outcome == SKIPPED:
                lines.append(f"      <skipped message={quoteattr(c.message)}/>")
            else:
                tag = "failure" if c.outcome == FAILED else "error"
                trace = (
                    f"{c.exception}: {c.message}\n\tat {name}.{c.name}({simple}.java:{c.line})\n"
                    "\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)"
                )
                lines.append(
                    f"      <{tag} message={quoteattr(c.message)} type={quoteattr(c.exception)}>"
                    f"{escape(trace)}</{tag}>"
                )
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
        suites.append("\n".join(lines))
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites name="billing-service" tests="{totals["tests"]}" failures="{totals[FAILED]}" '
        f'errors="{totals[ERROR]}" skipped="{totals[SKIPPED]}" time="{_seconds(totals["micros"], 3)}">'
    )
    return head + "\n" + "\n".join(suites) + "\n</testsuites>\n"


def _nodeid(c: Case) -> str:
    return "::".join(p for p in (c.group, c.klass, c.name) if p)


def _pytest_json(cases: list[Case], rng: random.Random) -> dict:
    root = "/builds/shop/backend"
    tests = []
    for c in cases:
        keywords = [c.name, *([c.klass] if c.klass else []), c.group.rsplit("/", 1)[1], "backend"]
        if "[" in c.name:
            keywords.append("parametrize")
        item: dict = {"nodeid": _nodeid(c), "lineno": c.defined, "outcome": c.outcome, "keywords": keywords}
        setup: dict = {"duration": c.setup / 1e6, "outcome": "passed"}
        if c.outcome == SKIPPED:
            setup.update(outcome="skipped", longrepr=f"('{c.group}', {c.defined}, 'Skipped: {c.message}')")
        if c.outcome == ERROR:
            setup.update(
                outcome="failed",
                crash={
                    "path": f"{root}/tests/conftest.py",
                    "lineno": c.line,
                    "message": f"{c.exception}: {c.message}",
                },
                longrepr=f"fixture 'db' raised\nE   {c.exception}: {c.message}",
            )
        item["setup"] = setup
        if c.outcome in (PASSED, FAILED):
            call: dict = {"duration": c.micros / 1e6, "outcome": c.outcome}
            if c.outcome == FAILED:
                call["crash"] = {
                    "path": f"{root}/{c.group}",
                    "lineno": c.line,
                    "message": f"{c.exception}: {c.message}",
                }
                call["traceback"] = [{"path": c.group, "lineno": c.line, "message": c.exception}]
                call["longrepr"] = (
                    f"def {c.name.split('[')[0]}(...):\n>       ...\nE       {c.exception}: {c.message}"
                )
            item["call"] = call
        item["teardown"] = {"duration": c.teardown / 1e6, "outcome": "passed"}
        tests.append(item)
    counts = Counter(c.outcome for c in cases)
    summary = {k: counts[k] for k in (PASSED, FAILED, SKIPPED, ERROR) if counts[k]}
    total = sum(c.setup + c.micros + c.teardown for c in cases) / 1e6
    return {
        "created": 1736400000 + rng.randint(0, 2_000_000) + rng.randint(0, 999) / 1000,
        "duration": round(total + rng.uniform(1, 5), 3),
        "exitcode": 1,
        "root": root,
        "environment": {
            "Python": "3.12.3",
            "Platform": "Linux-6.5.0-1025-azure-x86_64-with-glibc2.35",
            "Packages": {"pytest": "8.3.2", "pluggy": "1.5.0"},
            "Plugins": {"json-report": "1.5.0", "metadata": "3.1.1", "xdist": "3.6.1"},
        },
        "summary": summary | {"total": len(cases), "collected": len(cases)},
        "tests": tests,
    }


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _groups(cases: list[Case]) -> list[str]:
    return list(dict.fromkeys(c.group for c in cases))


def _alike(cases: list[Case]) -> list[str]:
    """Classes or modules whose names differ from another's by a package or a suffix."""
    names = _groups(cases)

    def stem(n: str) -> str:
        base = n.rsplit(".", 1)[-1] if "/" not in n else n.rsplit("/", 1)[-1]
        return base.replace("IT", "Test").replace(".py", "").rstrip("s_0123456789")[:14]

    return [n for n in names if any(o != n and stem(o) == stem(n) for o in names)]


def _ask_failed(split: str, rng: random.Random, cases: list[Case]) -> _Asked:
    failing = _groups([c for c in cases if c.outcome == FAILED])
    alike = [g for g in _alike(cases) if g in failing]
    group = rng.choice(alike if alike and rng.random() < 0.75 else failing)
    n = sum(c.group == group and c.outcome == FAILED for c in cases)
    if split == "dev":
        q = (
            f"How many test cases of the class {group} failed (a <failure> element; errors and skipped "
            "tests not counted)?"
        )
        return q, n, {"class": group}
    q = f"Count the tests in {group} whose outcome is failed (errors and skips aside)."
    return q, n, {"module": group}


def _ask_slowest(split: str, rng: random.Random, cases: list[Case]) -> _Asked:
    group = rng.choice(_groups(cases))
    mine = sorted((c for c in cases if c.group == group), key=lambda c: -c.micros)
    if len(mine) < 2 or mine[0].micros == mine[1].micros:
        return None
    if split == "dev":
        q = f"Which test case (its name attribute) of the class {group} took the longest?"
        return q, mine[0].name, {"class": group}
    q = f"Give the nodeid of the test in {group} whose call phase lasted longest."
    return q, _nodeid(mine[0]), {"module": group}


def _ask_time(split: str, rng: random.Random, cases: list[Case]) -> _Asked:
    group = rng.choice(_alike(cases) or _groups(cases))
    micros = sum(c.micros for c in cases if c.group == group)
    if split == "dev":
        q = (
            f"What is the sum of the time attributes of the test cases of class {group}, in seconds? "
            "(Not the suite's own time.)"
        )
        return q, round(micros / 1_000_000, 3), {"class": group}
    q = f"Add up call.duration over the tests of {group} that have a call phase. Answer in seconds."
    return q, round(micros / 1_000_000, 6), {"module": group}


def _ask_where(split: str, rng: random.Random, cases: list[Case]) -> _Asked:
    if split == "dev":
        c = rng.choice([c for c in cases if c.outcome in (FAILED, ERROR)])
        q = f"Which exception type did the test case {c.name} of class {c.group} report?"
        return q, c.exception, {"class": c.group, "name": c.name}
    c = rng.choice([c for c in cases if c.outcome == FAILED])
    q = f"What line number does the crash of the test {_nodeid(c)} point to?"
    return q, c.line, {"nodeid": _nodeid(c)}


_ASK = {"failed": _ask_failed, "slowest": _ask_slowest, "time": _ask_time, "where": _ask_where}


@family(
    "testreport",
    "a test run's report: JUnit XML as a string (dev) or a pytest JSON report as a dict (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    cases = _cases(ref.split, rng, ref.chars)
    context: str | dict = _junit(cases, rng) if ref.split == "dev" else _pytest_json(cases, rng)
    kind = KINDS[ref.index % len(KINDS)]
    # other classes and modules, then one failure, which is always there
    kind, asked = draw_question(lambda kind_: _ASK[kind_](ref.split, rng, cases), kind, "where", nonzero=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string" if ref.split == "dev" else "dict",
        tests=len(cases),
    )
