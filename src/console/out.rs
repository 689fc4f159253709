//! The console's output: the one place in the console that writes to stdout. Aligned tables
//! (comfy-table), JSON for `--json`, and colour only when stdout is a terminal and `NO_COLOR`
//! is unset or empty (no-color.org).

use std::io::{IsTerminal, Write};

use comfy_table::{ContentArrangement, Table, presets};
use serde::Serialize;

use super::ConsoleError;

/// Width tables wrap to on a terminal whose size cannot be read, when `COLUMNS` is not set.
const DEFAULT_WIDTH: u16 = 120;

/// The width tables wrap to: `COLUMNS` when it holds a width (on a pipe too: the user asked
/// for it), else on a terminal its width (read by comfy-table), else none (a pipe gets whole
/// lines).
fn table_width(terminal: bool) -> Option<u16> {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|c| *c >= 20);
    columns.or_else(|| terminal.then(|| Table::new().width().unwrap_or(DEFAULT_WIDTH)))
}

/// A colour or emphasis of [`Out::paint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// Bold: headings and labels.
    Bold,
    /// Green: healthy, normal.
    Good,
    /// Yellow: worth a look.
    Warn,
    /// Red: needs a person.
    Bad,
    /// Dim: secondary detail.
    Dim,
}

impl Paint {
    fn code(self) -> &'static str {
        match self {
            Paint::Bold => "1",
            Paint::Good => "32",
            Paint::Warn => "33",
            Paint::Bad => "31",
            Paint::Dim => "2",
        }
    }
}

/// Where a console command writes its answer.
pub struct Out {
    w: Box<dyn Write>,
    color: bool,
    width: Option<u16>,
}

impl Out {
    /// Standard output: tables wrapped to `COLUMNS`, else to the terminal's width; coloured
    /// only when it is a terminal and `NO_COLOR` is unset or empty.
    pub fn standard() -> Out {
        let stdout = std::io::stdout();
        let terminal = stdout.is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let width = table_width(terminal);
        Out {
            w: Box::new(std::io::BufWriter::new(stdout)),
            color: terminal && !no_color,
            width,
        }
    }

    /// Any writer, without colour (for tests and files).
    pub fn to_writer(w: Box<dyn Write>) -> Out {
        Out {
            w,
            color: false,
            width: None,
        }
    }

    /// Whether colour is on.
    pub fn color(&self) -> bool {
        self.color
    }

    /// `text` in `paint` when colour is on, else as it is.
    pub fn paint(&self, paint: Paint, text: &str) -> String {
        if self.color {
            format!("\x1b[{}m{text}\x1b[0m", paint.code())
        } else {
            text.to_string()
        }
    }

    /// Write one line.
    ///
    /// # Errors
    /// [`ConsoleError::Io`] when stdout fails (a closed pipe, a full disk).
    pub fn line(&mut self, text: &str) -> Result<(), ConsoleError> {
        writeln!(self.w, "{text}").map_err(ConsoleError::io("writing the output"))
    }

    /// Write `label` (bold, padded to 14 columns) and `value` on one line.
    ///
    /// # Errors
    /// As [`Out::line`].
    pub fn field(&mut self, label: &str, value: &str) -> Result<(), ConsoleError> {
        let label = self.paint(Paint::Bold, &format!("{label:<14}"));
        self.line(&format!("{label}{value}"))
    }

    /// Write `value` as pretty JSON.
    ///
    /// # Errors
    /// As [`Out::line`].
    pub fn json<T: Serialize>(&mut self, value: &T) -> Result<(), ConsoleError> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| ConsoleError::Format(format!("cannot encode the answer: {e}")))?;
        self.line(&escape_json_controls(&text))
    }

    /// A table with `header`, aligned, wrapped to the terminal width on a terminal.
    pub fn table(&self, header: &[&str]) -> Table {
        let mut t = Table::new();
        t.load_style(presets::UTF8_HORIZONTAL_ONLY);
        match self.width {
            Some(w) => {
                t.set_width(w)
                    .set_content_arrangement(ContentArrangement::Dynamic);
            }
            None => {
                t.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
        t.set_header(header.iter().map(|h| self.paint(Paint::Bold, h)));
        t
    }

    /// Write a table.
    ///
    /// # Errors
    /// As [`Out::line`].
    pub fn print_table(&mut self, t: &Table) -> Result<(), ConsoleError> {
        self.line(&t.to_string())
    }

    /// Write raw bytes (an export line).
    ///
    /// # Errors
    /// As [`Out::line`].
    pub fn raw(&mut self, bytes: &[u8]) -> Result<(), ConsoleError> {
        self.w
            .write_all(bytes)
            .map_err(ConsoleError::io("writing the output"))
    }

    /// Flush what is buffered.
    ///
    /// # Errors
    /// As [`Out::line`].
    pub fn flush(&mut self) -> Result<(), ConsoleError> {
        self.w
            .flush()
            .map_err(ConsoleError::io("writing the output"))
    }
}

/// Whether `c` must not reach a terminal as it is: the C0 controls (ESC, BEL, CR, the
/// newline…), DEL, the C1 controls (U+0080–U+009F: CSI, OSC… in their 8-bit form) and the
/// characters that reorder or break lines invisibly (bidirectional overrides and isolates,
/// U+2028, U+2029).
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            | '\u{2028}' | '\u{2029}')
}

/// Stored text as the console shows it: every character of `unsafe_char` escaped (`\n`,
/// `\t`, `\r`, else `\u{1b}`), so that text an agent stored can neither move the cursor,
/// retitle the window, clear the screen nor hide lines. Every console command passes stored
/// text through this before printing it (JSON output through [`escape_json_controls`]).
pub fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if unsafe_char(c) => {
                use std::fmt::Write as _;
                let _ = write!(s, "\\u{{{:x}}}", c as u32);
            }
            c => s.push(c),
        }
    }
    std::borrow::Cow::Owned(s)
}

/// JSON text with the characters of `unsafe_char` that serde_json leaves as they are (DEL,
/// the C1 controls, the bidirectional controls, U+2028/U+2029) written as `\uXXXX` escapes:
/// the same JSON, safe on a terminal (serde_json escapes only U+0000–U+001F). Such characters
/// can occur only inside JSON strings, where the escape means the same character.
pub fn escape_json_controls(json: &str) -> std::borrow::Cow<'_, str> {
    let c1 = |c: char| unsafe_char(c) && u32::from(c) >= 0x7f;
    if !json.chars().any(c1) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut s = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c1(c) {
            use std::fmt::Write as _;
            let _ = write!(s, "\\u{:04x}", c as u32);
        } else {
            s.push(c);
        }
    }
    std::borrow::Cow::Owned(s)
}

/// A time as the console shows it: UTC, to the second.
pub fn when(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// `text` made [`safe`], then cut to `max` characters, with `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    let text = safe(text);
    if text.chars().count() <= max {
        text.into_owned()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// A byte count in binary units (`12.3 MiB`).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A progress bar on stderr for `total` units, drawn only when stderr is a terminal.
pub fn progress(total: u64, what: &str) -> indicatif::ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        indicatif::ProgressDrawTarget::stderr()
    } else {
        indicatif::ProgressDrawTarget::hidden()
    };
    let bar = indicatif::ProgressBar::with_draw_target(Some(total), target);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({elapsed})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}
