#!/usr/bin/env python3
"""Latency of check_strategy_blacklist for a task id the project has not used, beside a known
task, over stdio on a release binary (issue 28's same-words lookup and other-task lesson).

    scripts/new_task_check.py BINARY [LESSONS] [STRATEGY]

Logs LESSONS lessons (default 20000; 10 a task) in one project, then times 200 checks of new
task ids and 200 of a known task, one at a time, and prints p50 and p95 in milliseconds.
"""
import json, subprocess, sys, tempfile, time

binary = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
strategy = sys.argv[3] if len(sys.argv) > 3 else "Mock payment gateway checkout"
db = tempfile.mkdtemp() + "/state.db"
args = [binary, "--db", db, "--embedding-model", "off", "--project", "p"]
init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "new_task_check", "version": "1"}}}
lines = [init, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
for i in range(n):
    lines.append({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
        "name": "log_lesson_learned", "arguments": {
            "task_id": f"task {i // 10} area {i % 97}",
            "strategy_description": f"Raise the timeout of service {i} to {i % 50} seconds",
            "rca_summary": "r", "failure_type": "UNKNOWN", "source_agent": "a"}}})
subprocess.run(args, input="".join(json.dumps(l) + "\n" for l in lines).encode(),
               capture_output=True, check=True)
p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
p.stdin.write((json.dumps(init) + "\n").encode()); p.stdin.flush(); p.stdout.readline()
time.sleep(3)  # the background integrity check of a large file


def check(i, task):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "name": "check_strategy_blacklist",
        "arguments": {"task_id": task, "strategy": strategy}}}) + "\n").encode())
    p.stdin.flush()
    t = time.perf_counter()
    p.stdout.readline()
    return (time.perf_counter() - t) * 1000


for label, task in [("new task ids", None), ("known task", "task 3 area 30")]:
    ts = sorted(check(1000 + i, task or f"brand new task {i}") for i in range(200))
    print(f"{label}: p50 {ts[100]:.2f} ms, p95 {ts[190]:.2f} ms")
p.stdin.close()
p.wait()
