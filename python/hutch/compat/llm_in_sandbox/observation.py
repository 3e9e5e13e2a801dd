# SPDX-License-Identifier: Apache-2.0
"""The text a tool call's result reaches the model as, byte for byte
LLM-in-Sandbox 0.2.0's (tests/golden/lis/obs holds its own outputs).  The
backslash before each "[" is in what the model sees: LLM-in-Sandbox
escapes for its console and sends the same string."""

from typing import Optional

CONTINUE_MSG = (
    "\nYou forgot to use a function call in your response. \n"
    "YOU MUST USE A FUNCTION CALL IN EACH RESPONSE.\n\n"
    "IMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n"
)
FINISHED = "<<< Finished >>>"

# Output of more than 2 * KEEP_LINES lines keeps its first and last KEEP_LINES.
KEEP_LINES = 40
_DIVIDER = "-" * 50
_CUT = f"\n{_DIVIDER}\n<Observation truncated in middle for saving context>\n{_DIVIDER}\n"


def cut_middle(text: str, keep: int = KEEP_LINES) -> str:
    if not text:
        return ""
    # str.splitlines, as there: \f, \v, \x1c.. and \u2028 end lines too.
    lines = text.splitlines()
    if len(lines) <= 2 * keep:
        return text
    return "\n".join(lines[:keep]) + _CUT + "\n".join(lines[-keep:])


class Observation:
    """Observation(bash_output, error_code, action, num_lines=40, stdout=None,
    stderr=None); str() is the text the model gets."""

    def __init__(self, bash_output, error_code, action, num_lines: int = KEEP_LINES,
                 stdout: Optional[str] = None, stderr: Optional[str] = None):
        self.bash_output = bash_output
        self.error_code = error_code
        self.action = action
        self.num_lines = num_lines
        self.stdout = stdout
        self.stderr = stderr

    def __str__(self) -> str:
        name = getattr(self.action, "function_name", "") if self.action else ""
        if not name:
            return CONTINUE_MSG
        if name in ("submit", "finish"):
            return FINISHED
        head = f"Execution output of \\[{name}]:\n"
        if name not in ("execute_bash", "bash"):
            return head + f"{self.bash_output}"
        head = f"Exit code: {self.error_code}\n" + head
        if self.stdout is None and self.stderr is None:
            return head + cut_middle(self.bash_output or "", self.num_lines)
        out = cut_middle(self.stdout or "", self.num_lines)
        err = cut_middle(self.stderr or "", self.num_lines)
        text = head + "\\[STDOUT]\n" + (out if out.strip() else "")
        if err.strip():
            text += "\n\\[STDERR]\n" + err
        return text
