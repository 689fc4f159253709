"""Drive meta-utl-mcp with the official MCP Python SDK, 1.x or 2.x, in every protocol era it speaks.

Usage: python python_sdk_client.py /path/to/meta-utl-mcp

For each era it starts the binary over stdio on a fresh temporary database, lists the tools,
calls every tool with the example arguments its input schema publishes, checks each structured
result against the tool's outputSchema (the SDK validates too), and makes one invalid call per
tool family plus one to an unknown tool. The eras:

- "handshake": the SDK's own initialize (2025-11-25 in both SDKs);
- "2025-06-18": an initialize that asks for 2025-06-18, sent through the SDK's public
  send_request (neither SDK takes a version for initialize());
- "stateless": 2.x only, server/discover and the 2026-07-28 revision (1.x has no discover).

Invalid arguments must be answered by negotiated revision (SEP-1303): from 2025-11-25 on and in
the stateless revision a tool result with isError and the message as text; in 2025-06-18 a
JSON-RPC -32602. An unknown tool is -32602 in every era.

1.x names the fields as the wire does (result.structuredContent, tool.inputSchema), 2.x in
snake case (result.structured_content); the script detects which from the SDK's own models.
Prints one "N passed, N failed" line; exits 1 on any failure.
"""

import asyncio
import json
import re
import sys
import tempfile
import traceback
from importlib.metadata import version as package_version
from pathlib import Path

import jsonschema
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

try:  # 2.x
    from mcp.shared.exceptions import MCPError
except ImportError:  # 1.x
    from mcp.shared.exceptions import McpError as MCPError

SDK = package_version("mcp")
SNAKE = "structured_content" in types.CallToolResult.model_fields


def field_name(snake: str) -> str:
    """A model field's name in this SDK: snake case in 2.x, the wire's camel case in 1.x."""
    return snake if SNAKE else re.sub(r"_([a-z])", lambda m: m.group(1).upper(), snake)


def field(obj, snake: str):
    return getattr(obj, field_name(snake))


# The first revision whose sessions get argument errors as tool results (SEP-1303).
SEP_1303 = "2025-11-25"

# One invalid call per tool family, and a word its message must contain (the field at fault). A
# family whose tools are not listed is skipped. In the eras from 2025-11-25 on each must come back
# as a tool result with isError and the message in its text; the lessons family also puts its
# structured error {success: false, error: "VALIDATION_ERROR", detail} in structuredContent, the
# others put none. In a 2025-06-18 session each must be JSON-RPC -32602 naming the field.
INVALID_CALLS = [
    ("meta-learning", "get_meta_learning_log", {"event_type": "bogus"}, "event_type"),
    ("meta-learning", "record_prediction", {"embedder_index": 13, "predicted": 0.5, "actual": 0.5}, "embedder_index"),
    ("atc", "trigger_recalibration", {"level": 5}, "level"),
    ("utl", "gwt_compute_delta_sc", {"vertex_id": "not-a-uuid"}, "vertex_id"),
    ("epistemic", "epistemic_action", {"action_type": "guess", "target": "x", "confidence": 0.5, "rationale": "r"}, "action_type"),
    ("lessons", "log_lesson_learned", {"task_id": "t"}, "strategy_description"),
]
STRUCTURED_ERROR_FAMILIES = {"lessons"}
UNKNOWN_TOOL = "no_such_tool"

# Embedder fields and shapes (SPEC §3) to build a fingerprint for gwt_compute_delta_sc, whose
# example is too large to be published in tools/list.
DENSE = {"e1_semantic": 1024, "e2_temporal_recent": 512, "e3_temporal_periodic": 512,
         "e4_temporal_positional": 512, "e5_causal": 768, "e7_code": 1536, "e8_graph": 384,
         "e9_hdc": 1024, "e10_multimodal": 768, "e11_entity": 384}


def fingerprint(seed: int) -> dict:
    def value(i: int, j: int) -> float:
        return ((i * 7919 + j * 104729 + seed * 1299709) % 2001 - 1000) / 1000.0 or 0.5

    fp = {name: [value(k, j) for j in range(dim)] for k, (name, dim) in enumerate(DENSE.items())}
    for name, offset in (("e6_sparse", 11), ("e13_splade", 13)):
        indices = sorted({(seed * 31 + offset * 977 + j * 1543) % 30522 for j in range(40)})
        fp[name] = {"indices": indices, "values": [0.1 + (j % 9) / 10 for j in range(len(indices))]}
    fp["e12_late_interaction"] = [[value(50 + t, j) for j in range(128)] for t in range(8)]
    return fp


def example_for(tool) -> dict | None:
    # The server publishes each tool's example arguments under _meta (the SDK's `meta`), not in
    # the input schema that clients send to their model.
    example = (getattr(tool, "meta", None) or {}).get("meta-utl-mcp/example")
    if example is not None:
        return example
    if tool.name == "gwt_compute_delta_sc":
        return {"vertex_id": "6f1c1c4e-8e0a-4c55-9a43-1d1f0a9b2c3d",
                "old_fingerprint": fingerprint(1), "new_fingerprint": fingerprint(2)}
    return None


passed = 0
failed = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}", file=sys.stderr)


