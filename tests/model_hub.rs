//! `model install` from the Hugging Face hub, driving the real binary against a real HTTP
//! server in this process (tiny_http) that serves a hub-shaped tree: files at
//! `/{owner}/{name}/resolve/{revision}/{path}`, `model.safetensors` answered with a 302 to
//! another path as the hub redirects it to its CDN, the hub's `X-Error-Message` on errors.
//! `HF_ENDPOINT` points the binary at it. This is the hub's URL layout and redirect, not
//! huggingface.co itself (no model hub is reachable from the test machines).
//!
//! A CONNECT proxy in this process checks that the proxy variables are honoured.
//!
//! The full install needs the real weights (`META_UTL_EMBEDDING_MODEL`, skipped with a line on
//! stderr otherwise); the error cases serve small files of their own and always run.

#![cfg(feature = "embedding")]

mod common;

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use common::{MODEL_ENV, Server, assert_no_leftovers, bin, real_model};
use meta_utl_mcp::embedding::{DEFAULT_MODEL_SHA256, sha256_file};
use serde_json::json;

/// One repository the test hub serves.
struct Repo {
    /// The files, as a model folder.
    dir: PathBuf,
    /// The one revision it has.
    revision: &'static str,
    /// The token it requires, if private.
    token: Option<&'static str>,
}

/// A request the test hub received: its path and `Authorization` header.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    auth: Option<String>,
}

/// A hub-shaped HTTP server on 127.0.0.1, stopped on drop.
struct TestHub {
    server: Arc<tiny_http::Server>,
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    thread: Option<JoinHandle<()>>,
}

impl TestHub {
    fn start(repos: HashMap<&'static str, Repo>) -> TestHub {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let url = format!("http://127.0.0.1:{port}");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (server, seen, base) = (Arc::clone(&server), Arc::clone(&seen), url.clone());
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let path = request.url().to_string();
                    let auth = request
                        .headers()
                        .iter()
                        .find(|h| h.field.equiv("Authorization"))
                        .map(|h| h.value.to_string());
                    seen.lock().unwrap().push(Seen {
                        path: path.clone(),
                        auth: auth.clone(),
                    });
                    let _ = answer(request, &repos, &base, &path, auth.as_deref());
                }
            })
        };
        TestHub {
            server,
            url,
            seen,
            thread: Some(thread),
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for TestHub {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).unwrap()
}

/// The hub's error answer: a status, `X-Error-Code`, `X-Error-Message` and the message as body.
fn hub_error(
    request: tiny_http::Request,
    status: u16,
    code: &str,
    message: &str,
) -> std::io::Result<()> {
    request.respond(
        tiny_http::Response::from_string(message)
            .with_status_code(status)
            .with_header(header("X-Error-Code", code))
            .with_header(header("X-Error-Message", message)),
    )
}

fn answer(
    request: tiny_http::Request,
    repos: &HashMap<&'static str, Repo>,
    base: &str,
    path: &str,
    auth: Option<&str>,
) -> std::io::Result<()> {
    let serve = |request: tiny_http::Request, file: &Path| match std::fs::File::open(file) {
        Ok(f) => request.respond(tiny_http::Response::from_file(f)),
        Err(_) => hub_error(request, 404, "EntryNotFound", "Entry not found"),
    };
    // The "CDN": /cdn-lfs/{owner}/{name}/{file}.
    if let Some(rest) = path.strip_prefix("/cdn-lfs/") {
        let mut parts = rest.splitn(3, '/');
        let (owner, name, file) = (parts.next(), parts.next(), parts.next());
        let repo = owner
            .zip(name)
            .and_then(|(o, n)| repos.get(format!("{o}/{n}").as_str()));
        return match (repo, file) {
            (Some(repo), Some(file)) => serve(request, &repo.dir.join(file)),
            _ => hub_error(
                request,
                404,
                "NoSuchKey",
                "The specified key does not exist.",
            ),
        };
    }
    let mut parts = path.trim_start_matches('/').splitn(5, '/');
    let (owner, name, resolve, revision, file) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let repo_id = format!("{owner}/{name}");
    let Some(repo) = repos.get(repo_id.as_str()).filter(|_| resolve == "resolve") else {
        return hub_error(request, 401, "RepoNotFound", "Repository not found");
    };
    if let Some(token) = repo.token
        && auth != Some(format!("Bearer {token}").as_str())
    {
        let message = format!(
            "Access to model {repo_id} is restricted. You must have access to it and be \
             authenticated to access it. Please log in."
        );
        return hub_error(request, 401, "GatedRepo", &message);
    }
    if revision != repo.revision {
        let message = format!("Invalid rev id: {revision}");
        return hub_error(request, 404, "RevisionNotFound", &message);
    }
    if file == "model.safetensors" {
        let location = format!("{base}/cdn-lfs/{repo_id}/{file}");
        return request
            .respond(tiny_http::Response::empty(302).with_header(header("Location", &location)));
    }
    serve(request, &repo.dir.join(file))
}

