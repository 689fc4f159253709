//! `--db postgres://…`: parsing the URL, finding the password (URL, `PGPASSWORD`, the
//! password file), and connecting with or without TLS.
//!
//! The URL follows libpq's form (PostgreSQL documentation, "Connection URIs"):
//! `postgres[ql]://[USER[:PASSWORD]@][HOST][:PORT][/DATABASE][?PARAM=VALUE&…]`, with
//! percent-encoding. What the client library does not know is handled here: `sslmode` takes
//! libpq's six values, `sslrootcert` names a PEM file of trusted certificates, and a missing
//! user falls back to `PGUSER`, then to `USER`, as libpq does.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use postgres::config::Host;
use postgres::{Client, Config, NoTls};

use crate::store::StoreError;

/// How long a connection attempt may take before it fails (`connect_timeout` in the URL
/// overrides it). Start-up therefore fails within a few seconds, never hangs.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The URL parameters handed to the client library as they are.
const PASSED_ON: &[&str] = &[
    "user",
    "password",
    "dbname",
    "options",
    "application_name",
    "connect_timeout",
    "tcp_user_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_retries",
    "target_session_attrs",
    "channel_binding",
];

/// libpq's `sslmode` values, named in kebab case (`disable`, …, `verify-full`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::EnumString, strum::VariantNames,
)]
#[strum(serialize_all = "kebab-case")]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// Plain TCP, as libpq's `allow` (which tries plain first).
    Allow,
    /// TLS when the server offers it, else plain; the certificate is not verified (libpq's
    /// default, which encrypts but does not authenticate the server).
    Prefer,
    /// TLS or fail; the certificate is not verified (as libpq without a root certificate).
    Require,
    /// TLS with the certificate verified against the trusted roots (`sslrootcert`, else the
    /// Mozilla roots), host name included: rustls always checks it.
    VerifyCa,
    /// TLS with the certificate and the host name verified.
    VerifyFull,
}

/// A PostgreSQL database to connect to, parsed from `--db postgres://…`.
///
/// Shown (by `Display`, `Debug`, in logs, `status` and errors) as
/// `postgres://USER@HOST:PORT/DATABASE`: never with the password.
#[derive(Clone)]
pub struct Target {
    config: Config,
    ssl: SslMode,
    root_cert: Option<PathBuf>,
    shown: String,
    /// A password file that was skipped because others may read it (named in the error when
    /// the server then asks for a password).
    ignored_pass_file: Option<PathBuf>,
}

impl PartialEq for Target {
    fn eq(&self, other: &Self) -> bool {
        self.shown == other.shown && self.ssl == other.ssl && self.root_cert == other.root_cert
    }
}

impl Eq for Target {}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Target({})", self.shown)
    }
}

fn bad(reason: impl Into<String>) -> StoreError {
    StoreError::BadUrl {
        reason: reason.into(),
    }
}

impl Target {
    /// Whether `s` is meant as a PostgreSQL URL (`postgres://` or `postgresql://`, any case).
    pub fn is_url(s: &str) -> bool {
        let lower = s.get(..13).unwrap_or(s).to_ascii_lowercase();
        lower.starts_with("postgres://") || lower.starts_with("postgresql://")
    }

