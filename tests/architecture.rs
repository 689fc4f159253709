//! The invariants of ARCHITECTURE.md, checked by reading the sources: where SQL, serde and
//! stdout may appear, that every file says what it holds, the size limits that keep the tool
//! layer thin, the order of the layers, the absence of import circles, and that every path the
//! documents name exists.

use std::path::{Path, PathBuf};

/// Largest file under `src/tools/`, in lines: 600. Source: commit ba95283, which split
/// `tools/mod.rs` into registry, app and wire/ to meet it; a design limit, not a measurement.
const MAX_TOOL_FILE_LINES: usize = 600;
/// Largest file under `src/server/`, in lines: 450; a design limit, which keeps the server
/// at one file per job (it was one `server.rs` of 800 lines).
const MAX_SERVER_FILE_LINES: usize = 450;
/// Longest tool handler (`fn run`, from its line to its closing brace), in lines: 60. Source:
/// commit ba95283; a handler parses, calls the service, persists and shapes the answer.
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
        // The console's answers go through its one output, out.rs, and a hook's through
        // hooks/mod.rs's `run`; neither runs in a process that serves MCP.
        |n| n.starts_with("src/server/") || n == "src/console/out.rs" || n == "src/hooks/mod.rs",
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

// ---------------------------------------------------------------------------------------------
// The house: layers, import cycles, SQL, and the paths the documents name

/// The floors of `src/`, bottom up: a module may name modules of its own floor or below, never
/// above. `lib.rs` declares every module and is left out.
const FLOORS: &[(&str, u8)] = &[
    ("protocol", 1),
    ("service", 1),
    ("files", 1),
    ("project", 1),
    ("store", 2),
    ("embedding", 3),
    ("semantic", 4),
    ("ops", 5),
    ("tools", 6),
    ("server", 7),
    ("console", 8),
    ("hooks", 8),
    ("main", 9),
];

/// A Rust file split by a small lexer: its code with comments removed and every string or
/// char literal emptied (`""`, line breaks kept), and the text of its string literals with
/// the line each starts on.
struct Lexed {
    code: String,
    literals: Vec<(usize, String)>,
}

