//! The smallest stdio MCP server the official Rust SDK (rmcp) makes: it answers `initialize`,
//! `ping` and `tools/list` (no tools), and nothing else. Start-up yardstick for meta-utl-mcp.

use rmcp::{ServerHandler, ServiceExt, transport::stdio};

/// A server with the SDK's default handlers.
struct Minimal;

impl ServerHandler for Minimal {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Minimal.serve(stdio()).await?;
    service.waiting().await?;
    Ok(())
}