    /// The scheme (`postgres` or `postgresql`, as written) of a value that begins like a
    /// PostgreSQL URL, `postgres:` or `postgresql:` in any case, but is not one ([`Self::is_url`]
    /// is false): a URL with a slash missing, never meant as a file name.
    pub fn almost_url(s: &str) -> Option<&str> {
        if Self::is_url(s) {
            return None;
        }
        let (scheme, _) = s.split_once(':')?;
        (scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql"))
            .then_some(scheme)
    }

    /// Parse a URL (see the module documentation). The password, when the URL has none, comes
    /// from `PGPASSWORD`, else from the password file (`PGPASSFILE`, else `~/.pgpass`; lines
    /// `host:port:database:user:password`, `*` matching anything, ignored unless the file is
    /// private to its owner, as libpq does).
    ///
    /// # Errors
    /// [`StoreError::BadUrl`] naming what is wrong: not a URL, an unknown parameter or value,
    /// more than one host, no user.
    pub fn parse(url: &str) -> Result<Target, StoreError> {
        if !Self::is_url(url) {
            return Err(bad(format!(
                "{} is not a PostgreSQL URL (it must begin with postgres:// or postgresql://)",
                redact(url)
            )));
        }
        let start = url.find("://").map_or(0, |i| i + 3);
        let authority = &url[start..];
        let authority = &authority[..authority.find(['/', '?']).unwrap_or(authority.len())];
        if authority.matches('@').count() > 1 {
            return Err(bad(
                "the URL has more than one '@' before the host, so where the password ends is \
                 unclear: write an '@' inside the user or password as %40 (percent-encoded), or \
                 better, leave the password out of the URL and put it in ~/.pgpass or \
                 PGPASSWORD (a URL is visible to every user in the process list)"
                    .to_string(),
            ));
        }
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (url, None),
        };
        let mut ssl = SslMode::Prefer;
        let mut root_cert = None;
        let mut rest = Vec::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "sslmode" => {
                    ssl = value.parse().map_err(|_| {
                        let names = <SslMode as strum::VariantNames>::VARIANTS.join(", ");
                        bad(format!("sslmode={value} is not one of {names}"))
                    })?;
                }
                "sslrootcert" => {
                    let path = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
                    root_cert = Some(PathBuf::from(path.as_ref()));
                }
                k if PASSED_ON.contains(&k) => rest.push(pair),
                k => {
                    return Err(bad(format!(
                        "the URL parameter {k:?} is not supported (supported: sslmode, \
                         sslrootcert, {})",
                        PASSED_ON.join(", ")
                    )));
                }
            }
        }
        // The client library knows its own scheme spelling only in lower case.
        let scheme_end = base.find("://").expect("checked by is_url");
        let mut rebuilt = format!("postgresql{}", &base[scheme_end..]);
        if !rest.is_empty() {
            rebuilt.push('?');
            rebuilt.push_str(&rest.join("&"));
        }
        let mut config = Config::from_str(&rebuilt).map_err(|e| {
            bad(format!(
                "{} is not a usable PostgreSQL URL: {e}",
                redact(url)
            ))
        })?;
        if config.get_hosts().len() > 1 {
            return Err(bad("more than one host is not supported"));
        }
        if config.get_hosts().is_empty() {
            config.host("localhost");
        }
        if config.get_user().is_none() {
            let user = ["PGUSER", "USER"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
                .ok_or_else(|| bad("the URL names no user, and neither PGUSER nor USER is set"))?;
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let user = config.get_user().unwrap_or_default().to_string();
            config.dbname(&user);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.keepalives_idle(Duration::from_secs(30));
        config.ssl_mode(match ssl {
            SslMode::Disable | SslMode::Allow => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        if config.get_application_name().is_none() {
            config.application_name("meta-utl-mcp");
        }
        let shown = format!(
            "postgres://{}@{}:{}/{}",
            config.get_user().unwrap_or_default(),
            host_name(&config),
            port(&config),
            config.get_dbname().unwrap_or_default()
        );
        let mut ignored_pass_file = None;
        if config.get_password().is_none() {
            match password_from_environment(&config) {
                Password::Found(pw) => {
                    config.password(pw);
                }
                Password::Ignored(file) => ignored_pass_file = Some(file),
                Password::None => {}
            }
        }
        Ok(Target {
            config,
            ssl,
            root_cert,
            shown,
            ignored_pass_file,
        })
    }

    /// Open a session: TLS as `sslmode` asks, the search path set to this program's schema,
    /// times in UTC.
    ///
    /// # Errors
    /// [`StoreError::Unreachable`] naming host, port, database and user, with the server's or
    /// the network's reason.
    pub(crate) fn connect(&self) -> Result<Client, StoreError> {
        let unreachable = |reason: String| StoreError::Unreachable {
            target: self.shown.clone(),
            reason: self.with_hint(reason),
        };
        let client = match self.ssl {
            SslMode::Disable | SslMode::Allow => self.config.connect(NoTls),
            mode => {
                let tls = tls_config(mode, self.root_cert.as_deref()).map_err(unreachable)?;
                self.config
                    .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
            }
        };
        let mut client = client.map_err(|e| unreachable(describe(&e)))?;
        client
            .batch_execute(&format!(
                "SET search_path TO {}; SET TIME ZONE 'UTC'",
                super::SCHEMA
            ))
            .map_err(|e| unreachable(describe(&e)))?;
        Ok(client)
    }
}

impl Target {
    /// `reason` with the likely fix when it is one of the common mistakes: a password file
    /// others can read (ignored, as libpq ignores it), a TLS failure (`sslmode`), an `@` of the
    /// password read as part of the host name.
    fn with_hint(&self, reason: String) -> String {
        let lower = reason.to_lowercase();
        let mut hints = Vec::new();
        if let Some(file) = &self.ignored_pass_file
            && self.config.get_password().is_none()
        {
            hints.push(format!(
                "the password file {} was ignored because group or others may read it (libpq \
                 ignores it too): chmod 600 {}",
                file.display(),
                file.display()
            ));
        }
        let tls_words = ["tls", "ssl", "certificate", "handshake", "unknownissuer"];
        if self.ssl != SslMode::Disable
            && self.ssl != SslMode::Allow
            && tls_words.iter().any(|w| lower.contains(w))
        {
            hints.push(format!(
                "the TLS connection failed with sslmode={}: set ?sslmode= in the URL to what \
                 the server offers (disable for a server without TLS; verify-full with \
                 sslrootcert=FILE for a private certificate authority)",
                self.ssl
            ));
        }
        if host_name(&self.config).contains('@') {
            hints.push(
                "the host name holds an \"@\": an @ (or : / ? #) in the password must be \
                 percent-encoded, @ as %40"
                    .to_string(),
            );
        }
        if hints.is_empty() {
            reason
        } else {
            format!("{reason} (hint: {})", hints.join("; "))
        }
    }
}

/// A client-library error as one line: the server's message (with its detail) when the
/// server answered, else the error and its causes.
pub(crate) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return match db.detail() {
            Some(d) => format!("{} ({d})", db.message()),
            None => db.message().to_string(),
        };
    }
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// The URL without its password, for messages about a URL that could not be parsed.
fn redact(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let authority_end = url[start..]
        .find(['/', '?'])
        .map_or(url.len(), |i| start + i);
    match url[start..authority_end].rfind('@') {
        Some(at) => {
            let userinfo = &url[start..start + at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..start], &url[start + at..]),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    }
}

fn host_name(config: &Config) -> String {
    match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    }
}

