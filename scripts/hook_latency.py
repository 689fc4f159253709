#!/usr/bin/env python3
"""Latency of the Claude Code plugin's hooks (issue 29), as Claude Code pays it: a fresh
`meta-utl-mcp hook EVENT` process per call, its JSON on stdin, until it exits.

    scripts/hook_latency.py BINARY [RUNS] [LESSONS]

Builds a throwaway git repository (origin github.com/acme/shop) and database, logs LESSONS
lessons (default 45) through the binary's own MCP server, then runs each hook RUNS times
(default 200) with a representative input and prints p50, p95 and max wall time per event,
in milliseconds. The failure hook writes (an attempt per run); the others only read.
Speed is measured here, never asserted in a test (docs/PERFORMANCE.md has the figures).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def mcp(binary, db, cwd, calls):
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "hook_latency", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for i, (name, args) in enumerate(calls, start=1):
        lines.append({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                      "params": {"name": name, "arguments": args}})
    text = "".join(json.dumps(l) + "\n" for l in lines)
    out = subprocess.run([binary, "--db", db, "--embedding-model", "off"], input=text.encode(),
                         cwd=cwd, capture_output=True, check=True)
    answers = [json.loads(l) for l in out.stdout.decode().splitlines() if l.strip()]
    bad = [a for a in answers if "error" in a or a.get("result", {}).get("isError")]
    if bad:
        sys.exit(f"seeding failed: {bad[0]}")


def percentile(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    lessons = int(sys.argv[3]) if len(sys.argv) > 3 else 45
    with tempfile.TemporaryDirectory() as tmp:
        repo = os.path.join(tmp, "shop")
        os.makedirs(os.path.join(repo, ".git"))
        with open(os.path.join(repo, ".git", "config"), "w") as f:
            f.write('[remote "origin"]\n\turl = git@github.com:acme/shop.git\n')
        db = os.path.join(tmp, "state.db")
        calls = [("log_lesson_learned", {
            "task_id": f"checkout flake {i}",
            "strategy_description": f"Raise the checkout integration test timeout to {30 + i} "
                                    f"seconds with `pytest --timeout={30 + i}`",
            "rca_summary": f"The test waits on a payment webhook that never arrives in CI "
                           f"(case {i}); a longer timeout only delays the failure",
            "failure_type": "LOGIC_ERROR", "source_agent": "claude"}) for i in range(lessons)]
        mcp(binary, db, repo, calls)
        base = {"session_id": "latency", "cwd": repo, "transcript_path": "/dev/null"}
        inputs = {
            "session-start": {**base, "hook_event_name": "SessionStart", "source": "startup"},
            "user-prompt-submit": {**base, "hook_event_name": "UserPromptSubmit",
                                   "prompt": "The checkout integration test times out waiting "
                                             "for the payment webhook again"},
            "pre-tool-use": {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                             "tool_input": {"command": "pytest --timeout=40 tests/checkout"}},
            "post-tool-use-failure": {**base, "hook_event_name": "PostToolUseFailure",
                                      "tool_name": "Bash",
                                      "tool_input": {"command": "pytest tests/checkout"},
                                      "error": "Exit code 1\nFAILED tests/checkout.py"},
            "stop": {**base, "hook_event_name": "Stop", "stop_hook_active": False},
        }
        env = {**os.environ, "META_UTL_DB": db}
        env.pop("META_UTL_PROJECT", None)
        print(f"{lessons} lessons, {runs} runs per hook, {binary}")
        print(f"{'hook':<24}{'p50 ms':>8}{'p95 ms':>8}{'max ms':>8}")
        for event, payload in inputs.items():
            data = json.dumps(payload).encode()
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                r = subprocess.run([binary, "hook", event], input=data, env=env,
                                   capture_output=True)
                times.append((time.perf_counter() - t0) * 1000)
                if r.returncode != 0:
                    sys.exit(f"{event}: exit {r.returncode}: {r.stderr.decode()}")
            print(f"{event:<24}{statistics.median(times):>8.1f}"
                  f"{percentile(times, 0.95):>8.1f}{max(times):>8.1f}")


if __name__ == "__main__":
    main()
