import pytest

from rlm_kernel.protocol import FinalDirective, code_blocks, find_final, resolve_final


@pytest.mark.parametrize(
    ("reply", "blocks"),
    [
        ("```repl\nx = 1\n```", ["x = 1\n"]),
        ("```python\nprint(1)\n```", ["print(1)\n"]),
        ("text\n```py\na\n```\nmore\n```repl\nb\n```", ["a\n", "b\n"]),
        ("```text\nnot code\n```", []),
        ("```\nbare fence\n```", []),
        ("```repl\n\n```", []),
        ("no code at all", []),
        ("```REPL\nupper = 1\n```", ["upper = 1\n"]),
    ],
)
def test_code_blocks(reply, blocks):
    assert code_blocks(reply) == blocks


@pytest.mark.parametrize(
    ("reply", "directive"),
    [
        ("FINAL(42)", FinalDirective("FINAL", "42")),
        (
            "I am done.\nFINAL(the answer is (a) and (b))\n",
            FinalDirective("FINAL", "the answer is (a) and (b)"),
        ),
        ("FINAL_VAR(result)", FinalDirective("FINAL_VAR", "result")),
        ("FINAL_VAR('result')", FinalDirective("FINAL_VAR", "'result'")),
        ("```repl\nFINAL(x)\n```", None),
        ("We will call FINAL(x) later", None),
        ("nothing here", None),
    ],
)
def test_find_final(reply, directive):
    assert find_final(reply) == directive


@pytest.mark.parametrize(
    ("directive", "namespace", "content", "problem"),
    [
        (FinalDirective("FINAL", "42"), {}, "42", None),
        (FinalDirective("FINAL", "'quoted'"), {}, "quoted", None),
        (FinalDirective("FINAL", "plain words"), {}, "plain words", None),
        # The paper's misuse: FINAL(variable_name) means the variable's value.
        (FinalDirective("FINAL", "result"), {"result": 7}, "7", None),
        (FinalDirective("FINAL_VAR", "result"), {"result": [1, 2]}, "[1, 2]", None),
        (FinalDirective("FINAL_VAR", "'result'"), {"result": "x"}, "x", None),
        (FinalDirective("FINAL_VAR", "missing"), {}, None, "no variable named 'missing'"),
        (FinalDirective("FINAL_VAR", "1 + 2"), {}, None, "needs a variable name"),
    ],
)
def test_resolve_final(directive, namespace, content, problem):
    got_content, got_problem = resolve_final(directive, namespace)
    assert got_content == content
    if problem is None:
        assert got_problem is None
    else:
        assert problem in got_problem
