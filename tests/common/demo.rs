//! Seeded demo data: fills a database through the MCP tools of a running server, the same way
//! every time (a fixed linear congruential generator; observation times relative to now). Used
//! by the console tests and for the report screenshot in `docs/`.

use chrono::{Duration, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::Server;

/// The demo's tasks and the lessons logged for them: (task, strategy, root cause, failure type).
pub const LESSONS: [(&str, &str, &str, &str); 6] = [
    (
        "TASK-42",
        "Mock the database layer in integration tests",
        "Mocks hid a migration bug that only the real SQLite schema exposed.",
        "ARCHITECTURAL_MISUNDERSTANDING",
    ),
    (
        "TASK-42",
        "Pin serde to 1.0.100 to silence the derive error",
        "The pin conflicted with schemars, which needs a newer serde.",
        "DEPENDENCY_CONFLICT",
    ),
    (
        "TASK-42",
        "Retry the flaky test three times in CI",
        "The test was not flaky: it depended on the order of a HashMap.",
        "LOGIC_ERROR",
    ),
    (
        "TASK-7",
        "Call git push --force on the shared branch",
        "Force-pushing rewrote a colleague's commits.",
        "TOOL_MISUSE",
    ),
    (
        "TASK-7",
        "Parse the config with a regular expression",
        "Nested TOML tables broke the pattern; a TOML parser was needed.",
        "LOGIC_ERROR",
    ),
    (
        "TASK-7",
        "Cache the HTTP client in a global static",
        "The static outlived the runtime and panicked at shutdown.",
        "ARCHITECTURAL_MISUNDERSTANDING",
    ),
];

/// The strategy the export/import test expects to be blocked: the first lesson's.
pub const BLOCKED: (&str, &str) = ("TASK-42", "Mock the database layer in integration tests");

/// Whether [`BLOCKED`]'s strategy is blacklisted for its task, as `s` answers.
pub fn blacklisted(s: &mut Server) -> bool {
    let (task, strategy) = BLOCKED;
    s.tool_ok(
        "check_strategy_blacklist",
        json!({"task_id": task, "strategy": strategy}),
    )["blacklisted"]
        .as_bool()
        .expect("blacklisted")
}

/// A fixed pseudo-random sequence in [0, 1) (Knuth's MMIX LCG, top 53 bits).
pub struct Lcg(u64);

impl Lcg {
    /// The generator with `seed`.
    pub fn new(seed: u64) -> Self {
        Lcg(seed)
    }

    /// The next number in [0, 1).
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Fill the database behind `s` through its tools: meta-learning predictions that move λ and
/// end in a human escalation (38 low-accuracy predictions: three failed Bayesian runs), 1,200
/// calibration observations over the last six days for three embedders (overconfident, with
/// thresholds fed to the bandits of two domains), a Level 2 temperature fit, six lessons,
/// two directives and two beliefs.
pub fn seed(s: &mut Server) {
    let mut rng = Lcg::new(17);
    // λ moves on large errors that carry ΔS/ΔC (fewer than 10 of them, so that the automatic
    // Bayesian runs cannot evaluate and fail).
    for i in 0..8 {
        let ds = 0.2 + 0.6 * rng.next();
        let dc = 0.2 + 0.6 * rng.next();
        s.tool_ok(
            "record_prediction",
            json!({"embedder_index": i % 3, "predicted": 0.75, "actual": 0.3 + 0.1 * rng.next(),
                   "delta_s": ds, "delta_c": dc, "domain": "code"}),
        );
    }
    // Then low accuracy in both directions (|error| 0.4), without ΔS/ΔC: λ wanders by the
    // seed rule, and every tenth prediction a Bayesian run fails; the third failure escalates
    // to a human.
    for i in 0..30 {
        let (predicted, actual) = if rng.next() < 0.55 {
            (0.8, 0.4)
        } else {
            (0.2, 0.6)
        };
        s.tool_ok(
            "record_prediction",
            json!({"embedder_index": i % 4, "predicted": predicted, "actual": actual}),
        );
    }
    let now = Utc::now();
    let start = now - Duration::days(6);
    let thresholds = [0.70, 0.72, 0.75, 0.77, 0.80];
    for (embedder, skew) in [(1u8, 1.8f64), (5, 1.3), (7, 2.4)] {
        let mut batch = Vec::new();
        for k in 0..400 {
            let at = start + Duration::minutes(k * 21 + i64::from(embedder));
            let confidence = 0.35 + 0.64 * rng.next();
            // Overconfident: the chance of being right is below the confidence.
            let correct = rng.next() < confidence.powf(skew);
            let domain = if k % 2 == 0 { "Code" } else { "Medical" };
            let mut o = json!({
                "embedder_id": embedder, "confidence": confidence, "correct": correct,
                "domain": domain,
                "timestamp": at.to_rfc3339_opts(SecondsFormat::Micros, true),
            });
            if k % 3 == 0 {
                o["threshold_name"] = json!("theta_acc");
                o["threshold_used"] = json!(thresholds[(k as usize / 3) % thresholds.len()]);
            }
            batch.push(o);
        }
        s.tool_ok(
            "record_calibration_observations",
            json!({"observations": batch}),
        );
    }
    s.tool_ok("trigger_recalibration", json!({"level": 2}));
    for (task, strategy, rca, kind) in LESSONS {
        s.tool_ok(
            "log_lesson_learned",
            json!({"task_id": task, "strategy_description": strategy, "rca_summary": rca,
                   "failure_type": kind, "source_agent": "claude-code"}),
        );
    }
    s.tool_ok(
        "record_directive",
        json!({"task_id": "TASK-42", "intervention_type": "FEEDBACK",
               "description": "Use the real SQLite schema in integration tests.", "actor": "alice"}),
    );
    s.tool_ok(
        "record_directive",
        json!({"task_id": "TASK-7", "intervention_type": "MANUAL_FIX",
               "description": "Restored the shared branch from the reflog.", "actor": "bob"}),
    );
    for (action, confidence) in [("hypothesize", 0.6), ("verify", 0.9)] {
        s.tool_ok(
            "epistemic_action",
            json!({"action_type": action, "target": "The login test fails because the session cookie expires",
                   "confidence": confidence, "rationale": "It fails only in runs over 30 s",
                   "context": {"uncertainty_type": "epistemic"}}),
        );
    }
    s.tool_ok(
        "epistemic_action",
        json!({"action_type": "assert", "target": "CI runs on Debian 12",
               "confidence": 0.95, "rationale": "The CI image says so"}),
    );
}

/// The escalation status the server reports.
pub fn escalation_status(s: &mut Server) -> Value {
    s.tool_ok("get_meta_learning_status", json!({}))["escalation_status"].clone()
}
