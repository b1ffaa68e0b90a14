"""The executors' settings: one frozen ExecutorSettings, declared field by field, nested in RLMConfig
as ``executor_kwargs``.

A new setting is a field of ExecutorSettings: the first test reads every declared field and checks
that each front end is made from it (its flag, its lookups, the docs' row, which executors take it,
the executors' own constructors), so it holds a new one to the same without being edited.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import pytest

from rlm_kernel.config import (
    EXECUTOR_SETTINGS,
    RLMConfig,
    add_arguments,
    executor_kwargs_of,
    setting_choices,
    setting_default,
    setting_help,
    setting_kind,
    setting_type,
)
from rlm_kernel.errors import ConfigError
from rlm_kernel.executors import check_executor
from rlm_kernel.executors.gateway import GatewayExecutor
from rlm_kernel.executors.kernel import KernelExecutor
from rlm_kernel.executors.settings import ExecutorSettings, takes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))
import options_table

KERNEL_TAKES = (
    "cpu_s, file_mb, interrupt_grace_s, isolation, kernel_name, max_procs, max_subcalls, memory_mb, "
    "output_cap, step_timeout, warm"
)


def declared() -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(ExecutorSettings) if "help" in f.metadata]


def other_value(name: str) -> object:
    """A value of setting ``name`` other than its default, of its type."""
    if choices := setting_choices(name):
        return next(c for c in choices if c != setting_default(name))
    return {int: 7, float: 7.5, str: "http://elsewhere:8888"}[setting_type(name)]


def test_every_declared_executor_setting_makes_every_front_end() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, executor_settings=True)
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    docs = {row[0].strip("`"): row for row in options_table.executor_rows()}
    assert [f.name for f in declared()] == list(EXECUTOR_SETTINGS)
    for f in declared():
        name, executors = f.name, f.metadata["executors"]
        assert setting_help(name) == f.metadata["help"] and setting_default(name) == f.default, name
        assert setting_type(name) in (bool, int, float, str), name
        assert docs[name][2] == ", ".join(f"`{e}`" for e in executors), name
        if setting_kind(name) == "secret":  # a token is never a flag, where every process could read it
            assert name not in flags
        else:
            assert flags[name] == "--" + name.replace("_", "-"), name
        value = other_value(name)
        for executor in ("local", "kernel", "gateway"):
            assert (name in takes(executor)) == (executor in executors), (name, executor)
        if "kernel" in executors:
            assert KernelExecutor(**{name: value}).settings[name] == value
            config = RLMConfig(executor="kernel", executor_kwargs={name: value})
            assert getattr(config.executor_kwargs, name) == value
        assert GatewayExecutor(**{"url": "http://gateway:8888", name: value}).settings[name] == value


def test_a_dict_becomes_the_typed_settings_and_reads_as_the_dict_given() -> None:
    config = RLMConfig(executor="kernel", executor_kwargs={"memory_mb": 1024, "isolation": "none"})
    settings = config.executor_kwargs
    assert isinstance(settings, ExecutorSettings)
    assert (settings.memory_mb, settings.isolation, settings.warm) == (1024, "none", 1)
    assert dict(settings) == {"memory_mb": 1024, "isolation": "none"}  # what was given, in its order
    assert config.public()["executor_kwargs"] == {"memory_mb": 1024, "isolation": "none"}
    assert dataclasses.replace(config, depth=1).executor_kwargs == settings
    typed = RLMConfig(executor="kernel", executor_kwargs=ExecutorSettings(cpu_s=60.0))
    assert dict(typed.executor_kwargs) == {"cpu_s": 60.0}
    assert dict(RLMConfig().executor_kwargs) == {} and RLMConfig().executor_kwargs == ExecutorSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.memory_mb = 1  # type: ignore[misc]


def test_a_gateways_token_stays_out_of_the_recorded_settings() -> None:
    given = {"url": "http://gateway:8888", "auth_token": "t0ken-of-the-gateway-1234567890"}
    config = RLMConfig(executor="gateway", executor_kwargs=given)
    assert config.public()["executor_kwargs"] == {"url": "http://gateway:8888"}
    assert "t0ken" not in repr(config.executor_kwargs)
    assert config.executor_kwargs.auth_token == given["auth_token"]


@pytest.mark.parametrize(
    ("executor", "given", "message"),
    [
        (
            "local",
            {"memory_mb": 1},
            "executor_kwargs are for the kernel and gateway executors; local takes none.",
        ),
        (
            "kernel",
            {"memory": 1},
            f"Unknown executor_kwargs key 'memory': the kernel executor takes {KERNEL_TAKES}.",
        ),
        ("kernel", {"url": "http://x"}, "Unknown executor_kwargs key 'url': the kernel executor takes"),
        (
            "gateway",
            {"_given": ()},
            "Unknown executor_kwargs key '_given': the gateway executor takes auth_token, cpu_s, file_mb, "
            "interrupt_grace_s, isolation, kernel_name, max_procs, max_subcalls, memory_mb, output_cap, "
            "step_timeout, url, warm.",
        ),
        ("gateway", {"isolation": "docker"}, "Unknown isolation 'docker': choose one of sandbox, none."),
    ],
)
def test_a_key_the_executor_does_not_take_is_one_line_naming_those_it_takes(
    executor: str, given: dict, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        RLMConfig(executor=executor, executor_kwargs=given)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    with pytest.raises(ConfigError) as checked:
        check_executor(executor, given)  # the same, where a front end checks a dict of its own
    assert str(checked.value) == str(caught.value)


def test_the_flags_of_the_executor_settings_make_executor_kwargs() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, executor_settings=True)
    args = parser.parse_args(["--memory-mb", "512", "--isolation", "none", "--cpu-s", "30"])
    given = executor_kwargs_of(args)
    assert given == {"isolation": "none", "memory_mb": 512, "cpu_s": 30.0}
    assert RLMConfig(executor="kernel", executor_kwargs=given).executor_kwargs.memory_mb == 512
    with pytest.raises(SystemExit):
        parser.parse_args(["--isolation", "docker"])
    plain = argparse.ArgumentParser()
    add_arguments(plain)  # the run settings only, unless asked
    assert not {a.dest for a in plain._actions} & set(EXECUTOR_SETTINGS)


def test_a_gateway_without_an_address_is_refused_when_it_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUPYTER_GATEWAY_URL", raising=False)
    with pytest.raises(ConfigError, match="needs a url"):
        check_executor("gateway", {})
    with pytest.raises(ConfigError, match="must start with http"):
        check_executor("gateway", ExecutorSettings(url="gateway:8888"))
    monkeypatch.setenv("JUPYTER_GATEWAY_URL", "http://from-env:8888")
    assert GatewayExecutor().url == "http://from-env:8888"


def test_a_child_runs_executor_shares_its_parents_settings() -> None:
    parent = GatewayExecutor(url="http://gateway:8888", auth_token="t", memory_mb=512, isolation="none")
    child = parent.child("child")
    assert child.settings is parent.settings
    assert (child.url, child.auth_token, child.memory_mb, child.kernel_name) == (
        "http://gateway:8888",
        "t",
        512,
        "python3",
    )
    assert KernelExecutor(step_timeout=None).step_timeout == 300.0  # empty: the default
