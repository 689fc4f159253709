#!/usr/bin/env bash
# Drive the release binary with the MCP Inspector CLI (pinned): list the tools, check that every
# tool schema is portable, call one read and one write tool. Prints one "N passed, N failed" line;
# exits 1 on any failure.
# Usage: tests/clients/inspector.sh /path/to/meta-utl-mcp
set -uo pipefail
inspector_pkg="@modelcontextprotocol/inspector@2.12.0"
bin="$(realpath "$1")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() { # name, command…
  local name="$1"; shift
  if "$@" >"$work/out" 2>"$work/err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name" >&2
    local f
    for f in "$work/err" "$work/out"; do [ -s "$f" ] && tail -n 5 "$f" >&2; done
  fi
}

(cd "$work" && timeout 300 npm install --silent --no-audit --no-fund "$inspector_pkg" >/dev/null 2>&1) || {
  echo "inspector: npm install of $inspector_pkg failed" >&2
  echo "inspector: 0 passed, 1 failed"
  exit 1
}
inspector() {
  (cd "$work" && timeout 60 npx --no-install mcp-inspector --cli "$bin" --db "$work/state.db" "$@")
}

# Each check writes the whole answer to a file before grepping it: `inspector | grep -q` would
# close the pipe early and, under pipefail, fail on the inspector's EPIPE.
list_has_tools() {
  inspector --method tools/list >"$work/list.json" && grep -q '"name": "get_meta_learning_status"' "$work/list.json"
}

# Schema portability. The Inspector lints every inputSchema and outputSchema it lists (`type`
# arrays, remote `$ref`s, schemas that constrain nothing, bare booleans). Without --strict it
# prints only a count; with --strict it prints each finding on stderr but exits non-zero (6) only
# for error-severity findings, and a `type` array is a warning. So this check reads the findings
# itself, from the `schemaFindings` that --strict --format json puts beside the result, and fails
# on any finding of any severity. The stderr report's "Warning:"/"Error:" lines are counted too,
# so a change in the JSON envelope cannot turn the check vacuous.
schemas_portable() {
  inspector --method tools/list --strict --format json >"$work/strict.json" 2>"$work/strict.err"
  local rc=$?
  node - "$work/strict.json" "$work/strict.err" "$rc" 2>"$work/portability.txt" <<'EOF'
const fs = require("fs");
const [jsonPath, errPath, rc] = process.argv.slice(2);
let envelope;
try {
  envelope = JSON.parse(fs.readFileSync(jsonPath, "utf8"));
} catch (e) {
  console.error(`no JSON answer from tools/list --strict (exit ${rc}): ${e.message}`);
  process.exit(1);
}
const tools = (envelope.result && envelope.result.tools) || [];
const results = envelope.schemaFindings || [];
const stderrFindings = fs.readFileSync(errPath, "utf8").split("\n")
  .filter((line) => /^(Warning|Error): tool "/.test(line)).length;
let count = 0;
const perTool = {};
for (const { toolName, findings } of results) {
  for (const f of findings) {
    count++;
    perTool[toolName] = (perTool[toolName] || 0) + 1;
    // The issue's first sentence says what is wrong; the rest is advice.
    const issue = String(f.issue).split(/\. /)[0];
    console.error(`PORTABILITY ${f.severity} ${toolName} ${f.schema}.${f.path}: ${issue} [${f.rule}]`);
  }
}
const clean = tools.filter((t) => !(t.name in perTool)).map((t) => t.name);
console.error(`portability: ${count} findings in ${Object.keys(perTool).length} of ${tools.length} tools` +
  (count ? ` (${Object.entries(perTool).map(([t, n]) => `${t} ${n}`).join(", ")})` : ""));
console.error(`portable: ${clean.join(", ") || "none"}`);
if (tools.length === 0) { console.error("tools/list returned no tools"); process.exit(1); }
if (count !== stderrFindings) {
  console.error(`the JSON findings (${count}) and the stderr report (${stderrFindings}) disagree`);
  process.exit(1);
}
process.exit(count === 0 && rc === "0" ? 0 : 1);
EOF
}

call_write() {
  inspector --method tools/call --tool-name record_prediction \
    --tool-arg embedder_index=3 --tool-arg predicted=0.9 --tool-arg actual=0.4 >"$work/write.json" \
    && grep -q '"interaction_count": 1' "$work/write.json"
}
call_read() {
  inspector --method tools/call --tool-name get_meta_learning_status >"$work/read.json" \
    && grep -q '"interaction_count": 1' "$work/read.json"
}
check "tools/list" list_has_tools
check "schema portability (tools/list --strict)" schemas_portable
# Every finding (and which tools are clean), not just the tail that check shows on failure.
cat "$work/portability.txt" >&2 2>/dev/null
check "tools/call record_prediction" call_write
check "tools/call get_meta_learning_status sees the write" call_read
echo "inspector: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
