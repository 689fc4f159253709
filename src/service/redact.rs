//! Secrets out of stored text. Agents write root causes and evidence from error output, which
//! carries tokens and keys; whatever is stored is exported, shown to later sessions and, on
//! PostgreSQL, to a whole team. [`redact`] replaces each secret with a marker naming its kind
//! (`[REDACTED:aws-secret-key]`) and reports the kinds it replaced.
//!
//! The rules follow the public gitleaks rule set (github.com/gitleaks/gitleaks,
//! `config/gitleaks.toml`; its rule id is named on each rule here): fixed-prefix tokens are
//! matched by their documented shape, and generic secrets only where text assigns them to a
//! name that says "secret" (`password=…`, `"api_key": "…"`) or puts them in a URL's password.
//! Ordinary identifiers stay: a commit id, a UUID, an image digest, `max_tokens=4096`.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

/// One rule: a kind (the marker's name), the pattern, and which capture group is the secret
/// (0: the whole match).
struct Rule {
    kind: &'static str,
    pattern: &'static str,
    group: usize,
}

/// The rules, in the order they are applied (a longer, more specific shape before a generic
/// one that would take part of it).
const RULES: &[Rule] = &[
    // gitleaks `private-key`: the whole PEM block, or what is left of it when the text was
    // cut before its END line.
    Rule {
        kind: "private-key",
        pattern: r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\z)",
        group: 0,
    },
    // gitleaks `github-pat`, `github-oauth`, `github-app-token`, `github-refresh-token`.
    Rule {
        kind: "github-token",
        pattern: r"(?-u:\b)(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36}(?-u:\b)",
        group: 0,
    },
    // gitleaks `github-fine-grained-pat`.
    Rule {
        kind: "github-token",
        pattern: r"(?-u:\b)github_pat_[0-9A-Za-z_]{82}(?-u:\b)",
        group: 0,
    },
    // gitleaks `gitlab-pat` (and the same shape of pipeline, deploy and runner tokens).
    Rule {
        kind: "gitlab-token",
        pattern: r"(?-u:\b)gl(?:pat|ptt|dt|rt)-[0-9A-Za-z_-]{20,}",
        group: 0,
    },
    // gitleaks `slack-bot-token`, `slack-user-token`, `slack-app-token`, legacy tokens.
    Rule {
        kind: "slack-token",
        pattern: r"(?-u:\b)xox[abposre]-[0-9A-Za-z-]{10,}",
        group: 0,
    },
    // gitleaks `slack-webhook-url`.
    Rule {
        kind: "slack-webhook",
        pattern: r"https?://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_-]{20,}",
        group: 0,
    },
    // gitleaks `stripe-access-token`.
    Rule {
        kind: "stripe-key",
        pattern: r"(?-u:\b)(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{10,99}(?-u:\b)",
        group: 0,
    },
    // gitleaks `anthropic-api-key`, `anthropic-admin-api-key`.
    Rule {
        kind: "anthropic-key",
        pattern: r"(?-u:\b)sk-ant-(?:api03|admin01)-[A-Za-z0-9_-]{20,}",
        group: 0,
    },
    // gitleaks `openai-api-key`: the `T3BlbkFJ` marker of older keys, and the project,
    // service-account and admin keys.
    Rule {
        kind: "openai-key",
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,})",
        group: 0,
    },
    // gitleaks `aws-access-token`.
    Rule {
        kind: "aws-access-key-id",
        pattern: r"(?-u:\b)(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z2-7]{16}(?-u:\b)",
        group: 0,
    },
    // An AWS secret access key: 40 base64 characters assigned to a name that says AWS and
    // secret (gitleaks' generic rule keyed on `aws`).
    Rule {
        kind: "aws-secret-key",
        pattern: r#"(?i)aws[[0-9A-Za-z_].-]{0,20}?secret[[0-9A-Za-z_].-]{0,20}["']?\s*(?:=|:|=>)\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|\z)"#,
        group: 1,
    },
    // gitleaks `jwt`.
    Rule {
        kind: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        group: 0,
    },
    // An opaque bearer token in an `Authorization` header (gitleaks' `generic-api-key` keyed on
    // `bearer`).
    Rule {
        kind: "bearer-token",
        pattern: r"(?i)(?-u:\b)bearer\s+([A-Za-z0-9._~+/-]{20,}=*)",
        group: 1,
    },
    // A password in a URL: `scheme://user:PASSWORD@host`.
    Rule {
        kind: "url-password",
        pattern: r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@]{1,100}:([^\s/@]{1,200})@",
        group: 1,
    },
    // gitleaks `generic-api-key`, narrowed to assignments: a name ending in one of the words
    // below, `=` or `:` (or JSON's `": "`), and a value that is not a placeholder (`$VAR`,
    // `${…}`, `<…>`, `***`, or an earlier marker).
    Rule {
        kind: "secret-assignment",
        pattern: r#"(?i)(?-u:\b)[[0-9A-Za-z_].-]{0,40}?(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|auth)["']?\s*(?:=|:=|:|=>)\s*["']?([^\s"'$<*\[,;`)}{]{4,})"#,
        group: 1,
    },
];

