//! The invariants of ARCHITECTURE.md, checked by reading the sources: where SQL, serde and
//! stdout may appear, that every file says what it holds, and the size limits that keep the tool
//! layer thin.

use std::path::{Path, PathBuf};

/// Largest file under `src/tools/`, in lines.
const MAX_TOOL_FILE_LINES: usize = 600;
/// Largest file under `src/server/`, in lines.
const MAX_SERVER_FILE_LINES: usize = 450;
/// Longest tool handler (`fn run`), in lines.
const MAX_HANDLER_LINES: usize = 60;

fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    out.sort();
    out
}

fn src() -> Vec<(PathBuf, String)> {
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

fn rel(p: &Path) -> String {
    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .display()
        .to_string()
}

/// Lines of code, without comment lines and string literals (so a doc comment or a test's text
/// that names `rusqlite` or `tokio` does not count).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, String)> + '_ {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, without_strings(l)))
}

/// `line` with the contents of its `"…"` string literals removed (escapes honoured).
fn without_strings(line: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in line.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    in_string = false;
                    out.push(c);
                }
                _ => {}
            }
        } else {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

/// Whether `line` holds `word` where it starts a token (`print!(` inside `eprint!(` does not
/// count).
fn holds(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(i, _)| {
        !line[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn violations(
    files: &[(PathBuf, String)],
    allowed: impl Fn(&str) -> bool,
    words: &[&str],
) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        let name = rel(path);
        if allowed(&name) {
            continue;
        }
        for (n, line) in code_lines(text) {
            for w in words {
                if holds(&line, w) {
                    out.push(format!("{name}:{n}: {}", line.trim()));
                }
            }
        }
    }
    out
}

#[test]
fn every_file_opens_with_a_module_doc_line() {
    let mut root = src();
    root.extend(sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"),
    ));
    let missing: Vec<String> = root
        .iter()
        .filter(|(_, t)| !t.starts_with("//!"))
        .map(|(p, _)| rel(p))
        .collect();
    assert!(
        missing.is_empty(),
        "files without a //! first line: {missing:?}"
    );
}

#[test]
fn only_the_store_speaks_sql() {
    let v = violations(
        &src(),
        |n| n.starts_with("src/store/"),
        &["rusqlite", "postgres::"],
    );
    assert!(
        v.is_empty(),
        "a database client outside src/store/:\n{}",
        v.join("\n")
    );
}

#[test]
fn the_service_does_no_io_and_speaks_no_json() {
    let service: Vec<_> = src()
        .into_iter()
        .filter(|(p, _)| rel(p).starts_with("src/service/"))
        .collect();
    let v = violations(
        &service,
        |_| false,
        &[
            "serde",
            "tokio",
            "std::fs",
            "std::io",
            "std::net",
            "Instant::now",
            "Utc::now",
        ],
    );
    assert!(
        v.is_empty(),
        "I/O or JSON in src/service/:\n{}",
        v.join("\n")
    );
}

#[test]
fn only_the_server_writes_to_stdout() {
    let v = violations(
        &src(),
        // The console's answers go through its one output, out.rs; it never runs in a process
        // that serves MCP.
        |n| n.starts_with("src/server/") || n == "src/console/out.rs",
        &["println!", "print!(", "dbg!", "stdout()"],
    );
    assert!(
        v.is_empty(),
        "stdout outside src/server/:\n{}",
        v.join("\n")
    );
}

#[test]
fn only_model_install_downloads() {
    // The HTTP client lives in the hub installer; the installer is called by `model install`
    // in main.rs only, so the MCP server never downloads anything.
    let client = violations(&src(), |n| n == "src/embedding/hub.rs", &["ureq"]);
    assert!(
        client.is_empty(),
        "an HTTP client outside src/embedding/hub.rs:\n{}",
        client.join("\n")
    );
    let callers = violations(
        &src(),
        |n| n.starts_with("src/embedding/") || n == "src/main.rs",
        &["install_from_hub"],
    );
    assert!(
        callers.is_empty(),
        "a download outside `model install`:\n{}",
        callers.join("\n")
    );
}

/// The line count of each `fn run(` body in `text` (from its line to its closing brace).
fn handler_lengths(text: &str) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.trim_start().starts_with("fn run(") {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let close = " ".repeat(indent) + "}";
        if let Some(end) = lines[i..].iter().position(|l| *l == close) {
            out.push((i + 1, end + 1));
        }
    }
    out
}

#[test]
fn the_tool_layer_stays_thin() {
    let mut problems = Vec::new();
    for (path, text) in src() {
        let name = rel(&path);
        let n = text.lines().count();
        if name.starts_with("src/tools/") && n > MAX_TOOL_FILE_LINES {
            problems.push(format!("{name}: {n} lines > {MAX_TOOL_FILE_LINES}"));
        }
        if name.starts_with("src/server/") && n > MAX_SERVER_FILE_LINES {
            problems.push(format!("{name}: {n} lines > {MAX_SERVER_FILE_LINES}"));
        }
        if name.starts_with("src/tools/") {
            for (line, len) in handler_lengths(&text) {
                if len > MAX_HANDLER_LINES {
                    problems.push(format!(
                        "{name}:{line}: handler of {len} lines > {MAX_HANDLER_LINES}"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
