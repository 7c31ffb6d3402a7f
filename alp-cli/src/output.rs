//! What `alp` prints for people: entries as Markdown, errors as one sentence. (With `--json` it prints the documents
//! of `alp_memory::json`.)

use std::fmt::Write as _;
use std::io::IsTerminal as _;

use alp_memory::MemoryError;
use alp_memory::memory_entry::{FieldName, MemoryEntry};

/// Whether output for people on a stream gets colour: only on a terminal, and never when `NO_COLOR` is set (to
/// anything but the empty string, as no-color.org says). JSON output never does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Colour(bool);

impl Colour {
    /// Colour for stdout.
    pub(crate) fn stdout() -> Colour {
        Colour::on(std::io::stdout().is_terminal())
    }

    /// Colour for stderr.
    pub(crate) fn stderr() -> Colour {
        Colour::on(std::io::stderr().is_terminal())
    }

    fn on(terminal: bool) -> Colour {
        Colour(terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
    }

    /// `text` in `style`, or as it is without colour.
    fn paint(self, style: anstyle::Style, text: &str) -> String {
        if self.0 { format!("{}{text}{}", style.render(), style.render_reset()) } else { text.to_owned() }
    }
}

/// An entry for people: a heading, its fields as a list, then the content.
pub(crate) fn entry_markdown(entry: &MemoryEntry, score: Option<usize>, colour: Colour) -> String {
    let heading = colour.paint(anstyle::Style::new().bold(), &format!("## {}", entry.id));
    let mut out = format!("{heading}\n\n");
    let mut field = |name: &str, value: &dyn std::fmt::Display| {
        let _ = writeln!(out, "- {name}: {value}");
    };
    if let Some(score) = score {
        field("score", &score);
    }
    field("kind", &entry.fields.kind);
    field("version", &entry.version);
    // Every field but the kind (shown above), in the order files write them.
    for name in FieldName::ALL.into_iter().filter(|name| *name != FieldName::Kind) {
        if let Some(value) = entry.fields.get(name) {
            field(name.as_str(), &value.text());
        }
    }
    if let Some(at) = entry.expires_at() {
        field("expires", &at);
    }
    field("created", &entry.created_at);
    field("updated", &entry.updated_at);
    out.push('\n');
    out.push_str(entry.content.trim_end_matches(['\n', '\r']));
    out.push('\n');
    out
}

/// An error for people: `error: <one sentence naming the ID and the fix>`.
pub(crate) fn error_line(error: &MemoryError, colour: Colour) -> String {
    let message = error.to_string();
    // The message is one line by construction; a stray line break would only come from a library message.
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let label = colour.paint(anstyle::AnsiColor::Red.on_default().bold(), "error:");
    format!("{label} {message}")
}

/// Serialises a JSON document for stdout.
pub(crate) fn to_json(value: &serde_json::Value) -> String {
    value.to_string()
}

/// A progress bar on stderr for long work, drawn only for people (never with `--json`) and only on a terminal;
/// work of fewer than [`Progress::MIN_TOTAL`] steps draws nothing.
pub(crate) struct Progress {
    bar: Option<indicatif::ProgressBar>,
    enabled: bool,
    label: &'static str,
}

impl Progress {
    const MIN_TOTAL: usize = 50;

    pub(crate) fn new(for_people: bool, label: &'static str) -> Progress {
        use std::io::IsTerminal as _;
        Progress { bar: None, enabled: for_people && std::io::stderr().is_terminal(), label }
    }

    pub(crate) fn show(&mut self, done: usize, total: usize) {
        if !self.enabled || total < Self::MIN_TOTAL {
            return;
        }
        let label = self.label;
        let bar = self.bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total as u64),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} ({eta})") {
                bar.set_style(style);
            }
            bar.set_message(label);
            bar
        });
        bar.set_position(done as u64);
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    /// A bar never outlives its work: on an early return (an error) it is cleared too.
    fn drop(&mut self) {
        self.finish();
    }
}