fn one_repo(
    id: &'static str,
    dir: &Path,
    token: Option<&'static str>,
) -> HashMap<&'static str, Repo> {
    HashMap::from([(
        id,
        Repo {
            dir: dir.to_path_buf(),
            revision: "main",
            token,
        },
    )])
}

/// A small hub-shaped tree that is not a model: the required files, no optional ones, and
/// `weights` as model.safetensors (`None`: no weights either). Only the checksum or an HTTP
/// error can stop an install from it, which is all the error cases need.
fn fake_tree(dir: &Path, weights: Option<&[u8]>, with_tokenizer: bool) {
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"model_type": "bert"}"#).unwrap();
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 384}"#,
    )
    .unwrap();
    if with_tokenizer {
        std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
    }
    if let Some(bytes) = weights {
        std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    }
}

/// `meta-utl-mcp model install ARGS` with `HF_ENDPOINT=endpoint` and `env`, in a clean
/// environment (no proxy, token, model or data-home variables from outside): exit code and
/// stderr.
fn install(endpoint: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(bin());
    cmd.args(["model", "install"])
        .args(args)
        .stdin(Stdio::null());
    for var in [
        MODEL_ENV,
        "XDG_DATA_HOME",
        "HF_TOKEN",
        "ALL_PROXY",
        "all_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HF_ENDPOINT", endpoint);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.stdout.is_empty(),
        "model install writes nothing to stdout"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_model_installed_from_the_hub_is_loaded_and_used_by_the_server() {
    let Some(model) = real_model("a_model_installed_from_the_hub_is_loaded_and_used") else {
        return;
    };
    let hub = TestHub::start(one_repo(
        "sentence-transformers/all-MiniLM-L6-v2",
        &model,
        None,
    ));
    let tmp = tempfile::tempdir().unwrap();
    let token = "hf_test_token_never_printed";
    // No --from: the default source, into the default folder under XDG_DATA_HOME.
    let (code, stderr) = install(
        &hub.url,
        &[],
        &[("XDG_DATA_HOME", s(tmp.path())), ("HF_TOKEN", token)],
    );
    assert_eq!(code, 0, "{stderr}");
    let dest = tmp.path().join("meta-utl-mcp/models/all-MiniLM-L6-v2");
    assert!(stderr.contains(&dest.display().to_string()), "{stderr}");
    assert!(stderr.contains(DEFAULT_MODEL_SHA256), "{stderr}");
    assert!(
        !stderr.contains(token),
        "the token is never printed: {stderr}"
    );
    // Not a terminal: one line per file, each naming its URL.
    let base = format!(
        "{}/sentence-transformers/all-MiniLM-L6-v2/resolve/main",
        hub.url
    );
    for file in [
        "config.json",
        "tokenizer.json",
        "1_Pooling/config.json",
        "model.safetensors",
    ] {
        assert!(
            stderr.contains(&format!("downloaded {file} ("))
                && stderr.contains(&format!("{base}/{file}")),
            "{file}: {stderr}"
        );
    }
    assert_eq!(
        sha256_file(&dest.join("model.safetensors")).unwrap(),
        DEFAULT_MODEL_SHA256
    );
    assert_no_leftovers(dest.parent().unwrap());

    let seen = hub.seen();
    let first = &seen[0];
    assert_eq!(
        first.path,
        "/sentence-transformers/all-MiniLM-L6-v2/resolve/main/config.json"
    );
    assert_eq!(
        first.auth.as_deref(),
        Some(format!("Bearer {token}").as_str())
    );
    assert!(
        seen.iter().any(|r| r.path.starts_with("/cdn-lfs/")),
        "the weights came through the redirect: {seen:?}"
    );
    // Absent optional files were asked for and skipped.
    if !model.join("vocab.txt").exists() {
        assert!(
            stderr.contains("vocab.txt: not in the repository (404), skipped"),
            "{stderr}"
        );
    }

    let db = tmp.path().join("state.db");
    let mut server = Server::start_at(&db, &["--embedding-model", s(&dest)]);
    server.initialize("2025-06-18");
    server.tool_ok(
        "log_lesson_learned",
        json!({"task_id": "T-1", "strategy_description": "Parse the HTML with regular expressions",
               "rca_summary": "nested tags broke it", "failure_type": "LOGIC_ERROR",
               "source_agent": "test"}),
    );
    let r = server.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": "T-1", "strategy": "I tried using a regex to parse the html page"}),
    );
    assert_eq!(r["matcher"]["kind"], "embedding", "{r}");
    assert_eq!(r["matcher"]["model"], "all-MiniLM-L6-v2", "{r}");
    assert_eq!(r["blacklisted"], true, "{r}");
    server.finish();
}

