"""Measure the bytes of tool definitions a model reads per tool profile.

Usage: python3 tests/clients/profile_bytes.py /path/to/meta-utl-mcp

For each profile (every family, and the ones the README recommends) it asks the binary for
tools/list and counts, in UTF-8 bytes of compact JSON, what a client such as Claude Code puts in
front of the model for each tool (name, description, inputSchema), and the whole tools/list
result. Prints a Markdown table.
"""

import json
import subprocess
import sys

PROFILES = [None, "lessons,epistemic", "lessons", "epistemic", "meta_learning", "atc", "utl"]


def tools_list(binary, profile):
    args = [binary, "--db", ":memory:"] + (["--tools", profile] if profile else [])
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}) + "\n"
    out = subprocess.run(args, input=request.encode(), capture_output=True, check=True).stdout
    return json.loads(out)["result"]


def size(value):
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def main():
    binary = sys.argv[1]
    print("| profile | tools | model-visible bytes (name, description, inputSchema) | whole `tools/list` |")
    print("|---|---|---|---|")
    for profile in PROFILES:
        result = tools_list(binary, profile)
        tools = result["tools"]
        visible = sum(size({k: t[k] for k in ("name", "description", "inputSchema")}) for t in tools)
        print(f"| {profile or 'all (default)'} | {len(tools)} | {visible:,} | {size(result):,} |")


if __name__ == "__main__":
    main()
