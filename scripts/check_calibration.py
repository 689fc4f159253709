#!/usr/bin/env python3
"""How well the blacklist check's stated probability is calibrated (issue 31), on data it was
not fitted on.

For each labelled pair set, a fresh server logs every failed strategy of the set as a lesson,
checks every proposal, and closes each check with the pair's label (1: the same approach, 0:
another) through record_prediction; get_calibration_metrics {source: "lessons"} then reports
ECE and Brier of the probabilities as stated. On the development set, level 2 fits the
temperature T; the frozen test set and the held-out set are then scored as stated (T = 1) and
under the development T (σ(logit(p)/T), computed here the way the server maps them), so the
temperature is judged on pairs it never saw. Only aggregate figures are printed.

    python3 scripts/check_calibration.py target/release/meta-utl-mcp [--model DIR]
"""

import json
import math
import os
import subprocess
import sys
import tempfile

SETS = [
    ("development (agent dev)", "tests/data/blacklist_pairs_agent_dev.jsonl"),
    ("frozen test (agent test)", "tests/data/blacklist_pairs_agent_test.jsonl"),
    ("held-out (agent holdout)", "tests/data/blacklist_pairs_agent_holdout.jsonl"),
    ("development 2 (agent dev2)", "tests/data/blacklist_pairs_agent_dev2.jsonl"),
    ("second test (agent test2)", "tests/data/blacklist_pairs_agent_test2.jsonl"),
    ("development 3 (agent dev3)", "tests/data/blacklist_pairs_agent_dev3.jsonl"),
    ("third test (agent test3)", "tests/data/blacklist_pairs_agent_test3.jsonl"),
    ("fourth test (agent test4)", "tests/data/blacklist_pairs_agent_test4.jsonl"),
]


class Server:
    def __init__(self, binary, db, model):
        env = dict(os.environ, META_UTL_PROJECT="calibration", META_UTL_EMBEDDING_MODEL=model)
        self.p = subprocess.Popen(
            [binary, "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, env=env)
        self.n = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "check_calibration", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.p.stdin.write(json.dumps(message) + "\n")
        self.p.stdin.flush()

    def request(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            r = json.loads(self.p.stdout.readline())
            if r.get("id") == self.n:
                return r

    def call(self, name, args):
        r = self.request("tools/call", {"name": name, "arguments": args})
        if "error" in r or r["result"].get("isError") and "structuredContent" not in r["result"]:
            raise RuntimeError(f"{name} {args}: {r}")
        return r["result"]["structuredContent"]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def ece_brier(samples):
    """ECE over 10 equal-width bins (bin k holds (k/10, (k+1)/10], the first also 0) and the
    Brier score."""
    bins = [[0, 0.0, 0.0] for _ in range(10)]
    for p, y in samples:
        k = min(max(math.ceil(p * 10), 1), 10) - 1
        bins[k][0] += 1
        bins[k][1] += p
        bins[k][2] += y
    n = len(samples)
    ece = sum(c / n * abs(h / c - s / c) for c, s, h in bins if c)
    brier = sum((p - y) ** 2 for p, y in samples) / n
    return ece, brier


def calibrate(p, t):
    p = min(max(p, 1e-12), 1 - 1e-12)
    return 1 / (1 + math.exp(-math.log(p / (1 - p)) / t))


def run_set(binary, model, path):
    pairs = [json.loads(line) for line in open(path) if line.strip()]
    with tempfile.TemporaryDirectory() as d:
        s = Server(binary, os.path.join(d, "c.db"), model)
        for q in pairs:
            s.call("log_lesson_learned", {
                "task_id": q["task"], "strategy_description": q["strategy"],
                "rca_summary": "it did not fix the failure", "failure_type": "LOGIC_ERROR",
                "source_agent": "check_calibration"})
        samples = []
        for q in pairs:
            r = s.call("check_strategy_blacklist", {"task_id": q["task"], "strategy": q["proposal"]})
            y = 1 if q["label"] == "same" else 0
            s.call("record_prediction", {"prediction_id": r["prediction_id"], "actual": y})
            samples.append((r["probability"], y))
        m = s.call("get_calibration_metrics", {"source": "lessons", "timeframe": "30d"})
        fit = s.call("trigger_recalibration", {"level": 2, "source": "lessons", "dry_run": True})
        s.close()
    assert m["observation_count"] == len(pairs), m
    ece, brier = ece_brier(samples)
    assert abs(ece - m["raw_metrics"]["ece"]) < 1e-9 and abs(brier - m["raw_metrics"]["brier"]) < 1e-9
    t = fit["recalibration"]["temperature_fitted"] or 1.0
    return samples, t


def main():
    binary = sys.argv[1]
    model = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else "off"
    results = [(name, *run_set(binary, model, path)) for name, path in SETS]
    t_dev = results[0][2]
    print(f"matcher: {'embedding model' if model != 'off' else 'lexical'}; "
          f"temperature fitted on the development set: T = {t_dev:.3f}")
    print("| set | pairs | ECE as stated | Brier as stated | ECE at dev T | Brier at dev T |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, samples, _ in results:
        ece, brier = ece_brier(samples)
        ece_t, brier_t = ece_brier([(calibrate(p, t_dev), y) for p, y in samples])
        print(f"| {name} | {len(samples)} | {ece:.3f} | {brier:.3f} | {ece_t:.3f} | {brier_t:.3f} |")


if __name__ == "__main__":
    main()
