//! What each hook says, from the project's memory.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Event, HookInput, Options};
use crate::project::label;
use crate::service::epistemic::BeliefStatus;
use crate::service::lessons::recall::{carries_out, relevance};
use crate::service::lessons::{Lesson, TaskKey, query_terms};
use crate::service::meta::EscalationStatus;
use crate::service::redact::redact;
use crate::store::attempts::{self, Attempt, MAX_ERROR_CHARS, MAX_SUBJECT_CHARS};
use crate::store::directives::{self, SERVER_ACTOR};
use crate::store::{Store, StoreError, beliefs, lessons, meta};

/// What a hook answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    /// Text for the model's context.
    Context(String),
    /// Refuse the tool call, with this reason for the model.
    Deny(String),
    /// Plain text on stdout (`PreCompact`: instructions for the compaction's summary).
    Plain(String),
}

impl Said {
    /// What the hook prints: the JSON Claude Code reads, or (for [`Said::Plain`]) a JSON
    /// string holding the plain text.
    pub fn into_output(self, event: Event) -> Value {
        match self {
            Said::Plain(text) => Value::String(text),
            Said::Context(text) => json!({"hookSpecificOutput": {
                "hookEventName": event.name(), "additionalContext": text}}),
            Said::Deny(reason) => json!({"hookSpecificOutput": {
                "hookEventName": event.name(), "permissionDecision": "deny",
                "permissionDecisionReason": reason}}),
        }
    }
}

/// How many lessons a prompt's recall considers (the best by full-text rank).
const PROMPT_CANDIDATES: usize = 16;

/// A line of a digest or recall is cut at this many characters.
const LINE_CHARS: usize = 400;

/// At most this many lines of an error are kept with an attempt.
const ERROR_LINES: usize = 12;

/// The hook's answer for `event`, or `None` to stay silent.
///
/// # Errors
/// The store's failure.
pub fn speak(
    event: Event,
    input: &HookInput,
    store: &Store,
    options: &Options,
    now: DateTime<Utc>,
) -> Result<Option<Said>, StoreError> {
    match event {
        Event::SessionStart => store.read(|db| {
            let project = label(db.project()).to_owned();
            let active = lessons::list(db, None, false)?;
            let open: Vec<_> = beliefs::all(db)?
                .into_iter()
                .filter(|b| matches!(b.status, BeliefStatus::Active | BeliefStatus::Hypothetical))
                .collect();
            let (recent, _) = directives::list(db, None, 20, 0)?;
            let escalation = meta::load(db)?.escalation_status();
            Ok(digest(
                &project,
                &active,
                &open,
                &recent,
                escalation,
                options.session_chars,
            ))
        }),
        Event::UserPromptSubmit => {
            let Some(prompt) = input.prompt.as_deref().filter(|p| !p.trim().is_empty()) else {
                return Ok(None);
            };
            store.read(|db| {
                // The empty key is no task's (task ids are never blank): every task counts.
                let none = TaskKey::from_stored(String::new());
                let terms = query_terms(prompt, 64);
                let candidates = lessons::related(db, &none, &terms, PROMPT_CANDIDATES)?;
                let mut scored: Vec<(Lesson, _)> = candidates
                    .into_iter()
                    .map(|(l, _)| {
                        let r = relevance(&format!("{} {}", l.task_id, l.strategy_description), prompt);
                        (l, r)
                    })
                    .filter(|(_, r)| r.is_relevant())
                    .collect();
                scored.sort_by(|a, b| {
                    (b.1.shared, b.1.coverage)
                        .partial_cmp(&(a.1.shared, a.1.coverage))
                        .unwrap_or(std::cmp::Ordering::Equal)
                });
                let lessons: Vec<Lesson> = scored.into_iter().map(|(l, _)| l).collect();
                Ok(budgeted(
                    "meta-utl: approaches that already failed in this project and look related to \
                     this request (why each failed; do not repeat one unless you know what changed):",
                    lessons.iter().map(lesson_line),
                    options.prompt_chars,
                )
                .map(Said::Context))
            })
        }
        Event::PreToolUse => {
            let Some(action) = action_of(input) else {
                return Ok(None);
            };
            store.read(|db| {
                let repeats: Vec<Lesson> = lessons::list(db, None, false)?
                    .into_iter()
                    .filter(|l| carries_out(&l.strategy_description, &action))
                    .collect();
                if repeats.is_empty() {
                    return Ok(None);
                }
                let what = if input.tool_name.as_deref() == Some("Bash") {
                    "command"
                } else {
                    "edit"
                };
                let head = format!(
                    "meta-utl: this {what} carries out an approach that already failed in this \
                     project. Choose another approach unless you know what changed (a person can \
                     lift a lesson: meta-utl-mcp lessons lift ID):"
                );
                let text = budgeted(&head, repeats.iter().map(lesson_line), options.prompt_chars)
                    .unwrap_or(head);
                Ok(Some(if options.block_repeats {
                    Said::Deny(text)
                } else {
                    Said::Context(text)
                }))
            })
        }
        Event::PostToolUseFailure => {
            if input.is_interrupt == Some(true) {
                return Ok(None);
            }
            let attempt = attempt_of(input, now);
            store.write(|db| attempts::insert(db, &attempt))?;
            Ok(Some(Said::Context(
                "meta-utl recorded this failed attempt for the project. If you find why this \
                 approach fails, call log_lesson_learned (task_id, strategy_description, \
                 rca_summary) so that no later session repeats it."
                    .into(),
            )))
        }
        Event::Stop | Event::PreCompact => {
            if input.stop_hook_active == Some(true) || input.session_id.is_empty() {
                return Ok(None);
            }
            let n = store.write(|db| attempts::take_unreminded(db, &input.session_id, now))?;
            if n == 0 {
                return Ok(None);
            }
            let (s, have) = if n == 1 { ("", "has") } else { ("s", "have") };
            Ok(Some(if event == Event::Stop {
                Said::Context(format!(
                    "meta-utl: {n} failed attempt{s} of this session {have} no lesson. If you \
                     learned why an approach failed, call log_lesson_learned now; otherwise \
                     finish as you meant to."
                ))
            } else {
                Said::Plain(format!(
                    "Keep in the summary: {n} failed attempt{s} of this session {have} no lesson \
                     in the meta-utl memory yet; once the reason is known, call \
                     log_lesson_learned."
                ))
            }))
        }
    }
}