fn lex(text: &str) -> Lexed {
    let c: Vec<char> = text.chars().collect();
    let mut code = String::with_capacity(text.len());
    let mut literals = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && at(i + 1) == '*' {
            i += 2;
            while i < c.len() && !(c[i] == '*' && at(i + 1) == '/') {
                if c[i] == '\n' {
                    line += 1;
                    code.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c[i] == '"'
            || (c[i] == 'r' && (at(i + 1) == '"' || at(i + 1) == '#'))
                && !at(i.wrapping_sub(1)).is_alphanumeric()
        {
            // A string literal: plain (escapes honoured) or raw (`r#"…"#`).
            let raw = c[i] == 'r';
            let mut hashes = 0;
            if raw {
                i += 1;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                if at(i) != '"' {
                    code.push('r');
                    continue;
                }
            }
            i += 1;
            let start = line;
            let mut s = String::new();
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '\n' {
                    line += 1;
                    code.push('\n');
                }
                if !raw && c[i] == '\\' {
                    s.push(c[i]);
                    s.push(at(i + 1));
                    if at(i + 1) == '\n' {
                        line += 1;
                        code.push('\n');
                    }
                    i += 2;
                    continue;
                }
                if c[i] == '"' && (0..hashes).all(|h| at(i + 1 + h) == '#') {
                    i += 1 + hashes;
                    break;
                }
                s.push(c[i]);
                i += 1;
            }
            code.push_str("\"\"");
            literals.push((start, s));
        } else if c[i] == '\'' && (at(i + 2) == '\'' || at(i + 1) == '\\') {
            // A char literal ('"', '\n', '\''); a lifetime has no closing quote.
            i += if at(i + 1) == '\\' { 2 } else { 1 };
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
            code.push_str("' '");
        } else {
            if c[i] == '\n' {
                line += 1;
            }
            code.push(c[i]);
            i += 1;
        }
    }
    Lexed { code, literals }
}

/// `code` (from [`lex`]) without the items under `#[cfg(test)]` (or `#[cfg(all(test, …))]`),
/// and the names of the child modules declared so (`#[cfg(test)] mod x;`), whose files are
/// test code too. The house is the shipped code: a test may reach across it.
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_mods = Vec::new();
    let mut rest = code;
    loop {
        let at = ["#[cfg(test)]", "#[cfg(all(test"]
            .iter()
            .filter_map(|m| rest.find(m))
            .min();
        let Some(at) = at else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let attr_end = after.find(']').map_or(after.len(), |e| e + 1);
        let item = &after[attr_end..];
        // The item ends at its first `;` before any `{`, or at the brace matching that `{`.
        let semi = item.find(';');
        let open = item.find('{');
        let end = match (semi, open) {
            (Some(s), Some(o)) if s < o => s + 1,
            (Some(s), None) => s + 1,
            (_, Some(o)) => {
                let mut depth = 0;
                let mut end = item.len();
                for (k, ch) in item[o..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = o + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, None) => item.len(),
        };
        let decl = item[..end].trim();
        if let Some(name) = decl
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ")
            .strip_prefix("mod ")
            .and_then(|m| m.strip_suffix(';'))
        {
            test_mods.push(name.trim().to_owned());
        }
        // Keep the line breaks, so that later line numbers stay right.
        out.extend(item[..end].chars().filter(|c| *c == '\n'));
        rest = &item[end..];
    }
    (out, test_mods)
}

/// The first words of a path that name this crate's modules from the file that holds it.
const RELATIVE_ROOTS: [&str; 4] = ["crate", "super", "self", "meta_utl_mcp"];

/// The module path of a source file (`src/store/sqlite/meta.rs` → `["store", "sqlite",
/// "meta"]`; `mod.rs` and `lib.rs` name their folder; `main.rs` is `["main"]`).
fn module_of(rel: &str) -> Vec<String> {
    let inner = rel.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = inner.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The file that holds module `path` or, failing that, its longest prefix that is a file.
fn file_of(path: &[String], files: &std::collections::BTreeSet<String>) -> Option<String> {
    for n in (0..=path.len()).rev() {
        let p = path[..n].join("/");
        for candidate in [format!("src/{p}.rs"), format!("src/{p}/mod.rs")] {
            if files.contains(&candidate) {
                return Some(candidate);
            }
        }
        if n == 0 {
            return Some("src/lib.rs".into());
        }
    }
    None
}

/// The paths a `use` tree names, expanded (`a::{b, c::d as e}` → `a::b`, `a::c::d`), each with
/// the name it binds in the file.
fn expand_use(tree: &str) -> Vec<(String, String)> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    expand_into("", &tree, &mut out);
    out
}

fn expand_into(prefix: &str, tree: &str, out: &mut Vec<(String, String)>) {
    if let Some(open) = tree.find('{') {
        let head = &tree[..open];
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        let bytes: Vec<char> = inner.chars().collect();
        let mut parts = Vec::new();
        for (k, ch) in bytes.iter().enumerate() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(bytes[start..k].iter().collect::<String>());
                    start = k + 1;
                }
                _ => {}
            }
        }
        parts.push(bytes[start..].iter().collect());
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            expand_into(&format!("{prefix}{head}"), &part, out);
        }
    } else {
        let (path, alias) = match tree.split_once("as") {
            Some((p, a)) if p.ends_with("::") || a.is_empty() => (tree.to_owned(), None),
            Some((p, a)) => (p.to_owned(), Some(a.to_owned())),
            None => (tree.to_owned(), None),
        };
        let full = format!("{prefix}{path}");
        let full = full.strip_suffix("::self").unwrap_or(&full).to_owned();
        let bound = alias.unwrap_or_else(|| full.rsplit("::").next().unwrap_or("").to_owned());
        out.push((full, bound));
    }
}