static COMPILED: LazyLock<Vec<(&'static str, Regex, usize)>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| {
            let re = Regex::new(r.pattern).expect("the redaction rules are valid regexes");
            (r.kind, re, r.group)
        })
        .collect()
});

/// Every rule in one automaton: one pass over a text says which rules can match it, so that
/// the common text without a secret is read once, not once per rule.
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(RULES.iter().map(|r| r.pattern)).expect("the redaction rules are valid regexes")
});

/// What [`redact`] did to one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text with each secret replaced by `[REDACTED:KIND]`; borrowed when nothing was.
    pub text: Cow<'a, str>,
    /// The kinds replaced, each once, in rule order (empty when nothing was).
    pub kinds: Vec<&'static str>,
}

/// A value assigned to a secret-sounding name that is a setting, not a secret: a boolean or
/// null word, or a short number (`manage_master_user_password = true`, `token_ttl: 3600`).
fn not_a_secret(value: &str) -> bool {
    const WORDS: [&str; 12] = [
        "true", "false", "null", "none", "nil", "yes", "no", "on", "off", "required", "optional",
        "disabled",
    ];
    WORDS.iter().any(|w| value.eq_ignore_ascii_case(w))
        || (value.len() <= 6 && value.bytes().all(|b| b.is_ascii_digit()))
}

/// The marker that replaces a secret of `kind`.
pub fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// Replace every secret in `text` (see the module documentation) with its marker.
///
/// Linear in the text's length per rule (the `regex` crate has no backtracking); text without
/// a secret is returned borrowed. Applying it twice changes nothing more.
pub fn redact(text: &str) -> Redacted<'_> {
    let candidates = ANY.matches(text);
    if !candidates.matched_any() {
        return Redacted {
            text: Cow::Borrowed(text),
            kinds: Vec::new(),
        };
    }
    // The rules the text did not match are skipped: a marker one rule puts in does not make
    // another match (the test `skipping_the_rules_the_set_rules_out_changes_nothing`).
    apply(text, |rule| candidates.matched(rule))
}