#[test]
fn corrupted_weights_are_refused_naming_both_hashes_and_the_old_model_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let corrupt = b"these bytes are not the all-MiniLM-L6-v2 weights".as_slice();
    fake_tree(&tree, Some(corrupt), true);
    let found = sha256_file(&tree.join("model.safetensors")).unwrap();
    let hub = TestHub::start(one_repo("someone/minilm-mirror", &tree, None));

    let models = tmp.path().join("models");
    let dest = models.join("all-MiniLM-L6-v2");
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::write(dest.join("config.json"), "the earlier model").unwrap();

    let (code, stderr) = install(
        &hub.url,
        &["--from", "hf://someone/minilm-mirror", "--to", s(&dest)],
        &[],
    );
    assert_eq!(code, 2, "{stderr}");
    let url = format!(
        "{}/someone/minilm-mirror/resolve/main/model.safetensors",
        hub.url
    );
    assert!(stderr.contains(&url), "names the URL: {stderr}");
    assert!(
        stderr.contains(DEFAULT_MODEL_SHA256),
        "names the expected hash: {stderr}"
    );
    assert!(stderr.contains(&found), "names the actual hash: {stderr}");
    assert!(stderr.contains("nothing was installed"), "{stderr}");
    assert!(
        stderr.contains("model install --from PATH"),
        "names the way out: {stderr}"
    );
    // The optional files the tree lacks were skipped, not fatal.
    assert!(
        stderr.contains("modules.json: not in the repository (404), skipped"),
        "{stderr}"
    );
    // The earlier model is untouched, and no temporary folder is left.
    assert_eq!(
        std::fs::read_to_string(dest.join("config.json")).unwrap(),
        "the earlier model"
    );
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 1);
    assert_no_leftovers(&models);
}

#[test]
fn a_missing_required_file_or_revision_is_exit_2_naming_the_url() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    fake_tree(&tree, Some(b"weights"), false);
    let hub = TestHub::start(one_repo("o/n", &tree, None));
    let dest = tmp.path().join("models/all-MiniLM-L6-v2");

    let (code, stderr) = install(&hub.url, &["--from", "hf://o/n", "--to", s(&dest)], &[]);
    assert_eq!(code, 2, "{stderr}");
    let url = format!("{}/o/n/resolve/main/tokenizer.json", hub.url);
    assert!(
        stderr.contains(&format!("cannot download {url}: HTTP 404 Not Found")),
        "{stderr}"
    );
    assert!(stderr.contains("the hub says: Entry not found"), "{stderr}");
    assert!(stderr.contains("Check OWNER/NAME and REVISION"), "{stderr}");
    assert!(!dest.exists());
    // The install made `models`, so it removed it again, with everything in it.
    assert!(!tmp.path().join("models").exists(), "{stderr}");
    assert!(
        !hub.seen().iter().any(|r| r.path.contains("safetensors")),
        "the small files are checked before the weights are downloaded"
    );

    let (code, stderr) = install(&hub.url, &["--from", "hf://o/n@v9", "--to", s(&dest)], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("{}/o/n/resolve/v9/config.json", hub.url)),
        "{stderr}"
    );
    assert!(stderr.contains("Invalid rev id: v9"), "{stderr}");
    assert!(!dest.exists());
}

