#!/usr/bin/env python3
"""The worst wait of servers' writes while maintenance runs beside them (docs/RELIABILITY.md).

    python3 docs/reliability/import_stall.py target/debug/meta-utl-mcp [ROWS] [WRITERS]

Makes an export of ROWS directives (default 1,000,000) with a valid trailer, starts WRITERS
MCP servers (default 1) on one fresh database, each recording a directive every 20 ms, then
runs, one after another on the same database, `import FILE`, `export`, `backup DEST` and
`check`, and reports the servers' write latencies before and during each command (worst,
99th percentile, median) and how long each took. `STALL_LOG=FILE` keeps the first server's
log, `IMPORT_LOG=FILE` the import's.
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


def start_writer(binary, db, log, lat, stop, n):
    server = subprocess.Popen([binary, "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=log, env={**os.environ, "META_UTL_EMBEDDING_MODEL": "off"})

    def writer():
        i = 0
        while not stop.is_set():
            i += 1
            req = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "record_directive",
                "arguments": {"intervention_type": "FEEDBACK", "description": "live %d.%d" % (n, i)}}}
            t = time.perf_counter()
            server.stdin.write((json.dumps(req) + "\n").encode())
            server.stdin.flush()
            answer = json.loads(server.stdout.readline())
            lat.append((t, time.perf_counter() - t))
            assert "result" in answer and not answer["result"]["isError"], answer
            time.sleep(0.02)

    th = threading.Thread(target=writer)
    th.start()
    return server, th


def stats(xs):
    if not xs:
        return "n=0"
    xs = sorted(x * 1000 for x in xs)
    return "n=%d worst=%.1f ms p99=%.1f ms median=%.1f ms" % (
        len(xs), xs[-1], xs[int(len(xs) * 0.99)], xs[len(xs) // 2])


def main():
    binary = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    writers = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "s.db")
        lat = []  # (start time, seconds), every writer's
        stop = threading.Event()
        running = []
        for n in range(writers):
            log = open(os.environ["STALL_LOG"], "w") if n == 0 and os.environ.get("STALL_LOG") \
                else subprocess.DEVNULL
            running.append(start_writer(binary, db, log, lat, stop, n))
            time.sleep(0.2)  # the first one creates the file
        time.sleep(1)
        path = os.path.join(d, "big.jsonl")
        export_file(binary, db, path, rows)
        import_log = os.environ.get("IMPORT_LOG", os.devnull)
        commands = [
            ("import", [binary, "--db", db, "import", path], open(import_log, "w")),
            ("export", [binary, "--db", db, "export", "--out", os.path.join(d, "out.jsonl")], None),
            ("backup", [binary, "--db", db, "backup", os.path.join(d, "copy.db")], None),
            ("check", [binary, "--db", db, "check"], None),
        ]
        spans = []
        for name, argv, err in commands:
            t0 = time.perf_counter()
            done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=err or subprocess.PIPE)
            t1 = time.perf_counter()
            assert done.returncode == 0, (name, done.stderr)
            spans.append((name, t0, t1))
            time.sleep(0.5)
        stop.set()
        for server, th in running:
            th.join()
            server.stdin.close()
            server.wait()

        print("rows %d, %d writing server(s), a write every 20 ms each" % (rows, writers))
        first = spans[0][1]
        print("server writes before the commands: " + stats([s for t, s in lat if t < first - 0.5]))
        for name, t0, t1 in spans:
            during = [(s, t) for t, s in lat if t0 <= t <= t1]
            line = "%-6s took %6.1f s; server writes during it: %s" % (
                name, t1 - t0, stats([s for s, _ in during]))
            if during:
                line += " (worst began %.1f s in)" % (max(during)[1] - t0)
            print(line)


if __name__ == "__main__":
    main()