/// What a tool call does, as text the lessons are compared with: a command, or an edit's file
/// path and new text. `None` for other tools.
fn action_of(input: &HookInput) -> Option<String> {
    let t = &input.tool_input;
    let s = |k: &str| {
        t.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match input.tool_name.as_deref()? {
        "Bash" => Some(s("command")).filter(|c| !c.trim().is_empty()),
        "Edit" => Some(format!("{}\n{}", s("file_path"), s("new_string"))),
        "Write" => Some(format!("{}\n{}", s("file_path"), s("content"))),
        "MultiEdit" => {
            let edits = t.get("edits").and_then(Value::as_array).map(|es| {
                es.iter()
                    .filter_map(|e| e.get("new_string").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            Some(format!("{}\n{}", s("file_path"), edits.unwrap_or_default()))
        }
        _ => None,
    }
}

/// The failed call as an attempt: the command or file, the exit status (`Exit code N` at the
/// head of Claude Code's error), the first [`ERROR_LINES`] lines of the error; secrets
/// redacted, lengths bounded.
fn attempt_of(input: &HookInput, now: DateTime<Utc>) -> Attempt {
    let t = &input.tool_input;
    let subject = ["command", "file_path", "path", "url", "pattern"]
        .iter()
        .find_map(|k| t.get(*k).and_then(Value::as_str))
        .map_or_else(|| t.to_string(), str::to_owned);
    let error = match &input.error {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    let exit_status = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("Exit code "))
        .and_then(|n| n.trim().parse().ok());
    let head: String = error
        .lines()
        .take(ERROR_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    Attempt {
        id: Uuid::new_v4(),
        session_id: input.session_id.clone(),
        tool: input.tool_name.clone().unwrap_or_default(),
        subject: cut(&redact(&subject).text, MAX_SUBJECT_CHARS),
        exit_status,
        error_head: cut(&redact(&head).text, MAX_ERROR_CHARS),
        created_at: now,
        lesson_id: None,
    }
}

/// `text` cut to at most `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// One lesson as a line: task, strategy, why it failed, its id's start.
fn lesson_line(l: &Lesson) -> String {
    let id = l.id.to_string();
    cut(
        &format!(
            "- [{}] {} — failed because: {} (lesson {})",
            l.task_id,
            l.strategy_description,
            l.rca_summary,
            &id[..8]
        ),
        LINE_CHARS,
    )
}

/// `head` and as many `lines` as fit in `budget` characters (with a last line saying how many
/// were left out); `None` when there are no lines.
fn budgeted(head: &str, lines: impl Iterator<Item = String>, budget: usize) -> Option<String> {
    let lines: Vec<String> = lines.collect();
    if lines.is_empty() {
        return None;
    }
    let mut out = head.to_owned();
    let mut used = out.chars().count();
    // Room kept for the "left out" line.
    const TAIL: usize = 80;
    for (i, line) in lines.iter().enumerate() {
        let n = line.chars().count() + 1;
        if used + n + TAIL > budget && i > 0 {
            let left = lines.len() - i;
            out.push_str(&format!(
                "\n(+{left} more; meta-utl-mcp lessons list, or check_strategy_blacklist)"
            ));
            return Some(cut(&out, budget));
        }
        out.push('\n');
        out.push_str(line);
        used += n;
    }
    Some(cut(&out, budget))
}

/// The session-start digest, or `None` when the project has nothing to say.
fn digest(
    project: &str,
    active: &[Lesson],
    open: &[crate::service::epistemic::Belief],
    recent: &[crate::store::directives::Directive],
    escalation: EscalationStatus,
    budget: usize,
) -> Option<Said> {
    let people: Vec<_> = recent
        .iter()
        .filter(|d| d.actor != SERVER_ACTOR)
        .take(5)
        .collect();
    if active.is_empty()
        && open.is_empty()
        && people.is_empty()
        && escalation == EscalationStatus::Normal
    {
        return None;
    }
    let mut sections: Vec<String> = Vec::new();
    if escalation != EscalationStatus::Normal {
        sections.push(format!(
            "Escalation pending ({}): a person should review the meta-learning state \
             (meta-utl-mcp escalations).",
            escalation.as_str()
        ));
    }
    let mut newest: Vec<&Lesson> = active.iter().collect();
    newest.sort_by_key(|l| std::cmp::Reverse(l.created_at));
    let mut lines: Vec<String> = Vec::new();
    if !newest.is_empty() {
        lines.push(format!("Approaches that failed ({}):", newest.len()));
        lines.extend(newest.iter().map(|l| lesson_line(l)));
    }
    if !open.is_empty() {
        lines.push("Open hypotheses:".into());
        lines.extend(open.iter().take(10).map(|b| {
            cut(
                &format!(
                    "- {} ({}, confidence {:.2})",
                    b.target,
                    b.status.as_str(),
                    b.confidence
                ),
                LINE_CHARS,
            )
        }));
    }
    if !people.is_empty() {
        lines.push("Recent directions from people:".into());
        lines.extend(people.iter().map(|d| {
            cut(
                &format!(
                    "- {} {} ({}{}): {}",
                    d.created_at.format("%Y-%m-%d"),
                    d.actor,
                    d.intervention_type.as_str(),
                    d.task_id
                        .as_deref()
                        .map(|t| format!(", task {t}"))
                        .unwrap_or_default(),
                    d.description
                ),
                LINE_CHARS,
            )
        }));
    }
    let head = format!(
        "meta-utl memory of project {project}. Before trying an approach, call \
         check_strategy_blacklist; when one fails and you know why, call log_lesson_learned.{}",
        sections
            .iter()
            .map(|s| format!("\n{s}"))
            .collect::<String>()
    );
    budgeted(&head, lines.into_iter(), budget)
        .or(Some(head))
        .map(Said::Context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_of_turn_and_compaction_remind_once_per_failure() {
        let store = Store::open(&crate::store::DbPath::Memory)
            .unwrap()
            .with_project("acme/shop");
        let options = Options {
            session_chars: 4_000,
            prompt_chars: 2_000,
            block_repeats: false,
        };
        let failed = HookInput {
            session_id: "s".into(),
            tool_name: Some("Bash".into()),
            tool_input: json!({"command": "npm test"}),
            error: Some(json!("Exit code 1")),
            ..HookInput::default()
        };
        let now = Utc::now();
        let said = speak(Event::PostToolUseFailure, &failed, &store, &options, now).unwrap();
        assert!(matches!(said, Some(Said::Context(_))));
        let end = HookInput {
            session_id: "s".into(),
            ..HookInput::default()
        };
        let Some(Said::Plain(text)) =
            speak(Event::PreCompact, &end, &store, &options, now).unwrap()
        else {
            panic!("the compaction gets the reminder as plain instructions");
        };
        assert!(text.contains("1 failed attempt"), "{text}");
        assert_eq!(Said::Plain(text).into_output(Event::PreCompact), Value::String(
            "Keep in the summary: 1 failed attempt of this session has no lesson in the meta-utl \
             memory yet; once the reason is known, call log_lesson_learned."
                .into()
        ));
        assert_eq!(
            speak(Event::Stop, &end, &store, &options, now).unwrap(),
            None,
            "once"
        );
        speak(Event::PostToolUseFailure, &failed, &store, &options, now).unwrap();
        let Some(Said::Context(text)) = speak(Event::Stop, &end, &store, &options, now).unwrap()
        else {
            panic!("a new failure is reminded at the end of the turn");
        };
        assert!(text.contains("1 failed attempt"), "{text}");
    }

    #[test]
    fn a_budget_holds_and_says_what_it_left_out() {
        let lines = (0..100).map(|i| format!("- line {i} {}", "x".repeat(50)));
        let out = budgeted("head", lines, 1_000).unwrap();
        assert!(out.chars().count() <= 1_000, "{}", out.chars().count());
        assert!(out.contains("more; meta-utl-mcp lessons list"), "{out}");
        assert_eq!(budgeted("head", std::iter::empty(), 1_000), None);
    }

    #[test]
    fn an_attempt_keeps_the_exit_status_and_no_secret() {
        let input = HookInput {
            session_id: "s".into(),
            tool_name: Some("Bash".into()),
            tool_input: json!({"command": "curl -H 'Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789' x"}),
            error: Some(json!("Exit code 7\ncurl: (7) Failed to connect\nmore")),
            ..HookInput::default()
        };
        let a = attempt_of(&input, Utc::now());
        assert_eq!(a.exit_status, Some(7));
        assert!(!a.subject.contains("ghp_abc"), "{}", a.subject);
        assert!(a.subject.contains("[REDACTED:"), "{}", a.subject);
        assert!(a.error_head.starts_with("Exit code 7"));
    }
}