/// `path` (`crate::a::b`, `super::c`, `self::d`, `meta_utl_mcp::e`) from the crate root, or
/// `None` for any other path (another crate's, or a child module's: the caller looks).
fn absolute(path: &str, module: &[String], rel: &str) -> Option<Vec<String>> {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let first = *segs.first()?;
    // The module a `super`/`self` counts from: a file `a/b.rs` is module a::b.
    let mut base: Vec<String> = module.to_vec();
    if rel == "src/main.rs" {
        base.clear();
    }
    let mut rest = &segs[..];
    match first {
        "crate" | "meta_utl_mcp" => {
            base.clear();
            rest = &segs[1..];
        }
        "self" => rest = &segs[1..],
        "super" => {
            while rest.first() == Some(&"super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        // Another crate, or a child module of the file (the caller looks for that).
        _ => return None,
    }
    base.extend(rest.iter().map(|s| (*s).to_owned()));
    Some(base)
}

/// Each file of `src/` and the files it names, with the names it uses from each.
fn imports() -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<String>>>
{
    use std::collections::{BTreeMap, BTreeSet};
    let all = src();
    let files: BTreeSet<String> = all.iter().map(|(p, _)| rel(p)).collect();
    let ident = |s: &str| {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
    };
    // Files that are test code: declared under `#[cfg(test)]`, and everything below them.
    let mut test_files: BTreeSet<String> = BTreeSet::new();
    for (path, text) in &all {
        let name = rel(path);
        let (_, test_mods) = without_tests(&lex(text).code);
        for m in test_mods {
            let mut child = module_of(&name);
            child.push(m);
            if let Some(f) = file_of(&child, &files).filter(|f| module_of(f) == child) {
                test_files.insert(f);
            }
        }
    }
    let is_test = |f: &str| {
        test_files
            .iter()
            .any(|t| t == f || is_ancestor(t, f) && !t.ends_with("lib.rs"))
    };
    let mut graph = BTreeMap::new();
    for (path, text) in &all {
        let name = rel(path);
        if is_test(&name) {
            continue;
        }
        let module = module_of(&name);
        let code = without_tests(&lex(text).code).0;
        let mut named: Vec<Vec<String>> = Vec::new();
        // Module aliases bound by `use`, for the paths that go on through them.
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let resolve = |p: &str| -> Option<Vec<String>> {
            if let Some(a) = absolute(p, &module, &name) {
                return Some(a);
            }
            // A child module of this file (`mod x;` then `x::y`).
            let first = p.split("::").next()?;
            let mut child = if name == "src/main.rs" {
                Vec::new()
            } else {
                module.clone()
            };
            child.push(first.to_owned());
            let f = file_of(&child, &files)?;
            (module_of(&f) == child).then(|| {
                let mut full = module.clone();
                full.extend(p.split("::").map(str::to_owned));
                full
            })
        };
        let mut rest = code.as_str();
        while let Some(at) = rest.find("use ") {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + 4..];
            let end = after.find(';').unwrap_or(after.len());
            if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
                for (p, bound) in expand_use(&after[..end]) {
                    if let Some(abs) = resolve(&p) {
                        if file_of(&abs, &files).is_some_and(|f| module_of(&f) == abs) {
                            aliases.insert(bound, abs.clone());
                        }
                        named.push(abs);
                    }
                }
            }
            rest = &after[end..];
        }
        // Paths in the code: `crate::…`, `super::…`, `self::…`, and through a module alias.
        let chars: Vec<char> = code.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let starts = k == 0
                || !(chars[k - 1].is_alphanumeric() || chars[k - 1] == '_' || chars[k - 1] == ':');
            if starts && (chars[k].is_alphabetic() || chars[k] == '_') {
                let mut end = k;
                while end < chars.len()
                    && (chars[end].is_alphanumeric()
                        || chars[end] == '_'
                        || (chars[end] == ':' && chars.get(end + 1) == Some(&':'))
                        || (chars[end] == ':' && end > 0 && chars[end - 1] == ':'))
                {
                    end += 1;
                }
                let p: String = chars[k..end].iter().collect();
                let p = p.trim_end_matches(':');
                if p.contains("::") {
                    let head = ident(p);
                    if let Some(base) = aliases.get(&head) {
                        let mut full = base.clone();
                        full.extend(p.split("::").skip(1).map(str::to_owned));
                        named.push(full);
                    } else if let Some(abs) = RELATIVE_ROOTS
                        .contains(&head.as_str())
                        .then(|| resolve(p))
                        .flatten()
                    {
                        named.push(abs);
                    }
                }
                k = end.max(k + 1);
            } else {
                k += 1;
            }
        }
        let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for abs in named {
            if let Some(f) = file_of(&abs, &files) {
                let used = abs.get(module_of(&f).len()).cloned().unwrap_or_default();
                let list = edges.entry(f).or_default();
                if !used.is_empty() && !list.contains(&used) {
                    list.push(used);
                }
            }
        }
        edges.remove(&name);
        edges.retain(|f, _| !is_test(f));
        graph.insert(name, edges);
    }
    graph
}

