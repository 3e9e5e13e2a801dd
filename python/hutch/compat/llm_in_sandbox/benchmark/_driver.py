# SPDX-License-Identifier: Apache-2.0
# Runs in the scoring sandbox as `python3 -I -c`: reads (secret, answer,
# ground truth, keyword arguments) in marshal format on stdin (values only:
# marshal runs nothing), imports /hutch-task/reward.py and calls its
# compute_score.  The result goes out on a copy of stdout taken before the
# task's code runs, on a line that starts with the secret; the task's own
# output goes to stderr.
import importlib.util
import marshal
import math
import os
import sys
import traceback

secret, answer, truth, kwargs = marshal.loads(sys.stdin.buffer.read())
out = os.dup(1)
os.dup2(2, 1)
sys.stdin = open(os.devnull)
sys.path.insert(0, "/hutch-task")
try:
    spec = importlib.util.spec_from_file_location("reward", "/hutch-task/reward.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not hasattr(mod, "compute_score"):
        raise AttributeError("reward.py must define compute_score function")
    score = mod.compute_score(answer, truth, **kwargs)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise TypeError(f"compute_score returned {score!r}, not a finite number")
    line = f"{secret} ok {float(score)!r}"
except BaseException as e:
    text = "".join(traceback.format_exception_only(type(e), e)).strip().replace("\n", " | ")
    line = f"{secret} error {text[:4000]}"
sys.stdout.flush()
os.write(out, (line + "\n").encode("utf-8", "replace"))
