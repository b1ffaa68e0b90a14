"""What the redactor takes for a secret: by a variable's name, and by a value's form."""

from __future__ import annotations

import pytest

from rlm_kernel.secrets import REDACTED, Redactor, is_secret_name

SECRET_NAMES = [
    "OPENAI_API_KEY",
    "OPENAI_KEY",
    "GITHUB_TOKEN",
    "PGPASSWORD",
    "MYSQL_PWD",
    "SMTP_PASS",
    "AWS_SECRET_ACCESS_KEY",
    "auth_token",
    "Authorization",
    "api_key",
    "GITHUBTOKEN",
]
NOT_SECRET_NAMES = [
    "PWD",
    "OLDPWD",
    "AUTHOR",
    "TOKENIZERS_PARALLELISM",
    "HOME",
    "max_tokens",
    "model_name",
    "base_url",
    "KEYBOARD_LAYOUT",
    "BYPASS",
    "LESSKEY",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_names_of_secrets(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", NOT_SECRET_NAMES)
def test_names_of_other_things(name: str) -> None:
    assert not is_secret_name(name)


FORMS = [
    ("postgres://:pw@db.internal:5432/app", f"postgres://:{REDACTED}@db.internal:5432/app"),
    ("mysql://root:hunter2@localhost/db", f"mysql://root:{REDACTED}@localhost/db"),
    ("https://ghp_0123456789abcdefABCDEF0123456789abcd@github.com/o/r", f"https://{REDACTED}@github.com/o/r"),
    ("https://hooks.example.com/x?token=t0k3n-abc&x=1", f"https://hooks.example.com/x?token={REDACTED}&x=1"),
    ("key sk-proj-ABCDEFGHIJKLMNOPQRSTUV done", f"key {REDACTED} done"),
    ("aws AKIAABCDEFGHIJKLMNOP", f"aws {REDACTED}"),
    # Not secrets: a user without a password, a port, a word that contains "sk-".
    ("https://git@github.com/x", "https://git@github.com/x"),
    ("see http://example.com:8080/path", "see http://example.com:8080/path"),
    ("risk-assessment-framework-document-v2", "risk-assessment-framework-document-v2"),
]


@pytest.mark.parametrize(("text", "redacted"), FORMS, ids=[t for t, _ in FORMS])
def test_secrets_by_their_form(text: str, redacted: str) -> None:
    assert Redactor().text(text) == redacted
