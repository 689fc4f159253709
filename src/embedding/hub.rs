//! Installing the model from the Hugging Face hub: `model install` without `--from` (or with
//! `--from hf://OWNER/NAME[@REVISION]`) downloads the layout's files into a temporary folder
//! beside the destination, then checks that folder and renames it into place with the same
//! step as [`super::install_model_checked`], so the hub gives the same guarantees as a local
//! install (sha256 of `model.safetensors`, configuration check, one rename, nothing at the
//! destination changed on any error).
//!
//! Files are asked for at `{HF_ENDPOINT}/{OWNER}/{NAME}/resolve/{REVISION}/{path}` (the hub's
//! URL layout; `HF_ENDPOINT` defaults to `https://huggingface.co`), following redirects (the hub
//! answers `model.safetensors` with a redirect to its CDN), with `HF_TOKEN` as a bearer token
//! when set, through the proxy named by `ALL_PROXY`, `HTTPS_PROXY` or `HTTP_PROXY` (either
//! case; `NO_PROXY` honoured) when set. Each file is streamed to disk while it is hashed.
//!
//! Only the `model install` subcommand calls this; the MCP server never downloads anything
//! (`tests/architecture.rs` checks that the HTTP client is used here only). Tested against a
//! local HTTP server with the hub's URL layout and redirect (`tests/model_hub.rs`), not against
//! huggingface.co itself: the machines this was built on reach no model hub.

use std::fmt;
use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use sha2::{Digest, Sha256};

use super::EmbeddingError;
use super::folder::{OPTIONAL, REQUIRED, WEIGHTS};
use super::install::{
    DEFAULT_MODEL_SHA256, Installed, Staging, hex, move_into_place, prepare_dest,
};

/// The source `model install` downloads from when `--from` is not given.
pub const DEFAULT_HUB_SOURCE: &str = "hf://sentence-transformers/all-MiniLM-L6-v2@main";

/// Environment variable naming the hub's base URL (the one `huggingface_hub` reads).
pub const ENDPOINT_ENV: &str = "HF_ENDPOINT";

/// The hub's base URL when [`ENDPOINT_ENV`] is unset or empty.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Environment variable holding an access token, sent as `Authorization: Bearer …` (never
/// printed); needed for private or gated repositories only.
pub const TOKEN_ENV: &str = "HF_TOKEN";

/// Longest wait to open a connection (DNS, TCP, proxy, TLS): 30 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest wait for any single read of an answer (headers or the next bytes of a file): 60 s.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A revision is one path segment in the URL: everything but `A–Z a–z 0–9 - _ . ~` is
/// percent-encoded (so `refs/pr/1` becomes `refs%2Fpr%2F1`, as `huggingface_hub` sends it).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A model repository on the hub at one revision: `hf://OWNER/NAME[@REVISION]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSource {
    /// The user or organisation, e.g. `sentence-transformers`.
    pub owner: String,
    /// The repository, e.g. `all-MiniLM-L6-v2`.
    pub name: String,
    /// A branch, tag or commit hash; `main` when the source names none.
    pub revision: String,
}

impl HubSource {
    /// Whether `text` is a URL-like source (`scheme://…`) rather than a path: such a source is
    /// read by [`HubSource::parse`], which accepts the `hf` scheme only.
    pub fn is_url(text: &str) -> bool {
        text.split_once("://").is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
    }

    /// Reads `hf://OWNER/NAME[@REVISION]`. OWNER and NAME follow the hub's rules (1 to 96 of
    /// `A–Z a–z 0–9 - _ .`, starting and ending with a letter, digit or `_`, no `--` or `..`);
    /// REVISION (default `main`) is 1 to 255 characters without spaces, control characters or
    /// `..`.
    ///
    /// # Errors
    /// [`EmbeddingError::BadHubSource`] naming the part at fault (`scheme`, `owner`, `name`,
    /// `revision`) and what is allowed.
    pub fn parse(text: &str) -> Result<HubSource, EmbeddingError> {
        let bad = |part, reason: String| EmbeddingError::BadHubSource {
            source_text: text.to_string(),
            part,
            reason,
        };
        let Some(rest) = text.strip_prefix("hf://") else {
            let scheme = text.split_once("://").map_or(text, |(s, _)| s);
            return Err(bad(
                "scheme",
                format!(
                    "{scheme:?} is not downloaded; only hf:// is (a hub mirror is chosen with HF_ENDPOINT)"
                ),
            ));
        };
        let (repo, revision) = match rest.split_once('@') {
            Some((repo, revision)) => (repo, revision),
            None => (rest, "main"),
        };
        let (owner, name) = match repo.split_once('/') {
            Some((owner, name)) => (owner, name),
            None => (repo, ""),
        };
        check_repo_part(owner).map_err(|reason| bad("owner", reason))?;
        if name.contains('/') {
            return Err(bad(
                "name",
                format!("{name:?} holds a '/'; a repository is OWNER/NAME"),
            ));
        }
        check_repo_part(name).map_err(|reason| bad("name", reason))?;
        check_revision(revision).map_err(|reason| bad("revision", reason))?;
        Ok(HubSource {
            owner: owner.to_string(),
            name: name.to_string(),
            revision: revision.to_string(),
        })
    }

