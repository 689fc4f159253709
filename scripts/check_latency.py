#!/usr/bin/env python3
"""Latency of check_strategy_blacklist on agent-written text, over stdio on a release binary
(issue 30's latency targets: p95 <= 1 ms without the model, <= 15 ms with it).

    scripts/check_latency.py BINARY [--model DIR] [--pairs FILE] [--rounds N]

Logs the failed strategies (lessons) of every task of the pair set (default: the agent
development set, 180 tasks, 364 lessons) into a fresh database, then checks every proposal of
the set against its task, one call at a time, ROUNDS times (default 3). The first round meets
each task's lessons for the first time in this process (they are analysed at that check); the
later rounds find them remembered, as a session that checks its task again does. Each check is
the whole tool call as a client sees it: JSON-RPC over the pipe, the decision, and the durable
write of the check's prediction. Prints p50 / p95 / p99 / max in milliseconds per round.
"""
import argparse, json, os, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("binary")
ap.add_argument("--model", help="embedding model folder (default: off, lexical only)")
ap.add_argument("--pairs", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                "blacklist_pairs_agent_dev.jsonl"))
ap.add_argument("--rounds", type=int, default=3)
a = ap.parse_args()

pairs = [json.loads(l) for l in open(a.pairs) if l.strip()]
lessons = {}
for r in pairs:
    lessons.setdefault(r["task"], [])
    if r["strategy"] not in lessons[r["task"]]:
        lessons[r["task"]].append(r["strategy"])

db = tempfile.mkdtemp() + "/state.db"
args = [a.binary, "--db", db, "--project", "latency", "--embedding-model", a.model or "off"]
env = dict(os.environ)
if a.model:
    env["META_UTL_REQUIRE_MODEL"] = "1"
p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, env=env)
next_id = 0


def call(method, params=None, notify=False):
    global next_id
    msg = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    if not notify:
        next_id += 1
        msg["id"] = next_id
    data = (json.dumps(msg) + "\n").encode()
    t = time.perf_counter()
    p.stdin.write(data)
    p.stdin.flush()
    if notify:
        return None, 0.0
    line = p.stdout.readline()
    elapsed = (time.perf_counter() - t) * 1000
    reply = json.loads(line)
    if "error" in reply or reply.get("result", {}).get("isError"):
        raise SystemExit(f"{method} failed: {line[:300]!r}")
    return reply, elapsed


call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "check_latency", "version": "1"}})
call("notifications/initialized", notify=True)
for task, strategies in lessons.items():
    for s in strategies:
        call("tools/call", {"name": "log_lesson_learned", "arguments": {
            "task_id": task, "strategy_description": s, "rca_summary": "it failed",
            "failure_type": "UNKNOWN", "source_agent": "check_latency"}})

# A fresh process, so that the first round meets every lesson for the first time.
p.stdin.close()
p.wait()
p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, env=env)
call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "check_latency", "version": "1"}})
call("notifications/initialized", notify=True)
# One warm-up call (the model's first forward pass allocates its buffers).
call("tools/call", {"name": "check_strategy_blacklist",
                    "arguments": {"task_id": "warm-up", "strategy": "warm up the process"}})


def pct(ts, q):
    return ts[min(len(ts) - 1, round((len(ts) - 1) * q))]


variant = f"model {a.model}" if a.model else "lexical only"
print(f"{len(pairs)} checks a round over {len(lessons)} tasks "
      f"({sum(map(len, lessons.values()))} lessons), {variant}")
for rnd in range(a.rounds):
    ts = []
    for r in pairs:
        _, ms = call("tools/call", {"name": "check_strategy_blacklist", "arguments": {
            "task_id": r["task"], "strategy": r["proposal"]}})
        ts.append(ms)
    ts.sort()
    label = "first sight of the lessons" if rnd == 0 else "lessons remembered"
    print(f"round {rnd + 1} ({label}): p50 {pct(ts, .5):.2f} ms, p95 {pct(ts, .95):.2f} ms, "
          f"p99 {pct(ts, .99):.2f} ms, max {ts[-1]:.2f} ms")
p.stdin.close()
p.wait()