fn port(config: &Config) -> u16 {
    config.get_ports().first().copied().unwrap_or(5432)
}

/// Where [`password_from_environment`] found a password, or why not.
enum Password {
    /// `PGPASSWORD` or a matching line of the password file.
    Found(String),
    /// The password file exists but group or others may read it: ignored, as libpq does.
    Ignored(PathBuf),
    /// Nowhere.
    None,
}

/// `PGPASSWORD`, else the matching line of the password file.
fn password_from_environment(config: &Config) -> Password {
    if let Some(pw) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Password::Found(pw);
    }
    let Some(file) = std::env::var_os("PGPASSFILE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))
    else {
        return Password::None;
    };
    match private(&file) {
        Some(true) => {}
        Some(false) => return Password::Ignored(file),
        None => return Password::None,
    }
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Password::None;
    };
    // A socket directory counts as "localhost" in the file (libpq).
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => "localhost".into(),
    };
    pgpass_lookup(
        &text,
        &host,
        &port(config).to_string(),
        config.get_dbname().unwrap_or_default(),
        config.get_user().unwrap_or_default(),
    )
    .map_or(Password::None, Password::Found)
}

/// Whether the password file is private to its owner: `None` when it is missing or not a
/// file, `Some(false)` when group or others may read it (then libpq ignores it).
#[cfg(unix)]
fn private(file: &Path) -> Option<bool> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(file) {
        Ok(m) if !m.is_file() => None,
        Ok(m) if m.permissions().mode() & 0o077 != 0 => {
            tracing::warn!(
                file = %file.display(),
                "password file ignored: it is readable by group or others (chmod 0600 it)"
            );
            Some(false)
        }
        Ok(_) => Some(true),
        Err(_) => None,
    }
}

