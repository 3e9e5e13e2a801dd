# SPDX-License-Identifier: Apache-2.0
"""LLM-in-Sandbox's benchmark module: its task folders' rewards and configs."""

from .runner import BenchmarkResult, load_reward_function, load_task_config, run_benchmark

__all__ = ["run_benchmark", "load_reward_function", "load_task_config", "BenchmarkResult"]