#[test]
fn a_private_repository_needs_hf_token() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    fake_tree(&tree, Some(b"not the weights"), true);
    let token = "hf_private_token_never_printed";
    let hub = TestHub::start(one_repo("team/private-minilm", &tree, Some(token)));
    let dest = tmp.path().join("m");
    let args = ["--from", "hf://team/private-minilm", "--to", s(&dest)];

    let (code, stderr) = install(&hub.url, &args, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("HTTP 401 Unauthorized"), "{stderr}");
    assert!(stderr.contains("the hub says: Access to model team/private-minilm is restricted"));
    assert!(stderr.contains("set HF_TOKEN"), "{stderr}");

    // With the token every file is served; these weights then fail the checksum.
    let (code, stderr) = install(&hub.url, &args, &[("HF_TOKEN", token)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(DEFAULT_MODEL_SHA256), "{stderr}");
    assert!(!stderr.contains(token), "{stderr}");
    assert!(!dest.exists());
}

#[test]
fn an_unreachable_endpoint_is_exit_2_naming_the_url() {
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let tmp = tempfile::tempdir().unwrap();
    // Into folders that do not exist yet: the failed install removes the ones it made.
    let dest = tmp.path().join("data/models/m");
    let (code, stderr) = install(&endpoint, &["--to", s(&dest)], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(!tmp.path().join("data").exists(), "{stderr}");
    let url = format!("{endpoint}/sentence-transformers/all-MiniLM-L6-v2/resolve/main/config.json");
    assert!(
        stderr.contains(&format!("cannot download {url}: the host is unreachable")),
        "{stderr}"
    );
    assert!(stderr.contains("HF_ENDPOINT"), "{stderr}");
    assert!(!dest.exists());
    assert_no_leftovers(tmp.path());
}

#[test]
fn bad_sources_and_endpoints_are_refused_naming_the_part() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("m");
    for (from, part) in [
        ("hf://sentence-transformers", "the name is missing"),
        (
            "hf://sentence-transformers/all MiniLM",
            "the name \"all MiniLM\" holds ' '",
        ),
        ("hf://o/n@", "the revision is empty"),
        ("s3://bucket/model", "the scheme \"s3\""),
    ] {
        let (code, stderr) = install(
            "http://127.0.0.1:9",
            &["--from", from, "--to", s(&dest)],
            &[],
        );
        assert_eq!(code, 2, "{from}: {stderr}");
        assert!(stderr.contains(part), "{from}: {stderr}");
        assert!(
            stderr.contains("hf://OWNER/NAME[@REVISION]"),
            "{from}: {stderr}"
        );
    }
    let (code, stderr) = install("ftp://mirror.example", &["--to", s(&dest)], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("HF_ENDPOINT=\"ftp://mirror.example\""),
        "{stderr}"
    );
    assert!(!dest.exists());
}