    /// The URL of the file `path` (relative, `/`-separated) of this repository under
    /// `endpoint` (no trailing `/`): `{endpoint}/{owner}/{name}/resolve/{revision}/{path}`.
    pub fn file_url(&self, endpoint: &str, path: &str) -> String {
        let path: Vec<String> = path
            .split('/')
            .map(|segment| utf8_percent_encode(segment, SEGMENT).to_string())
            .collect();
        format!(
            "{endpoint}/{}/{}/resolve/{}/{}",
            self.owner,
            self.name,
            utf8_percent_encode(&self.revision, SEGMENT),
            path.join("/")
        )
    }
}

impl Default for HubSource {
    /// [`DEFAULT_HUB_SOURCE`].
    fn default() -> Self {
        HubSource {
            owner: "sentence-transformers".into(),
            name: super::DEFAULT_MODEL.into(),
            revision: "main".into(),
        }
    }
}

impl fmt::Display for HubSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hf://{}/{}@{}", self.owner, self.name, self.revision)
    }
}

fn check_repo_part(part: &str) -> Result<(), String> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    if part.is_empty() {
        return Err("is missing".into());
    }
    if part.len() > 96 {
        return Err(format!("{part:?} is longer than 96 characters"));
    }
    if let Some(c) = part
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.".contains(*c)))
    {
        return Err(format!(
            "{part:?} holds {c:?}; only A-Z a-z 0-9 - _ . are allowed"
        ));
    }
    if !word(part.chars().next()) || !word(part.chars().last()) {
        return Err(format!(
            "{part:?} must start and end with a letter, a digit or '_'"
        ));
    }
    if part.contains("--") || part.contains("..") {
        return Err(format!("{part:?} holds \"--\" or \"..\""));
    }
    Ok(())
}

fn check_revision(revision: &str) -> Result<(), String> {
    if revision.is_empty() {
        return Err("is empty after '@'; give a branch, tag or commit, or leave out '@'".into());
    }
    if revision.len() > 255 {
        return Err("is longer than 255 characters".into());
    }
    if revision
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
        || revision.contains("..")
    {
        return Err(format!(
            "{revision:?} holds a space, a control character or \"..\""
        ));
    }
    Ok(())
}

/// Where and how to download: the endpoint, the token and the timeouts.
#[derive(Clone)]
pub struct Hub {
    endpoint: String,
    token: Option<String>,
    connect_timeout: Duration,
    read_timeout: Duration,
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .finish()
    }
}

impl Hub {
    /// The hub named by the environment: [`ENDPOINT_ENV`] (default [`DEFAULT_ENDPOINT`]) and
    /// [`TOKEN_ENV`]; empty variables count as unset.
    ///
    /// # Errors
    /// [`EmbeddingError::BadEndpoint`] when `HF_ENDPOINT` is not an http(s) URL.
    pub fn from_env() -> Result<Hub, EmbeddingError> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let endpoint = var(ENDPOINT_ENV).unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        Hub::new(&endpoint, var(TOKEN_ENV))
    }

    /// A hub at `endpoint` (`http://` or `https://`, a trailing `/` ignored), sending `token`
    /// when given, with [`CONNECT_TIMEOUT`] and [`READ_TIMEOUT`].
    ///
    /// # Errors
    /// [`EmbeddingError::BadEndpoint`] for another scheme, a missing host, or a query or
    /// fragment.
    pub fn new(endpoint: &str, token: Option<String>) -> Result<Hub, EmbeddingError> {
        let bad = |reason: &str| EmbeddingError::BadEndpoint {
            value: endpoint.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = endpoint.trim_end_matches('/');
        let Some(rest) = trimmed
            .strip_prefix("https://")
            .or_else(|| trimmed.strip_prefix("http://"))
        else {
            return Err(bad("it does not start with http:// or https://"));
        };
        if rest.is_empty() || rest.starts_with('/') {
            return Err(bad("it names no host"));
        }
        if rest.contains(['?', '#']) || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("it holds a query, a fragment or a space"));
        }
        Ok(Hub {
            endpoint: trimmed.to_string(),
            token,
            connect_timeout: CONNECT_TIMEOUT,
            read_timeout: READ_TIMEOUT,
        })
    }

    /// The base URL, without a trailing `/`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn agent(&self) -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(self.connect_timeout))
            .timeout_per_read(Some(self.read_timeout))
            .max_redirects(10)
            // The token follows a redirect to the same host over https only; the CDN's signed
            // URLs need none.
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .user_agent(concat!("meta-utl-mcp/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent()
    }
}

