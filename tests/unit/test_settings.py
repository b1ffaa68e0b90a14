"""One settings type: RLMConfig's fields, and every front end generated from them.

A run setting is a field of RLMConfig with a help text; these tests check that each front end (the
Python API, the magics' options and %config traits, the eval's flags and Settings) offers every one
of them under its one name, and takes the older spellings with a warning.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import warnings

import pytest

from rlm_kernel import RLM
from rlm_kernel.config import ALIASES, RUN_SETTINGS, DeprecatedName, RLMConfig, setting_kind
from rlm_kernel.errors import ConfigError
from rlm_kernel.eval import Settings
from rlm_kernel.eval.__main__ import _parser as eval_parser
from rlm_kernel.jupyter.magics import RLMMagics
from rlm_kernel.jupyter.magics import _parser as magic_parser
from rlm_kernel.lm import BACKENDS, backend
from rlm_kernel.secrets import public_kwargs


def flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each visible --flag of a parser (the eval's run subcommand), by its dest."""
    if any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices["run"]
    return {
        a.dest: a.option_strings[0]
        for a in parser._actions
        if a.option_strings and a.help != argparse.SUPPRESS
    }


def test_every_run_setting_is_offered_by_every_front_end_under_its_name() -> None:
    signature = inspect.signature(RLM)
    magic, evals = flags(magic_parser()), flags(eval_parser())
    traits = RLMMagics.class_own_traits()
    for name in RUN_SETTINGS:
        assert name in signature.parameters, name
        assert name in traits and traits[name].metadata.get("config"), name
        if setting_kind(name) != "dict":  # dicts are given in Python or %config, not on a command line
            assert magic[name] == "--" + name.replace("_", "-"), name
            if name not in ("log_dir", "record"):  # an eval keeps its rollouts in --out
                assert evals[name] == "--" + name.replace("_", "-"), name


def test_the_settings_that_other_front_ends_once_spelled_otherwise_have_one_name() -> None:
    assert ALIASES == {
        "model": "model_name",
        "sub_model": "sub_model_name",
        "timeout": "max_timeout",
        "profile": "prompt_profile",
    }


def test_an_older_spelling_works_with_a_warning_in_python() -> None:
    with pytest.warns(DeprecatedName, match="'profile' is now called 'prompt_profile'"):
        rlm = RLM("replay", {"path": "x.jsonl"}, profile="small", log_dir=False)
    assert rlm.config.prompt_profile == "small"
    with pytest.warns(DeprecatedName, match="'timeout' is now called 'max_timeout'"):
        settings = Settings(timeout=5.0, model_name="qwen2.5-coder-1.5b")
    assert settings.rlm.max_timeout == 5.0
    with pytest.raises(ConfigError, match="same setting"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecatedName)
        RLM("replay", {"path": "x.jsonl"}, profile="small", prompt_profile="default")


def test_an_older_spelling_works_with_a_warning_on_command_lines() -> None:
    with pytest.warns(DeprecatedName) as caught:
        args = eval_parser().parse_args(["run", "--timeout", "30", "--model", "m"])
    assert args.max_timeout == 30.0 and args.model_name == "m"
    assert [str(w.message).split(";")[0] for w in caught] == [
        "--timeout is now called --max-timeout",
        "--model is now called --model-name",
    ]
    with pytest.warns(DeprecatedName, match="--profile is now called --prompt-profile"):
        opts = magic_parser().parse_args(["--profile", "small"])
    assert opts.prompt_profile == "small"


def test_an_unknown_setting_is_one_line_naming_the_closest() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown setting 'max_iteration'\. Did you mean 'max_iterations'\?"
    ):
        RLM("replay", {"path": "x.jsonl"}, max_iteration=3)
    with pytest.raises(ConfigError, match="unknown setting 'verbose'"):
        Settings(verbose=True)


def test_the_references_model_name_in_backend_kwargs_is_the_same_setting() -> None:
    config = RLMConfig(backend="openai", backend_kwargs={"model_name": "gpt-x", "base_url": "http://h"})
    assert config.model_name == "gpt-x" and config.backend_kwargs == {"base_url": "http://h"}
    assert config.lm_kwargs("sub") == ("openai", {"base_url": "http://h"}, "gpt-x")
    with pytest.raises(ConfigError, match="Two models given"):
        RLMConfig(model_name="a", backend_kwargs={"model_name": "b"})


def test_sub_calls_take_the_roots_provider_unless_given_their_own() -> None:
    shared = RLMConfig(backend="openai", backend_kwargs={"base_url": "u"}, sub_model_name="small")
    assert shared.lm_kwargs("sub") == ("openai", {"base_url": "u"}, "small")
    other = RLMConfig(backend="openai", model_name="big", sub_backend="anthropic")
    assert other.lm_kwargs("sub") == ("anthropic", {}, None)
    own = RLMConfig(
        backend="openai", backend_kwargs={"base_url": "u"}, sub_backend_kwargs={"model_name": "s"}
    )
    assert own.lm_kwargs("sub") == ("openai", {}, "s")


def test_the_eval_holds_a_config_with_its_own_defaults() -> None:
    settings = Settings(max_iterations=4)
    assert isinstance(settings.rlm, RLMConfig)
    assert (settings.rlm.backend, settings.rlm.executor, settings.rlm.max_iterations) == (
        "local",
        "kernel",
        4,
    )
    assert settings.with_(base_max_tokens=10, tips="t").rlm.tips == "t"
    assert settings.model_label == "qwen2.5-coder-0.5b" == settings.sub_model_label


def test_no_secret_reaches_a_trajectorys_settings() -> None:
    kwargs = {"api_key": "k", "auth_token": "t", "default_headers": {"x": "y"}, "base_url": "u", "n_ctx": 8}
    assert public_kwargs(kwargs) == {"base_url": "u", "n_ctx": 8}
    config = RLMConfig(backend="openai", backend_kwargs=kwargs)
    assert config.public()["backend_kwargs"] == {"base_url": "u", "n_ctx": 8}
    assert Settings(backend="openai", backend_kwargs=kwargs).public()["backend_kwargs"] == {
        "base_url": "u",
        "n_ctx": 8,
    }


def test_backends_declare_what_they_can_do() -> None:
    assert [b for b, spec in BACKENDS.items() if spec.needs_key] == [
        "openai",
        "anthropic",
        "openrouter",
        "portkey",
        "vercel",
        "gemini",
    ]
    assert [b for b, spec in BACKENDS.items() if spec.needs_key and spec.default_model] == [
        "openai",
        "anthropic",
    ]
    assert [b for b, spec in BACKENDS.items() if spec.small] == ["local"]
    assert RLMConfig(backend="local").profile == "small" and RLMConfig(backend="openai").profile == "default"
    with pytest.raises(ConfigError, match="Unknown backend 'llama': choose one of openai, anthropic"):
        backend("llama")


def test_a_field_without_help_is_a_python_only_setting() -> None:
    python_only = {f.name for f in dataclasses.fields(RLMConfig)} - set(RUN_SETTINGS)
    assert python_only == {"sub_backend_kwargs", "system_prompt", "depth"}