#[cfg(not(unix))]
fn private(file: &Path) -> Option<bool> {
    file.is_file().then_some(true)
}

/// The password of the first line of a password file matching all four fields (`*` matches
/// anything; `\:` and `\\` stand for `:` and `\`; `#` starts a comment line).
pub(crate) fn pgpass_lookup(
    text: &str,
    host: &str,
    port: &str,
    db: &str,
    user: &str,
) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = Vec::with_capacity(5);
        let mut field = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => field.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
                c => field.push(c),
            }
        }
        fields.push(field);
        if fields.len() != 5 {
            continue;
        }
        let want = [host, port, db, user];
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields.pop().expect("five fields"));
        }
    }
    None
}

/// The TLS settings for `mode`: verified against the roots for `verify-*`, else encrypting
/// without authenticating the server (libpq's `prefer` and `require`).
fn tls_config(mode: SslMode, root_cert: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?;
    let config = if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) {
        let mut roots = rustls::RootCertStore::empty();
        match root_cert {
            Some(file) => {
                use rustls::pki_types::CertificateDer;
                use rustls::pki_types::pem::PemObject;
                let certs = CertificateDer::pem_file_iter(file)
                    .map_err(|e| format!("cannot read sslrootcert {}: {e}", file.display()))?;
                for cert in certs {
                    let cert = cert
                        .map_err(|e| format!("cannot read sslrootcert {}: {e}", file.display()))?;
                    roots.add(cert).map_err(|e| {
                        format!(
                            "sslrootcert {} holds an unusable certificate: {e}",
                            file.display()
                        )
                    })?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth()
    };
    Ok(config)
}

/// The certificate check of libpq's `prefer` and `require`: none, so the connection is
/// encrypted but the server is not authenticated. The handshake's signatures are still
/// verified (they prove the server holds the key it presented).
#[derive(Debug)]
struct EncryptOnly(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_url_never_holds_the_password() {
        let t =
            Target::parse("postgres://alice:s3cret@db.example:6543/team?sslmode=disable").unwrap();
        assert_eq!(t.to_string(), "postgres://alice@db.example:6543/team");
        assert!(!format!("{t:?}").contains("s3cret"));
        let e = Target::parse("postgres://alice:s3cret@db.example/team?bogus=1").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert!(e.to_string().contains("bogus"), "{e}");
    }

    #[test]
    fn defaults_follow_libpq() {
        let t = Target::parse("postgresql://bob@/").unwrap();
        assert_eq!(t.to_string(), "postgres://bob@localhost:5432/bob");
        assert_eq!(t.ssl, SslMode::Prefer);
        assert_eq!(t.config.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
    }

    #[test]
    fn sslrootcert_is_percent_decoded() {
        let t = Target::parse("postgres://u@h/d?sslmode=verify-full&sslrootcert=/tmp/a%20b.crt")
            .unwrap();
        assert_eq!(t.ssl, SslMode::VerifyFull);
        assert_eq!(t.root_cert.as_deref(), Some(Path::new("/tmp/a b.crt")));
    }

    #[test]
    fn bad_urls_name_the_part() {
        let e = Target::parse("postgres://u@h/d?sslmode=sometimes").unwrap_err();
        assert!(e.to_string().contains("sslmode=sometimes"), "{e}");
        let e = Target::parse("postgres://u@h:notaport/d").unwrap_err();
        assert!(e.to_string().contains("not a usable PostgreSQL URL"), "{e}");
        assert!(!Target::is_url("/tmp/postgres/state.db"));
        assert!(Target::is_url("PostgreSQL://x"));
    }

    #[test]
    fn the_password_file_matches_all_four_fields_with_wildcards_and_escapes() {
        let text = "# comment\n\
                    other:5432:team:alice:wrong\n\
                    db\\:1:*:team:alice:pa\\:ss\\\\word\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            pgpass_lookup(text, "db:1", "5432", "team", "alice").as_deref(),
            Some("pa:ss\\word")
        );
        assert_eq!(
            pgpass_lookup(text, "elsewhere", "1", "x", "y").as_deref(),
            Some("fallback")
        );
        assert_eq!(pgpass_lookup("h:1:d:u\n", "h", "1", "d", "u"), None);
    }
}