/// How downloads are shown on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A progress bar per file (bytes, rate, time left), for a terminal.
    Bars,
    /// One line per file once it is done (or skipped), for logs.
    Lines,
    /// Nothing.
    Quiet,
}

impl Progress {
    /// [`Progress::Bars`] when stderr is a terminal, else [`Progress::Lines`].
    pub fn for_stderr() -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::Bars
        } else {
            Progress::Lines
        }
    }
}

/// Downloads all-MiniLM-L6-v2 from `source` on `hub` and installs it into the folder `dest`
/// as [`super::install_model_checked`] does from a folder, checked against
/// [`DEFAULT_MODEL_SHA256`].
///
/// Downloads the required files of the layout (`config.json`, `tokenizer.json`,
/// `1_Pooling/config.json`), then the optional ones (an optional file answered with 404 is
/// skipped), then `model.safetensors` (about 90 MB, streamed to disk while hashed, checked as
/// soon as it is complete), each synced, into `.<name>.download-<uuid>` beside `dest`; that
/// folder, its configuration checked, is renamed to `dest` (or removed on any error).
/// Progress goes to stderr as `progress` says.
///
/// # Errors
/// [`EmbeddingError::Download`] naming the URL and what happened (HTTP status and the hub's
/// message, unreachable host, timeout, broken transfer), [`EmbeddingError::HubChecksum`]
/// naming both hashes, [`EmbeddingError::BadConfig`] / [`EmbeddingError::UnsupportedPooling`]
/// for a configuration this crate cannot run, [`EmbeddingError::Io`]. On any error nothing at
/// `dest` changes.
pub fn install_from_hub(
    source: &HubSource,
    hub: &Hub,
    dest: &Path,
    progress: Progress,
) -> Result<Installed, EmbeddingError> {
    let (parent, name) = prepare_dest(dest)?;
    let download = Staging::create(&parent, &name, "download")?;
    let agent = hub.agent();
    let required = REQUIRED.iter().map(|(rel, _)| (*rel, true));
    let optional = OPTIONAL.iter().map(|rel| (*rel, false));
    let order = required
        .filter(|(rel, _)| *rel != WEIGHTS)
        .chain(optional)
        .chain([(WEIGHTS, true)]);
    let mut fetched = Vec::new();
    let mut weights_sha = String::new();
    for (rel, needed) in order {
        let url = source.file_url(hub.endpoint(), rel);
        let to = download.path().join(rel);
        let Some(sha) = fetch(&agent, hub, &url, &to, rel, needed, progress)? else {
            if progress != Progress::Quiet {
                eprintln!("meta-utl-mcp: {rel}: not in the repository (404), skipped (optional)");
            }
            continue;
        };
        fetched.push(rel);
        if rel == WEIGHTS {
            if !sha.eq_ignore_ascii_case(DEFAULT_MODEL_SHA256) {
                return Err(EmbeddingError::HubChecksum {
                    url,
                    expected: DEFAULT_MODEL_SHA256.to_string(),
                    found: sha,
                });
            }
            weights_sha = sha;
        }
    }
    // The downloaded folder is the installed one: checked and renamed into place, not copied.
    let files = REQUIRED
        .iter()
        .map(|(rel, _)| *rel)
        .chain(OPTIONAL.iter().copied())
        .filter(|rel| fetched.contains(rel))
        .map(str::to_string)
        .collect();
    move_into_place(download, &parent, &name, files, weights_sha)
}

const HINT_NOT_FOUND: &str = "Check OWNER/NAME and REVISION of the source and HF_ENDPOINT";
const HINT_AUTH: &str = "The repository may be private or gated: set HF_TOKEN to a token \
     that can read it";