/// Whether `ancestor` is the module file (`mod.rs`, `lib.rs`, or `a.rs` beside `a/`) of a
/// folder that holds `file`.
fn is_ancestor(ancestor: &str, file: &str) -> bool {
    let dir = if ancestor == "src/lib.rs" {
        "src/".to_owned()
    } else if let Some(d) = ancestor.strip_suffix("mod.rs") {
        d.to_owned()
    } else {
        // `a.rs` with its children in `a/`.
        format!("{}/", ancestor.trim_end_matches(".rs"))
    };
    file != ancestor && file.starts_with(&dir)
}

#[test]
fn no_module_names_a_higher_floor() {
    let floor = |file: &str| {
        let top = module_of(file).first().cloned().unwrap_or_default();
        FLOORS.iter().find(|(m, _)| *m == top).map(|(_, f)| *f)
    };
    let mut wrong = Vec::new();
    for (file, edges) in imports() {
        let Some(mine) = floor(&file) else { continue };
        for (other, names) in edges {
            if let Some(theirs) = floor(&other).filter(|t| *t > mine) {
                wrong.push(format!(
                    "{file} (floor {mine}) names {other} (floor {theirs}): {}",
                    names.join(", ")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a lower layer names a higher one (see FLOORS):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    use std::collections::BTreeMap;
    // A file naming the module file of a folder it stands in (`store/meta.rs` taking
    // `StoreError` from `store/mod.rs`) is Rust's module tree, not an arrow between rooms.
    let graph: BTreeMap<String, Vec<String>> = imports()
        .into_iter()
        .map(|(f, e)| {
            let to = e.into_keys().filter(|t| !is_ancestor(t, &f)).collect();
            (f, to)
        })
        .collect();
    // Tarjan's strongly connected components; any with two files or more is a circle.
    struct Walk<'g> {
        graph: &'g BTreeMap<String, Vec<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        circles: Vec<Vec<String>>,
    }
    fn visit<'g>(w: &mut Walk<'g>, v: &'g str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for t in w.graph.get(v).into_iter().flatten() {
            let t = t.as_str();
            if !w.index.contains_key(t) {
                visit(w, t);
                let l = w.low[t].min(w.low[v]);
                w.low.insert(v, l);
            } else if w.stack.contains(&t) {
                let l = w.index[t].min(w.low[v]);
                w.low.insert(v, l);
            }
        }
        if w.low[v] == w.index[v] {
            let mut circle = Vec::new();
            while let Some(t) = w.stack.pop() {
                circle.push(t.to_owned());
                if t == v {
                    break;
                }
            }
            if circle.len() > 1 {
                circle.sort();
                w.circles.push(circle);
            }
        }
    }
    let mut w = Walk {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        circles: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    let shown: Vec<String> = w
        .circles
        .iter()
        .map(|c| {
            let ties: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| c.contains(b))
                        .map(move |b| format!("  {a} -> {b}"))
                })
                .collect();
            format!("{}:\n{}", c.join(", "), ties.join("\n"))
        })
        .collect();
    assert!(
        shown.is_empty(),
        "files that import each other in a circle:\n{}",
        shown.join("\n")
    );
}

/// Whether a string literal reads as SQL: a statement's keywords in capitals, as this
/// project writes SQL (prose such as "select a file" does not count).
fn is_sql(s: &str) -> bool {
    let words: Vec<&str> = s
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let pair = |a: &str, b: &str| {
        words
            .iter()
            .position(|w| *w == a)
            .is_some_and(|i| words[i + 1..].contains(&b))
    };
    let next = |a: &str, b: &str| words.windows(2).any(|w| w[0] == a && w[1] == b);
    let update_set = words.windows(3).any(|w| w[0] == "UPDATE" && w[2] == "SET");
    pair("SELECT", "FROM")
        || next("INSERT", "INTO")
        || update_set
        || next("DELETE", "FROM")
        || next("CREATE", "TABLE")
        || next("CREATE", "INDEX")
}

