#!/usr/bin/env python3
"""SIGTERM at a random moment while 20,000 requests are piped (README, Reliability).

    python3 docs/reliability/sigterm_trials.py target/release/meta-utl-mcp [TRIALS]

Each trial compares the answers with the complete lines the server took from the pipe (what
is left in the pipe after it exited was never read): every one must be answered, exit 0.
"""
import json, os, random, signal, subprocess, sys, tempfile, threading, time


def main():
    binary = sys.argv[1]
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    random.seed(7)
    lines = []
    for i in range(1, 20001):
        if i % 4 == 0:
            m = {"name": "get_meta_learning_status", "arguments": {}}
        else:
            m = {"name": "record_prediction", "arguments": {"embedder_index": i % 13, "predicted": 0.9, "actual": 0.4}}
        lines.append(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": m}) + "\n")
    data = "".join(lines).encode()
    failed, taken_per_trial = 0, []
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as d:
            r, w = os.pipe()
            p = subprocess.Popen([binary, "--db", os.path.join(d, "state.db")], stdin=r,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            answers = []
            reader = threading.Thread(target=lambda: answers.extend(p.stdout.read().splitlines()))
            reader.start()
            wf = os.fdopen(w, "wb", buffering=0)

            def feed():
                try:
                    wf.write(data)
                except OSError:
                    pass

            writer = threading.Thread(target=feed, daemon=True)
            writer.start()
            time.sleep(random.uniform(0.05, 0.6))
            p.send_signal(signal.SIGTERM)
            p.wait()
            reader.join()
            os.set_blocking(r, False)
            left = b""
            while True:
                try:
                    chunk = os.read(r, 1 << 20)
                except BlockingIOError:
                    if not writer.is_alive():
                        break
                    time.sleep(0.01)
                    continue
                if not chunk:
                    break
                left += chunk
            complete = data[: len(data) - len(left)].count(b"\n")
            ids = sorted(json.loads(a)["id"] for a in answers)
            failed += not (ids == list(range(1, complete + 1)) and p.returncode == 0)
            taken_per_trial.append(complete)
            wf.close()
            os.close(r)
    print("%d trials, %d failed; complete lines taken per trial: %d to %d"
          % (trials, failed, min(taken_per_trial), max(taken_per_trial)))


main()
