#!/usr/bin/env python3
"""Start-up to the first answer by database size, with the integrity check (README, Reliability).

    python3 docs/reliability/startup_check.py target/release/meta-utl-mcp

Grows databases with 16 kB directives through the binary, then times `ping` from a fresh
process 7 times each (median, warm page cache), and PRAGMA quick_check alone for comparison.
"""
import json, os, sqlite3, subprocess, sys, tempfile, time


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        for n in [0, 600, 3600, 9000]:
            db = os.path.join(d, "s%d.db" % n)
            desc = "d" * 16000
            lines = "".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "record_directive", "arguments": {"intervention_type": "FEEDBACK",
                                                          "description": "%d %s" % (i, desc)}}}) + "\n"
                            for i in range(n))
            subprocess.run([binary, "--db", db], input=lines.encode(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            times = []
            for _ in range(7):
                t = time.perf_counter()
                p = subprocess.Popen([binary, "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
                p.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
                p.stdin.flush()
                p.stdout.readline()
                times.append((time.perf_counter() - t) * 1000)
                p.stdin.close()
                p.wait()
            times.sort()
            c = sqlite3.connect(db)
            t = time.perf_counter()
            c.execute("PRAGMA quick_check").fetchall()
            check = (time.perf_counter() - t) * 1000
            c.close()
            print("%6.1f MB: first answer after %.1f ms (median of 7); quick_check alone %.1f ms"
                  % (os.path.getsize(db) / 1e6, times[3], check))


main()