const HINT_SERVER: &str = "The hub is failing or limiting requests: try again later";
const HINT_NETWORK: &str = "Check that this machine is online, HF_ENDPOINT, and the proxy \
     variables (HTTPS_PROXY, NO_PROXY)";
const HINT_TLS: &str = "A proxy or firewall may be intercepting TLS: check HTTPS_PROXY";
const HINT_OTHER: &str = "Check HF_ENDPOINT and try again";

/// GETs `url` into the file `to`. Returns its sha256, or `None` for a 404 on a file not
/// `needed` (a 404 on a needed one is an error with the hub's message).
fn fetch(
    agent: &ureq::Agent,
    hub: &Hub,
    url: &str,
    to: &Path,
    label: &str,
    needed: bool,
    progress: Progress,
) -> Result<Option<String>, EmbeddingError> {
    let mut request = agent.get(url);
    if let Some(token) = &hub.token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = request.call().map_err(|e| call_error(url, &e))?;
    let status = response.status();
    if status == 404 && !needed {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(status_error(url, response));
    }
    let length = response.body().content_length();
    let mut body = response.into_body().into_reader();
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| EmbeddingError::io(dir, e))?;
    }
    let mut out = File::create(to).map_err(|e| EmbeddingError::io(to, e))?;
    let bar = Bar::start(progress, label, length);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(url, total, &e)),
        };
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| EmbeddingError::io(to, e))?;
        total += n as u64;
        bar.advance(n as u64);
    }
    // Synced before the folder is renamed into place, as a local install's copies are.
    out.sync_all().map_err(|e| EmbeddingError::io(to, e))?;
    bar.finish(url, label, total);
    Ok(Some(hex(&hasher.finalize())))
}

/// The error for a request that got no answer.
fn call_error(url: &str, e: &ureq::Error) -> EmbeddingError {
    use ureq::Error as E;
    let (reason, hint) = match e {
        E::HostNotFound => ("host not found".to_string(), HINT_NETWORK),
        E::Io(io) => (unreachable_reason(io), HINT_NETWORK),
        E::ConnectionFailed => ("cannot connect".to_string(), HINT_NETWORK),
        E::Timeout(which) => (
            format!(
                "timed out ({which}; connect limit {} s, read limit {} s)",
                CONNECT_TIMEOUT.as_secs(),
                READ_TIMEOUT.as_secs()
            ),
            HINT_NETWORK,
        ),
        E::Tls(_) | E::Rustls(_) | E::Pem(_) => (format!("TLS failed: {e}"), HINT_TLS),
        E::TooManyRedirects => ("more than 10 redirects".to_string(), HINT_OTHER),
        E::InvalidProxyUrl => ("the proxy URL is invalid".to_string(), HINT_NETWORK),
        other => (other.to_string(), HINT_OTHER),
    };
    EmbeddingError::Download {
        url: url.to_string(),
        reason,
        hint,
    }
}

fn unreachable_reason(io: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match io.kind() {
        K::ConnectionRefused => "the host is unreachable (connection refused)".into(),
        K::TimedOut => "the host is unreachable (timed out)".into(),
        K::ConnectionReset | K::ConnectionAborted => "the connection was cut".into(),
        _ => format!("the host is unreachable ({io})"),
    }
}

/// The error for a transfer that broke after `received` bytes.
fn read_error(url: &str, received: u64, e: &std::io::Error) -> EmbeddingError {
    let what = if e.kind() == std::io::ErrorKind::TimedOut {
        format!("no data for {} s", READ_TIMEOUT.as_secs())
    } else {
        e.to_string()
    };
    EmbeddingError::Download {
        url: url.to_string(),
        reason: format!("the transfer broke after {received} bytes ({what})"),
        hint: HINT_NETWORK,
    }
}

/// The error for an answer with a status other than 2xx or 404, with the hub's own message
/// (its `X-Error-Message` header, else the start of a text or JSON body).
fn status_error(url: &str, response: ureq::http::Response<ureq::Body>) -> EmbeddingError {
    let status = response.status();
    let header = response
        .headers()
        .get("x-error-message")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // A plain-text or JSON body is the hub's message; an HTML error page is not worth showing.
    let readable = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|t| t.starts_with("text/plain") || t.contains("json"));
    let message = header.or_else(|| {
        if !readable {
            return None;
        }
        let body = response
            .into_body()
            .into_with_config()
            .limit(4096)
            .lossy_utf8(true)
            .read_to_string()
            .ok()?;
        let text = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
            .unwrap_or(body);
        let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let text: String = text.chars().take(300).collect();
        (!text.is_empty()).then_some(text)
    });
    let mut reason = format!(
        "HTTP {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
    .trim_end()
    .to_string();
    if let Some(message) = message {
        reason.push_str(&format!(" (the hub says: {message})"));
    }
    let hint = match status.as_u16() {
        401 | 403 => HINT_AUTH,
        404 | 410 => HINT_NOT_FOUND,
        429 | 500..=599 => HINT_SERVER,
        _ => HINT_OTHER,
    };
    EmbeddingError::Download {
        url: url.to_string(),
        reason,
        hint,
    }
}