/// The rules `may_match` lets through, in order, each on the text the earlier ones left.
fn apply(text: &str, may_match: impl Fn(usize) -> bool) -> Redacted<'_> {
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    let mut kinds = Vec::new();
    for (rule, (kind, re, group)) in COMPILED.iter().enumerate() {
        if !may_match(rule) || !re.is_match(&out) {
            continue;
        }
        let replaced = re.replace_all(&out, |c: &Captures<'_>| {
            let whole = c.get(0).expect("group 0 always matches");
            if *kind == "secret-assignment"
                && c.get(*group).is_some_and(|v| not_a_secret(v.as_str()))
            {
                return whole.as_str().to_string();
            }
            match c.get(*group) {
                Some(secret) if *group != 0 => {
                    let start = secret.start() - whole.start();
                    let end = secret.end() - whole.start();
                    let w = whole.as_str();
                    format!("{}{}{}", &w[..start], marker(kind), &w[end..])
                }
                _ => marker(kind),
            }
        });
        if let Cow::Owned(s) = replaced
            && s != *out
        {
            if !kinds.contains(kind) {
                kinds.push(*kind);
            }
            out = Cow::Owned(s);
        }
    }
    Redacted { text: out, kinds }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (text, the kinds found). Every secret here is made up in the documented shape.
    const FOUND: &[(&str, &[&str])] = &[
        (
            "push failed: remote: Invalid token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 for acme/shop",
            &["github-token"],
        ),
        (
            "GITHUB_TOKEN=github_pat_11ABCDEFG0123456789abc_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456",
            &["github-token"],
        ),
        (
            "curl --header 'PRIVATE-TOKEN: glpat-abcdefghij0123456789'",
            &["gitlab-token"],
        ),
        (
            "slack said invalid_auth for xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            &["slack-token"],
        ),
        (
            "posting to https://hooks.slack.com/services/T0123ABCD/B0123ABCD/aBcDeFgHiJkLmNoPqRsTuVwX timed out",
            &["slack-webhook"],
        ),
        (
            "stripe.error.AuthenticationError: sk_live_51Habcdefghijklmnopqrstuv",
            &["stripe-key"],
        ),
        (
            "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ_-abcdefAA",
            &["anthropic-key"],
        ),
        (
            "openai.AuthenticationError: Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
            &["openai-key"],
        ),
        (
            "old key sk-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst rejected",
            &["openai-key"],
        ),
        (
            "The security token included in the request is invalid: AKIAIOSFODNN7EXAMPLE",
            &["aws-access-key-id"],
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            &["aws-secret-key"],
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\nabcd\n-----END RSA PRIVATE KEY-----\ndone",
            &["private-key"],
        ),
        (
            "key file starts -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA",
            &["private-key"],
        ),
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            &["jwt"],
        ),
        (
            "curl -H 'Authorization: Bearer 8f14e45fceea167a5a36dedd4bea2543aa' https://api.acme.dev",
            &["bearer-token"],
        ),
        (
            "DATABASE_URL=postgres://app:s3cr3t-Pa55@db.internal:5432/shop",
            &["url-password"],
        ),
        (
            "connect with password=hunter2hunter2 to the replica",
            &["secret-assignment"],
        ),
        (
            r#"{"api_key": "0123456789abcdef0123"}"#,
            &["secret-assignment"],
        ),
        ("export DB_PASSWORD='Tr0ub4dor&3'", &["secret-assignment"]),
        ("client_secret: 9f8e7d6c5b4a", &["secret-assignment"]),
    ];

    /// Texts that look technical and hold no secret.
    const KEPT: &[&str] = &[
        "revert 3f786850e387550fdab836ed7e6dc881de23001b, which broke the checkout test",
        "lesson 2b1f3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d stays active",
        "pull postgres@sha256:4f1c0b2e9a7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170615243a",
        "set max_tokens=4096 and token_count=12 in the request",
        "the token budget ran out; the password reset email never arrived",
        "clone https://github.com/acme/shop and git@github.com:acme/shop.git",
        "postgres://app@db.internal:5432/shop has no password in it",
        "password=$DB_PASSWORD and token=${GITHUB_TOKEN} come from the environment",
        "api_key=<your key here>, secret=*** in the docs",
        "risk-free refactor of the sk-learn pipeline",
        "image ghcr.io/acme/shop:v1.2.3 and AKIA prefix explained",
        "set manage_master_user_password = true and auth_token_ttl: 3600 in the module",
    ];

    #[test]
    fn each_rule_finds_its_secret_and_leaves_no_byte_of_it() {
        for (text, kinds) in FOUND {
            let r = redact(text);
            assert_eq!(r.kinds, *kinds, "{text} -> {}", r.text);
            for kind in *kinds {
                assert!(r.text.contains(&marker(kind)), "{}", r.text);
            }
        }
        // No byte of the secret itself is left.
        let r = redact("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
        assert_eq!(r.text, "aws_secret_access_key = [REDACTED:aws-secret-key]");
        let r = redact("DATABASE_URL=postgres://app:s3cr3t-Pa55@db.internal:5432/shop");
        assert_eq!(
            r.text,
            "DATABASE_URL=postgres://app:[REDACTED:url-password]@db.internal:5432/shop"
        );
        let r = redact("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\nnext");
        assert_eq!(r.text, "[REDACTED:private-key]\nnext");
    }

    #[test]
    fn ordinary_identifiers_and_placeholders_are_kept() {
        for text in KEPT {
            let r = redact(text);
            assert!(r.kinds.is_empty(), "{text} -> {} ({:?})", r.text, r.kinds);
            assert!(matches!(r.text, Cow::Borrowed(_)));
        }
    }

    #[test]
    fn skipping_the_rules_the_set_rules_out_changes_nothing() {
        let texts = FOUND.iter().map(|(t, _)| *t).chain(KEPT.iter().copied());
        for text in texts {
            assert_eq!(redact(text), apply(text, |_| true), "{text}");
        }
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        for (text, _) in FOUND {
            let once = redact(text).text.into_owned();
            let twice = redact(&once);
            assert!(twice.kinds.is_empty(), "{once} -> {}", twice.text);
        }
    }
}