async def initialize_at(session: ClientSession, version: str):
    """An initialize that asks for `version`, through the SDK's public request API."""
    client_info = types.Implementation(name="meta-utl-mcp-ci", version="0")
    params = types.InitializeRequestParams(**{
        field_name("protocol_version"): version,
        "capabilities": types.ClientCapabilities(),
        field_name("client_info"): client_info,
    })
    request = types.InitializeRequest(params=params)
    initialized = types.InitializedNotification()
    if not SNAKE:  # 1.x wraps requests and notifications in its root models
        request = types.ClientRequest(request)
        initialized = types.ClientNotification(initialized)
    result = await session.send_request(request, types.InitializeResult)
    if hasattr(session, "adopt"):  # 2.x keeps the negotiated state in the session
        session.adopt(result)
    await session.send_notification(initialized)
    return result


async def open_era(session: ClientSession, era: str) -> str:
    """Open the session in `era`; return the negotiated protocol version."""
    if era == "handshake":
        init = await session.initialize()
        check(f"{era}: initialize", field(init, "server_info").name == "meta-utl-mcp", repr(init))
        return field(init, "protocol_version")
    if era == "stateless":
        disc = await session.discover()
        check(f"{era}: discover", "2026-07-28" in disc.supported_versions, repr(disc))
        return session.protocol_version
    init = await initialize_at(session, era)
    check(f"{era}: initialize", field(init, "server_info").name == "meta-utl-mcp", repr(init))
    return field(init, "protocol_version")


async def invalid_call(session: ClientSession, label: str, tool: str, args: dict, word: str,
                       as_result: bool, structured_error: bool) -> None:
    """One invalid call: a tool result with isError (as_result) or JSON-RPC -32602."""
    try:
        result = await session.call_tool(tool, args)
    except MCPError as e:
        ok = not as_result and e.error.code == -32602 and word in e.error.message
        check(label, ok, f"expected {'an isError result' if as_result else '-32602'}, "
                         f"got error {e.error.code}: {e.error.message}")
        return
    if not as_result:
        check(label, False, f"expected -32602, got a result: {result}")
        return
    text = result.content[0].text if result.content else ""
    structured = field(result, "structured_content")
    ok = field(result, "is_error") is True and word in text
    if structured_error:
        ok = ok and isinstance(structured, dict) and structured.get("success") is False \
            and structured.get("error") == "VALIDATION_ERROR" and isinstance(structured.get("detail"), str)
    else:
        ok = ok and structured is None
    check(label, ok, f"expected an isError result naming {word!r}, got {result}")


async def exercise(binary: str, era: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        params = StdioServerParameters(command=binary, args=["--db", str(Path(tmp) / "state.db")])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                negotiated = await open_era(session, era)
                expected = {"handshake": SEP_1303, "stateless": "2026-07-28"}.get(era, era)
                # The SDK's own handshake may one day ask for a newer revision; never an older one.
                ok = negotiated >= expected if era == "handshake" else negotiated == expected
                check(f"{era}: negotiated {expected}", ok, str(negotiated))
                listed = await session.list_tools()
                tools = {t.name: t for t in listed.tools}
                check(f"{era}: tools listed", len(tools) >= 5, str(list(tools)))
                for tool_name, tool in tools.items():
                    args = example_for(tool)
                    if args is None:
                        check(f"{era}: {tool_name} has an example", False, "no _meta example")
                        continue
                    try:
                        result = await session.call_tool(tool_name, args)
                    except Exception as e:  # noqa: BLE001 - report any failure of the call
                        check(f"{era}: call {tool_name}", False, f"{type(e).__name__}: {e}")
                        continue
                    check(f"{era}: call {tool_name}", not field(result, "is_error"), repr(result.content)[:300])
                    structured = field(result, "structured_content")
                    output_schema = field(tool, "output_schema")
                    if output_schema is not None:
                        try:
                            jsonschema.validate(structured, output_schema)
                            check(f"{era}: {tool_name} output matches outputSchema", True)
                        except jsonschema.ValidationError as e:
                            check(f"{era}: {tool_name} output matches outputSchema", False, e.message)
                    text = json.loads(result.content[0].text)
                    check(f"{era}: {tool_name} text equals structuredContent", text == structured,
                          f"structuredContent is {structured!r:.200}")
                as_result = negotiated >= SEP_1303
                for family, tool_name, args, word in INVALID_CALLS:
                    if tool_name in tools:
                        await invalid_call(session, f"{era}: invalid {family} call {tool_name}", tool_name, args,
                                           word, as_result, family in STRUCTURED_ERROR_FAMILIES)
                # An unknown tool is a protocol error in every revision.
                try:
                    result = await session.call_tool(UNKNOWN_TOOL, {})
                    check(f"{era}: unknown tool", False, f"expected -32602, got a result: {result}")
                except MCPError as e:
                    check(f"{era}: unknown tool", e.error.code == -32602 and UNKNOWN_TOOL in e.error.message,
                          f"code {e.error.code}: {e.error.message}")
                # After the invalid calls the server still serves.
                again = await session.list_tools()
                check(f"{era}: still serving", len(again.tools) == len(tools))


async def main() -> int:
    binary = sys.argv[1]
    print(f"python-sdk: mcp {SDK}")
    eras = ["handshake", "2025-06-18"]
    if hasattr(ClientSession, "discover"):
        eras.append("stateless")
    else:
        print(f"python-sdk: mcp {SDK} has no server/discover; the stateless era is not run")
    for era in eras:
        try:
            await asyncio.wait_for(exercise(binary, era), timeout=120)
        except Exception:  # noqa: BLE001 - any crash of a run is a failure
            check(f"{era}: run", False, traceback.format_exc())
    print(f"python-sdk: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
