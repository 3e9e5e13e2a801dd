# SPDX-License-Identifier: Apache-2.0
"""hutch.compat.llm_sandbox without a sandbox: names, data, policies and
the security scan, language handlers, pool configuration."""

import importlib
import json
import re

import pytest

MODULES = [
    "", ".const", ".exceptions", ".data", ".security", ".core.config", ".core.mixins", ".core.session_base",
    ".language_handlers", ".language_handlers.factory", ".language_handlers.base", ".interactive", ".session",
    ".pool", ".pool.config", ".pool.base", ".pool.session", ".pool.exceptions", ".pool.factory",
]


@pytest.mark.parametrize("mod", MODULES)
def test_llm_sandbox_layout_imports(mod):
    importlib.import_module("hutch.compat.llm_sandbox" + mod)


def test_top_level_names():
    import hutch.compat.llm_sandbox as lis

    for name in ["ArtifactSandboxSession", "InteractiveSandboxSession", "KernelType", "SandboxBackend",
                 "SecurityPolicy", "SecurityPattern", "SecurityIssueSeverity", "StreamCallback", "create_session",
                 "SandboxSession", "ValidationError", "DefaultImage", "SessionConfig"]:
        assert hasattr(lis, name), name


def test_exception_hierarchy():
    from hutch.compat.llm_sandbox import exceptions as e

    for cls in [e.SandboxTimeoutError, e.LanguageNotSupportedError, e.CommandEmptyError, e.ValidationError,
                e.ContainerError, e.SecurityViolationError, e.NotOpenSessionError]:
        assert issubclass(cls, e.SandboxError)
    assert str(e.LanguageNotSupportedError("cobol")) == "Language cobol is not supported"
    assert e.SandboxTimeoutError("t", timeout_duration=2.5).timeout_duration == 2.5


def test_enums_fold_case_and_refuse_unknown():
    from hutch.compat.llm_sandbox.const import SandboxBackend, SupportedLanguage

    assert SupportedLanguage("Python") is SupportedLanguage.PYTHON and str(SandboxBackend.PODMAN) == "podman"
    with pytest.raises(ValueError, match="'rust' is not a valid SupportedLanguage"):
        SupportedLanguage("rust")


def test_results_are_frozen_and_serialise():
    from dataclasses import FrozenInstanceError

    from hutch.compat.llm_sandbox.data import ConsoleOutput, ExecutionResult, FileType, PlotOutput

    r = ExecutionResult(exit_code=0, stdout="x", plots=[PlotOutput(FileType.PNG, "aGk=")])
    assert r.success() and not ConsoleOutput(exit_code=3).success()
    with pytest.raises(FrozenInstanceError):
        r.exit_code = 1
    assert "plots" not in json.loads(r.to_json())
    assert json.loads(r.to_json(include_plots=True))["plots"][0]["format"] == "png"


def test_policy_model_round_trip_and_bounds():
    from hutch.compat.llm_sandbox.exceptions import InvalidRegexPatternError
    from hutch.compat.llm_sandbox.pool.config import PoolConfig
    from hutch.compat.llm_sandbox.security import SecurityIssueSeverity as S
    from hutch.compat.llm_sandbox.security import SecurityPattern, SecurityPolicy

    p = SecurityPolicy(severity_threshold=S.MEDIUM, patterns=[SecurityPattern(pattern=r"os\.system", description="d", severity=2)])
    again = SecurityPolicy.model_validate(p.model_dump())
    assert again == p and again.patterns[0].severity is S.MEDIUM
    with pytest.raises(InvalidRegexPatternError):
        SecurityPattern(pattern="[", description="bad", severity=S.LOW)
    with pytest.raises(ValueError):
        PoolConfig(max_pool_size=0)
    with pytest.raises(ValueError, match="cannot be greater"):
        PoolConfig(min_pool_size=3, max_pool_size=2)


IMPORTS = {
    "python": ("os", ["import os", "import sys, os", "from os import path", "from os.path import join"],
               ["import osmodule", "from myos import x", "# import os"]),
    "javascript": ("fs", ["const fs = require('fs')", "import fs from \"fs\"", "import 'fs';"],
                   ["require('fsx')", "// require('fs')"]),
    "java": ("java.io", ["import java.io.File;", "import java.io.*;"], ["import java.iox.File;"]),
    "cpp": ("fstream", ["#include <fstream>", '#include "fstream"'], ["#include <fstreamx>", "// #include <fstream>"]),
    "go": ("os/exec", ['import "os/exec"', 'import (\n  "fmt"\n  "os/exec"\n)'], ['import "os/execx"']),
    "ruby": ("open3", ["require 'open3'", 'require_relative "open3"'], ['puts "please require \'open3\'"']),
    "r": ("httr", ["library(httr)", 'x <- 1; require("httr")'], ['print("load library(httr)")']),
}


@pytest.mark.parametrize("lang", sorted(IMPORTS))
def test_import_detection_per_language(lang):
    from hutch.compat.llm_sandbox.language_handlers.factory import LanguageHandlerFactory

    h = LanguageHandlerFactory.create_handler(lang)
    module, yes, no = IMPORTS[lang]
    pattern = h.get_import_patterns(module)
    for code in yes:
        assert re.search(pattern, h.filter_comments(code)), code
    for code in no:
        assert not re.search(pattern, h.filter_comments(code)), code


