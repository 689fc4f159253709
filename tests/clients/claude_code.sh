#!/usr/bin/env bash
# Add the release binary to Claude Code (pinned CLI from npm) as a user would, with
# `claude mcp add`, in a throwaway HOME and project folder, and require `claude mcp list` to report
# it connected. That health check starts the server and runs Claude Code's own handshake and
# tools/list; it needs no API key and no network. Prints one "N passed, N failed" line; exits 1 on
# any failure.
# Usage: tests/clients/claude_code.sh /path/to/meta-utl-mcp
# The client is the pinned one scripts/fetch_claude.sh installs (META_UTL_CLAUDE names an
# installed one, as .ci/run sets it; else it is installed here).
set -uo pipefail
bin="$(realpath "$1")"
scripts="$(cd "$(dirname "$0")/../../scripts" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/npm" "$work/home" "$work/project" "$work/tmp"
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
    for f in "$work/err" "$work/out"; do [ -s "$f" ] && tail -n 8 "$f" >&2; done
  fi
}

claude_bin="${META_UTL_CLAUDE:-}"
if [ -z "$claude_bin" ]; then
  claude_bin="$("$scripts/fetch_claude.sh" "$work/npm" | tail -n 1)" || {
    echo "claude-code: scripts/fetch_claude.sh failed" >&2
    echo "claude-code: 0 passed, 1 failed"
    exit 1
  }
fi
claude_pkg="@anthropic-ai/claude-code@$(sed -n 's/^VERSION="\([^"]*\)".*/\1/p' "$scripts/fetch_claude.sh")"

# Claude Code runs with nothing of the caller's environment but PATH: no API key, no config dir, no
# session variables of an outer Claude Code; the throwaway HOME holds all it writes (~/.claude.json
# with the project's servers) and TMPDIR its temporary files (else /tmp/claude-UID/…, left behind). The switches turn off the auto-updater, telemetry, error reporting
# and other non-essential traffic. MCP_TIMEOUT bounds the health check of each server.
claude() {
  (cd "$work/project" && timeout 90 env -i PATH="$PATH" HOME="$work/home" TMPDIR="$work/tmp" CLAUDE_CODE_TMPDIR="$work/tmp" LANG=C.UTF-8 TERM=dumb NO_COLOR=1 CI=true \
    DISABLE_AUTOUPDATER=1 DISABLE_UPDATES=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 MCP_TIMEOUT=20000 \
    "$claude_bin" "$@")
}

claude_version() {
  local version
  version="$(claude --version 2>&1)"
  echo "$version"
  [[ "$version" == "${claude_pkg##*@} "* ]]
}

# `claude mcp list` prints "NAME: COMMAND ARGS - STATUS", STATUS being "✔ Connected" or, for
# instance, "✘ Failed to connect — CONNECTION_CLOSED: …"; it exits 0 either way. The status is
# what follows the last " - " on the line that starts with "NAME: ".
status_of() { # name, file
  sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$2" | awk -v name="$1: " '
    index($0, name) == 1 { n = split($0, parts, " - "); print parts[n]; found = 1; exit }
    END { if (!found) print "(not listed)" }'
}
connected() { # name
  local status
  status="$(status_of "$1" "$work/list.txt")"
  echo "$1: $status"
  [[ "$status" =~ (^|[^[:alpha:]])Connected$ ]]
}
not_connected() { # name
  local status
  status="$(status_of "$1" "$work/list.txt")"
  echo "$1: $status"
  [[ "$status" != "(not listed)" && ! "$status" =~ (^|[^[:alpha:]])Connected$ ]]
}
list_servers() {
  claude mcp list >"$work/list.txt" 2>&1
  local rc=$?
  cat "$work/list.txt"
  return $rc
}

check "claude --version is ${claude_pkg##*@}" claude_version
# Options such as -e go after the server name, before `--`.
check "claude mcp add meta-utl" claude mcp add meta-utl -- "$bin" --db "$work/state.db"
check "claude mcp add meta-utl-agent -e META_UTL_TOOLS=lessons,epistemic" \
  claude mcp add meta-utl-agent -e META_UTL_TOOLS=lessons,epistemic -- "$bin" --db "$work/agent.db"
# A control the parsing must not mistake for a connection: the binary refuses an unknown family.
check "claude mcp add broken (control)" claude mcp add broken -- "$bin" --db "$work/broken.db" --tools no-such-family
check "claude mcp list" list_servers
check "meta-utl reported connected" connected meta-utl
check "meta-utl-agent reported connected" connected meta-utl-agent
check "broken reported not connected" not_connected broken
[ -s "$work/list.txt" ] && sed 's/^/  /' "$work/list.txt" >&2
echo "claude-code: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
