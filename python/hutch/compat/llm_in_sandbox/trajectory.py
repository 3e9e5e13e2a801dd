# SPDX-License-Identifier: Apache-2.0
"""A run's record, with LLM-in-Sandbox's fields and to_dict() output.
Plain dataclasses: pydantic is not needed."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class TrajectoryStep:
    thought: str = ""
    reasoning_content: str = ""
    action: Dict[str, Any] = field(default_factory=dict)
    observation: str = ""
    metadata: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "thought": self.thought,
            "reasoning_content": self.reasoning_content,
            "action": self.action,
            "observation": self.observation,
            "metadata": self.metadata,
        }


@dataclass
class Trajectory:
    problem_statement: str
    steps: List[TrajectoryStep] = field(default_factory=list)
    metadata: Dict[str, Any] = field(default_factory=dict)
    reward_calc_time: Optional[float] = None
    test_output: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "problem_statement": self.problem_statement,
            "steps": [s.to_dict() for s in self.steps],
            "metadata": self.metadata,
        }