/// One file's progress on stderr.
enum Bar {
    Drawn(indicatif::ProgressBar),
    Line,
    Quiet,
}

impl Bar {
    fn start(progress: Progress, label: &str, length: Option<u64>) -> Bar {
        match progress {
            Progress::Bars => {
                let bar = match length {
                    Some(n) => indicatif::ProgressBar::new(n),
                    None => indicatif::ProgressBar::new_spinner(),
                };
                let template = if length.is_some() {
                    "{msg:<34} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ({eta})"
                } else {
                    "{msg:<34} {spinner} {bytes} {bytes_per_sec}"
                };
                if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                    bar.set_style(style.progress_chars("=> "));
                }
                bar.set_message(label.to_string());
                Bar::Drawn(bar)
            }
            Progress::Lines => Bar::Line,
            Progress::Quiet => Bar::Quiet,
        }
    }

    fn advance(&self, n: u64) {
        if let Bar::Drawn(bar) = self {
            bar.inc(n);
        }
    }

    fn finish(self, url: &str, label: &str, total: u64) {
        match self {
            Bar::Drawn(bar) => bar.finish(),
            Bar::Line => eprintln!(
                "meta-utl-mcp: downloaded {label} ({}) from {url}",
                indicatif::HumanBytes(total)
            ),
            Bar::Quiet => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_source_parses_to_the_default() {
        assert_eq!(
            HubSource::parse(DEFAULT_HUB_SOURCE).unwrap(),
            HubSource::default()
        );
        assert_eq!(HubSource::default().to_string(), DEFAULT_HUB_SOURCE);
        let s = HubSource::parse("hf://org/model_v2.1").unwrap();
        assert_eq!((s.owner.as_str(), s.name.as_str()), ("org", "model_v2.1"));
        assert_eq!(s.revision, "main");
    }

    #[test]
    fn bad_sources_name_the_part() {
        for (text, part) in [
            ("https://example.org/x", "scheme"),
            ("hf://", "owner"),
            ("hf://owner", "name"),
            ("hf://owner/", "name"),
            ("hf:///name", "owner"),
            ("hf://a/b/c", "name"),
            ("hf://own er/name", "owner"),
            ("hf://-owner/name", "owner"),
            ("hf://owner/na--me", "name"),
            ("hf://owner/name@", "revision"),
            ("hf://owner/name@a b", "revision"),
            ("hf://owner/name@../x", "revision"),
        ] {
            match HubSource::parse(text) {
                Err(EmbeddingError::BadHubSource { part: got, .. }) => {
                    assert_eq!(got, part, "{text}")
                }
                other => panic!("{text}: expected BadHubSource, got {other:?}"),
            }
        }
        let long = format!("hf://o/{}", "n".repeat(97));
        assert!(HubSource::parse(&long).is_err());
    }

    #[test]
    fn urls_follow_the_hub_layout_and_encode_the_revision() {
        let s = HubSource::parse("hf://o/n@refs/pr/1").unwrap();
        assert_eq!(
            s.file_url("https://hub.example", "1_Pooling/config.json"),
            "https://hub.example/o/n/resolve/refs%2Fpr%2F1/1_Pooling/config.json"
        );
        assert!(HubSource::is_url("hf://o/n") && HubSource::is_url("s3://b/k"));
        assert!(!HubSource::is_url("/tmp/model") && !HubSource::is_url("./a://b"));
    }

    #[test]
    fn endpoints_must_be_http_urls_and_tokens_stay_hidden() {
        let hub = Hub::new("http://127.0.0.1:8080/", Some("secret".into())).unwrap();
        assert_eq!(hub.endpoint(), "http://127.0.0.1:8080");
        assert!(!format!("{hub:?}").contains("secret"));
        for bad in [
            "ftp://x",
            "huggingface.co",
            "https://",
            "https://h?x=1",
            "http:///p",
        ] {
            assert!(
                matches!(Hub::new(bad, None), Err(EmbeddingError::BadEndpoint { .. })),
                "{bad}"
            );
        }
    }
}
