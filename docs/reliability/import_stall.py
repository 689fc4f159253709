#!/usr/bin/env python3
"""The worst wait of a server's write while `import` runs beside it (docs/RELIABILITY.md).

    python3 docs/reliability/import_stall.py target/debug/meta-utl-mcp [ROWS]

Makes an export of ROWS directives (default 1,000,000) with a valid trailer, starts an MCP
server on a fresh database and has it record a directive every 20 ms, then runs
`import FILE` on the same database and reports the server's write latencies before and during
the import (worst, 99th percentile) and how long the import took.
"""
import hashlib, json, os, subprocess, sys, tempfile, threading, time, uuid


def export_file(binary, db, path, rows):
    header = subprocess.run([binary, "--db", db, "export"], capture_output=True, check=True)
    first = header.stdout.split(b"\n", 1)[0] + b"\n"
    h = hashlib.sha256(first)
    with open(path, "wb") as f:
        f.write(first)
        for i in range(rows):
            line = (json.dumps({"type": "directive", "id": str(uuid.uuid4()), "task_id": "T-%d" % (i % 1000),
                                "intervention_type": "FEEDBACK", "description": "imported %d" % i,
                                "actor": "loader", "created_at": "2026-01-01T00:00:00.000000Z"},
                               separators=(",", ":")) + "\n").encode()
            h.update(line)
            f.write(line)
        trailer = {"type": "trailer", "records": rows, "counts": {"directive": rows},
                   "sha256": h.hexdigest()}
        f.write((json.dumps(trailer) + "\n").encode())


def main():
    binary = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "s.db")
        log = open(os.environ["STALL_LOG"], "w") if os.environ.get("STALL_LOG") else subprocess.DEVNULL
        server = subprocess.Popen([binary, "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=log, env={**os.environ, "META_UTL_EMBEDDING_MODEL": "off"})
        lat = []  # (start time, seconds)
        stop = threading.Event()

        def writer():
            i = 0
            while not stop.is_set():
                i += 1
                req = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                    "name": "record_directive",
                    "arguments": {"intervention_type": "FEEDBACK", "description": "live %d" % i}}}
                t = time.perf_counter()
                server.stdin.write((json.dumps(req) + "\n").encode())
                server.stdin.flush()
                answer = json.loads(server.stdout.readline())
                lat.append((t, time.perf_counter() - t))
                assert "result" in answer and not answer["result"]["isError"], answer
                time.sleep(0.02)

        th = threading.Thread(target=writer)
        th.start()
        time.sleep(1)
        path = os.path.join(d, "big.jsonl")
        export_file(binary, db, path, rows)
        t0 = time.perf_counter()
        imp = subprocess.run([binary, "--db", db, "import", path], stdout=subprocess.PIPE, stderr=open(os.environ.get("IMPORT_LOG", os.devnull), "w"))
        t1 = time.perf_counter()
        time.sleep(0.5)
        stop.set()
        th.join()
        server.stdin.close()
        server.wait()
        assert imp.returncode == 0, imp.stderr

        def stats(xs):
            xs = sorted(x * 1000 for x in xs)
            return "n=%d worst=%.1f ms p99=%.1f ms median=%.1f ms" % (
                len(xs), xs[-1], xs[int(len(xs) * 0.99)], xs[len(xs) // 2])

        before = [s for t, s in lat if t < t0 - 0.5]
        during = [s for t, s in lat if t0 <= t <= t1]
        print("rows %d, import took %.1f s" % (rows, t1 - t0))
        print("server writes before the import: " + stats(before))
        print("server writes during the import: " + stats(during))
        worst = max((s, t) for t, s in lat if t0 <= t <= t1)
        print("the worst began %.1f s into the import (wall clock %s)" % (
            worst[1] - t0, time.strftime("%H:%M:%S", time.gmtime(time.time() - (time.perf_counter() - worst[1])))))


if __name__ == "__main__":
    main()