def make_session(policy, lang="python"):
    from hutch.compat.llm_sandbox.core.config import SessionConfig
    from hutch.compat.llm_sandbox.core.session_base import BaseSession

    class Scan(BaseSession):
        def open(self):
            pass

        def close(self):
            pass

        def _handle_timeout(self):
            pass

        def _connect_to_existing_container(self, cid):
            pass

        def _ensure_directory_exists(self, path):
            pass

        def _ensure_ownership(self, paths):
            pass

        def _process_non_stream_output(self, output):
            return "", ""

        def _process_stream_output(self, output, on_stdout=None, on_stderr=None):
            return "", ""

    return Scan(SessionConfig(lang=lang, security_policy=policy))


def test_is_safe_blocks_at_threshold_only():
    from hutch.compat.llm_sandbox.security import RestrictedModule, SecurityIssueSeverity as S, SecurityPattern, SecurityPolicy

    policy = SecurityPolicy(
        severity_threshold=S.MEDIUM,
        patterns=[SecurityPattern(pattern=r"\beval\(", description="eval", severity=S.LOW)],
        restricted_modules=[RestrictedModule(name="subprocess", description="processes", severity=S.HIGH)],
    )
    s = make_session(policy)
    assert s.is_safe("print(1)") == (True, [])
    safe, found = s.is_safe("eval('1')")
    assert safe and [p.description for p in found] == ["eval"]
    safe, found = s.is_safe("import subprocess\nsubprocess.run(['id'])")
    assert not safe and found[-1].description == "processes"
    assert s.is_safe("# import subprocess\nprint(2)")[0]
    s.is_safe("x")
    assert len(policy.patterns) == 2, "the restricted module's pattern is added once"


def test_run_refuses_blocked_code_before_running():
    from hutch.compat.llm_sandbox.exceptions import SecurityError, SecurityViolationError
    from hutch.compat.llm_sandbox.security import RestrictedModule, SecurityIssueSeverity as S, SecurityPolicy

    policy = SecurityPolicy(severity_threshold=S.LOW,
                            restricted_modules=[RestrictedModule(name="socket", description="net", severity=S.HIGH)])
    s = make_session(policy)
    s.container, s.is_open = object(), True
    with pytest.raises(SecurityError) as e:
        s.run("import socket")
    assert isinstance(e.value, SecurityViolationError)


def test_handlers_commands():
    from hutch.compat.llm_sandbox.language_handlers import CppHandler, PythonHandler
    from hutch.compat.llm_sandbox.language_handlers.runtime_context import RuntimeContext

    ctx = RuntimeContext(workdir="/w", python_executable_path="python3", pip_executable_path="python3 -m pip",
                         pip_cache_dir="/tmp/c")
    assert PythonHandler().get_execution_commands("/w/a.py", ctx) == ["python3 /w/a.py"]
    assert PythonHandler().get_library_installation_command("numpy", ctx) == "python3 -m pip install numpy --cache-dir /tmp/c"
    assert CppHandler().get_execution_commands("/w/a.cpp", ctx) == ["g++ -std=c++17 -o /w/a.out /w/a.cpp", "/w/a.out"]


def test_python_runs_on_llm_sandbox_python_where_built(monkeypatch, caplog):
    from hutch.compat.llm_sandbox import _images
    from hutch.compat.llm_sandbox.const import DefaultImage

    monkeypatch.setattr(_images, "_told_python", False)
    monkeypatch.setattr(_images, "_have", lambda name: name == "default")
    assert _images.hutch_image("python", None) == "default"
    assert "rootfs/llm-sandbox-python.recipe" in caplog.text  # said once, with the command
    monkeypatch.setattr(_images, "_have", lambda name: True)
    assert _images.hutch_image("python", None) == "llm-sandbox-python"
    assert _images.hutch_image("python", DefaultImage.PYTHON) == "llm-sandbox-python"
    assert _images.hutch_image("cpp", None) == "default"


def test_a_docker_reference_is_pulled_from_its_registry(monkeypatch):
    """An image that is no hutch manifest (ghcr.io/OWNER/NAME:TAG) is pulled
    as docker://, under the name the store gives it."""
    import hutch
    from hutch.compat.llm_sandbox import _images

    asked = []

    def pull(ref, *a, **k):
        asked.append(ref)
        if not ref.startswith("docker://"):
            raise hutch.InvalidArgument(22, f"{ref} is not an image reference such as ubuntu:24.04", None)
        return {"name": "ghcr.io_owner_name:main", "digest": "sha256:0"}

    monkeypatch.setattr(_images, "_have", lambda name: False)
    monkeypatch.setattr(hutch, "pull", pull)
    assert _images.hutch_image("python", "ghcr.io/owner/name:main") == "ghcr.io_owner_name:main"
    assert asked == ["ghcr.io/owner/name:main", "docker://ghcr.io/owner/name:main"]
