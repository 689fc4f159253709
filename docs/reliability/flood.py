#!/usr/bin/env python3
"""Peak RSS of meta-utl-mcp flooded by a client that never reads stdout (README, Reliability).

    python3 docs/reliability/flood.py target/release/meta-utl-mcp big|batches|limit

big:     8 x three lines just under 16 MiB: [0,0,...], one 16 MiB string, [0.5,0.5,...]
batches: 100 batches of 256 tools/list (12 kB in, 20 MB of answers each)
limit:   20 lines just under the 64 MiB cost limit: 640,000 floats, then 16,000 strings of 1 kB

Prints the server's VmHWM once it has taken no more input and grown no more for 5 s.
"""
import os, subprocess, sys, tempfile, threading, time


def call(i, tool, arguments):
    return ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n'
            % (i, tool, arguments)).encode()


def lines_for(kind):
    obs = "record_calibration_observations"
    if kind == "big":
        zeros = '{"observations":[' + "0," * (8 * 1024 * 1024 - 100) + "0]}"
        text = '{"observations":"' + "x" * (16 * 1024 * 1024 - 200) + '"}'
        floats = '{"observations":[' + "0.5," * (4 * 1024 * 1024 - 100) + "0]}"
        return [call(3 * i + k, obs, a) for i in range(8) for k, a in enumerate((zeros, text, floats))]
    if kind == "batches":
        batch = "[" + ",".join('{"jsonrpc":"2.0","id":%d,"method":"tools/list"}' % i for i in range(256)) + "]\n"
        return [batch.encode()] * 100
    if kind == "limit":
        floats = '{"old_fingerprint":[' + "0.5," * 640000 + "0.5]}"
        strings = '{"old_fingerprint":[' + ",".join(['"' + "s" * 1000 + '"'] * 16000) + "]}"
        return [call(i, "gwt_compute_delta_sc", floats) for i in range(20)] + \
               [call(100 + i, "gwt_compute_delta_sc", strings) for i in range(20)]
    sys.exit(__doc__)


def main():
    binary, kind = sys.argv[1], sys.argv[2]
    lines = lines_for(kind)
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.Popen([binary, "--db", os.path.join(d, "state.db")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        sent = [0]

        def feed():
            for line in lines:
                p.stdin.write(line)
                p.stdin.flush()
                sent[0] += 1

        threading.Thread(target=feed, daemon=True).start()
        peak, last, started = 0, (-1, time.time(), 0), time.time()
        while time.time() - last[1] < 5 and time.time() - started < 300:
            time.sleep(0.1)
            with open("/proc/%d/status" % p.pid) as f:
                peak = next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
            if (sent[0], peak) != last[::2]:
                last = (sent[0], time.time(), peak)
        print("%s: %d of %d lines taken, peak RSS %.0f MB" % (kind, sent[0], len(lines), peak / 1000))
        p.kill()
        p.wait()


main()