#[test]
fn the_help_says_where_the_model_comes_from() {
    let out = Command::new(bin())
        .args(["model", "install", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    for needle in [
        "hf://OWNER/NAME[@REVISION]",
        "hf://sentence-transformers/all-MiniLM-L6-v2@main",
        "HF_ENDPOINT",
        "https://huggingface.co",
        "HF_TOKEN",
        "HTTPS_PROXY",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "never downloads",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}

#[test]
fn a_transfer_cut_short_is_exit_2_naming_the_url() {
    // A raw server that promises 1000 bytes of config.json, sends 10 and hangs up.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Write};
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
            line.clear();
        }
        let mut stream = stream;
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"model_ty");
    });
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("m");
    let (code, stderr) = install(&endpoint, &["--from", "hf://o/n", "--to", s(&dest)], &[]);
    server.join().unwrap();
    assert_eq!(code, 2, "{stderr}");
    let url = format!("{endpoint}/o/n/resolve/main/config.json");
    assert!(
        stderr.contains(&format!(
            "cannot download {url}: the transfer broke after 10 bytes"
        )),
        "{stderr}"
    );
    assert!(!dest.exists());
    assert_no_leftovers(tmp.path());
}

/// An HTTP proxy on 127.0.0.1 that tunnels every `CONNECT host:port` to `upstream` (whatever
/// the host), recording the targets asked for; stopped on drop.
struct TestProxy {
    url: String,
    targets: Arc<Mutex<Vec<String>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    addr: std::net::SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl TestProxy {
    fn start(upstream: std::net::SocketAddr) -> TestProxy {
        use std::io::{BufRead, BufReader, Write};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let targets = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let (targets, stop) = (Arc::clone(&targets), Arc::clone(&stop));
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        break;
                    }
                    let Ok(mut client) = client else { continue };
                    let mut reader = BufReader::new(client.try_clone().unwrap());
                    let mut first = String::new();
                    let _ = reader.read_line(&mut first);
                    let mut line = String::new();
                    while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                        line.clear();
                    }
                    let target = first.split_whitespace().nth(1).unwrap_or("").to_string();
                    targets.lock().unwrap().push(first.trim().to_string());
                    if !first.starts_with("CONNECT ") || target.is_empty() {
                        let _ = client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n");
                        continue;
                    }
                    let Ok(upstream) = std::net::TcpStream::connect(upstream) else {
                        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
                        continue;
                    };
                    let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                    let (mut up_read, mut up_write) = (upstream.try_clone().unwrap(), upstream);
                    let mut client_write = client;
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut reader, &mut up_write);
                        let _ = up_write.shutdown(std::net::Shutdown::Write);
                    });
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut up_read, &mut client_write);
                        let _ = client_write.shutdown(std::net::Shutdown::Both);
                    });
                }
            })
        };
        TestProxy {
            url: format!("http://{addr}"),
            targets,
            stop,
            addr,
            thread: Some(thread),
        }
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn the_proxy_from_the_environment_is_used() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    fake_tree(&tree, Some(b"not the weights"), true);
    let hub = TestHub::start(one_repo("o/n", &tree, None));
    let hub_addr: std::net::SocketAddr = hub.url.trim_start_matches("http://").parse().unwrap();
    let proxy = TestProxy::start(hub_addr);
    let dest = tmp.path().join("m");
    // Nothing listens at the endpoint: only the proxy, which tunnels to the test hub, can
    // answer for it (and no name needs a DNS server).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = &format!("http://localhost:{port}");
    let args = ["--from", "hf://o/n", "--to", s(&dest)];
    for var in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "ALL_PROXY"] {
        let (code, stderr) = install(endpoint, &args, &[(var, &proxy.url)]);
        assert_eq!(code, 2, "{var}: {stderr}");
        // Every file came through the proxy (the weights through the test hub's redirect,
        // which names the hub's own address); these weights then fail the checksum.
        assert!(stderr.contains(DEFAULT_MODEL_SHA256), "{var}: {stderr}");
        assert!(
            stderr.contains(&format!("{endpoint}/o/n/resolve/main/model.safetensors")),
            "{var}: {stderr}"
        );
    }
    let targets = proxy.targets.lock().unwrap().clone();
    assert!(
        targets
            .iter()
            .any(|t| t.starts_with(&format!("CONNECT localhost:{port} "))),
        "{targets:?}"
    );
    // NO_PROXY lets the host bypass the proxy: then it cannot be reached.
    let (code, stderr) = install(
        endpoint,
        &args,
        &[("HTTPS_PROXY", &proxy.url), ("NO_PROXY", "localhost")],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("the host is unreachable"), "{stderr}");
}