#[test]
fn no_sql_outside_the_store() {
    // src/ and benches/; tests/ may hold SQL, because some of them open a database file as an
    // outside party would (to damage a row and see the server refuse it, or to read what a
    // call left behind), which is what they test.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = src();
    files.extend(sources(&root.join("benches")));
    let mut found = Vec::new();
    for (path, text) in &files {
        let name = rel(path);
        if name.starts_with("src/store/") {
            continue;
        }
        for (line, s) in lex(text).literals {
            if is_sql(&s) {
                let shown: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
                found.push(format!("{name}:{line}: \"{shown}\""));
            }
        }
    }
    assert!(
        found.is_empty(),
        "SQL outside src/store/ (the store is the only module that speaks to the database):\n{}",
        found.join("\n")
    );
}

/// The repository paths a Markdown text names: in backticks, or as link targets, that begin
/// with one of the repository's folders (`src/…`, `tests/…`, `docs/…`, `scripts/…`,
/// `benches/…`). Link targets are read from `base`, the document's folder.
fn named_paths(text: &str, base: &str) -> Vec<String> {
    const ROOTS: [&str; 5] = ["src/", "tests/", "docs/", "scripts/", "benches/"];
    let mut out = Vec::new();
    let mut push = |raw: &str, from: &str| {
        // A command line names its program first; `:LINE` and `#anchor` are not the path.
        let p = raw.split_whitespace().next().unwrap_or("");
        let p = p.split('#').next().unwrap_or("");
        let p = p.split(':').next().unwrap_or("");
        let p = p.trim_end_matches(['.', ',', ';', ')']);
        let mut parts: Vec<&str> = if from.is_empty() {
            Vec::new()
        } else {
            from.split('/').collect()
        };
        for seg in p.split('/') {
            match seg {
                ".." => {
                    parts.pop();
                }
                "." | "" => {}
                s => parts.push(s),
            }
        }
        let joined = parts.join("/") + if p.ends_with('/') { "/" } else { "" };
        // A placeholder (`src/tools/<family>.rs`) stands for many files, none in particular.
        if ROOTS.iter().any(|r| joined.starts_with(r)) && !joined.contains(['<', '…']) {
            out.push(joined);
        }
    };
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else { break };
        push(&after[..close], "");
        rest = &after[close + 1..];
    }
    let mut rest = text;
    while let Some(open) = rest.find("](") {
        let after = &rest[open + 2..];
        let Some(close) = after.find(')') else { break };
        let target = &after[..close];
        if !target.contains("://") {
            push(target, base);
        }
        rest = &after[close + 1..];
    }
    out
}

/// Whether `p` exists under `root`; a `*` in its last part matches any run of characters.
fn exists(root: &Path, p: &str) -> bool {
    let (dir, last) = p.trim_end_matches('/').rsplit_once('/').unwrap_or(("", p));
    match last.split_once('*') {
        None => root.join(p).exists(),
        Some((head, tail)) => std::fs::read_dir(root.join(dir)).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with(head) && n.ends_with(tail) && n.len() >= head.len() + tail.len()
            })
        }),
    }
}

#[test]
fn every_path_the_documents_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut documents = vec![
        ("README.md".to_owned(), String::new()),
        ("ARCHITECTURE.md".to_owned(), String::new()),
    ];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    docs.sort();
    documents.extend(
        docs.into_iter()
            .map(|n| (format!("docs/{n}"), "docs".to_owned())),
    );
    let mut missing = Vec::new();
    for (doc, base) in &documents {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for (n, line) in text.lines().enumerate() {
            for p in named_paths(line, base) {
                if !exists(root, &p) {
                    missing.push(format!("{doc}:{}: {p}", n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths the documents name that do not exist:\n{}",
        missing.join("\n")
    );
}
