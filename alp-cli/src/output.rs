//! What `alp` prints for people: entries as Markdown, errors as one sentence. (With `--json` it prints the documents
//! of `alp_memory::json`.)

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::IsTerminal as _;

use alp_memory::MemoryError;
use alp_memory::memory_entry::{FieldName, MemoryEntry, Version};

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

/// Whether a stream is a terminal. Text from memory (which an agent may have written) is shown there with its
/// control characters made visible ([`visible`]), so that it cannot drive the terminal; on a pipe or in a file it
/// stays byte for byte as stored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Terminal(bool);

impl Terminal {
    /// Whether stdout is a terminal.
    pub(crate) fn stdout() -> Terminal {
        Terminal(std::io::stdout().is_terminal())
    }

    /// Whether stderr is a terminal.
    pub(crate) fn stderr() -> Terminal {
        Terminal(std::io::stderr().is_terminal())
    }

    /// Whether the stream is a terminal.
    pub(crate) fn is_terminal(self) -> bool {
        self.0
    }

    /// `text` as it may be shown on this stream.
    pub(crate) fn show(self, text: &str) -> Cow<'_, str> {
        if self.0 { visible(text) } else { Cow::Borrowed(text) }
    }
}

/// A writer of lines of text from memory (audit records, whose IDs an agent chose) for stdout: on a terminal each
/// line is written as [`Terminal::show`] shows it; elsewhere the bytes pass through unchanged.
pub(crate) struct ShownLines<W: std::io::Write> {
    inner: W,
    terminal: Terminal,
    pending: Vec<u8>,
}

impl<W: std::io::Write> ShownLines<W> {
    pub(crate) fn new(inner: W, terminal: Terminal) -> ShownLines<W> {
        ShownLines { inner, terminal, pending: Vec::new() }
    }

    fn emit(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.terminal.0 {
            self.inner.write_all(self.terminal.show(&String::from_utf8_lossy(line)).as_bytes())
        } else {
            self.inner.write_all(line)
        }
    }
}

impl<W: std::io::Write> std::io::Write for ShownLines<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.emit(&line)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.emit(&rest)?;
        }
        self.inner.flush()
    }
}

/// `text` with every control character but the line break and the tab written as `\u{…}`: C0, DEL and C1, among
/// them ESC and CSI, which start the escape sequences that move the cursor, rewrite or clear the screen, set the
/// window title or the clipboard, or print a link. A carriage return is kept only before a line break (a line
/// ending), since alone it returns to the start of the line and lets what follows hide what precedes.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    let risky = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(risky) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            out.push(c);
        } else if risky(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// An entry for people: a heading, its fields as a list, then the content; the ID and the content as `terminal` may
/// show them (an ID may hold a C1 control character, an ID refuses only C0 and DEL; the field values hold no
/// control character at all, by their validation).
pub(crate) fn entry_markdown(
    entry: &MemoryEntry,
    score: Option<usize>,
    colour: Colour,
    terminal: Terminal,
) -> String {
    let heading =
        colour.paint(anstyle::Style::new().bold(), &format!("## {}", terminal.show(entry.id.as_str())));
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
    out.push_str(&terminal.show(entry.content.trim_end_matches(['\n', '\r'])));
    out.push('\n');
    out
}

/// An error for people: `error: <one sentence naming the ID and the fix>` (as `terminal` may show it).
pub(crate) fn error_line(error: &MemoryError, colour: Colour, terminal: Terminal) -> String {
    let message = error.to_string();
    let message = terminal.show(&message);
    // The message is one line by construction; a stray line break would only come from a library message.
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let label = colour.paint(anstyle::AnsiColor::Red.on_default().bold(), "error:");
    format!("{label} {message}")
}

/// `1 entry`, `2 entries`: a count and its noun in the right number.
pub(crate) fn counted(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// The first line of `content`, cut at 60 characters (with `…`), for one-line listings.
pub(crate) fn first_line(content: &str) -> String {
    const WIDTH: usize = 60;
    let line = content.lines().next().unwrap_or("");
    match line.char_indices().nth(WIDTH) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// One line of `alp memory history` for people.
pub(crate) fn version_line(version: &Version) -> String {
    let what = match version {
        Version::Entry(entry) => first_line(&entry.content),
        Version::Redacted(_) => "(redacted)".to_owned(),
        Version::Tombstone { .. } => "(deleted)".to_owned(),
    };
    format!("  version {}  {}  {what}", version.version(), version.updated_at())
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

#[cfg(test)]
mod tests {
    use super::visible;

    #[test]
    fn control_characters_are_made_visible_except_line_breaks_and_tabs() {
        let cases = [
            ("plain text, sở dữ liệu\n\ttabbed\n", "plain text, sở dữ liệu\n\ttabbed\n"),
            ("windows\r\nline endings\r\n", "windows\r\nline endings\r\n"),
            ("\u{1b}]52;c;ZXZpbA==\u{7}", "\\u{1b}]52;c;ZXZpbA==\\u{7}"),
            ("\u{1b}[2J\u{1b}[Hfake prompt", "\\u{1b}[2J\\u{1b}[Hfake prompt"),
            ("hidden\rshown", "hidden\\u{d}shown"),
            (
                "c1 csi \u{9b}31m and del \u{7f} and nul \u{0}",
                "c1 csi \\u{9b}31m and del \\u{7f} and nul \\u{0}",
            ),
            ("a\r", "a\\u{d}"),
            ("\r\r\n", "\\u{d}\r\n"),
        ];
        for (text, shown) in cases {
            assert_eq!(visible(text), shown, "{text:?}");
        }
        assert!(matches!(visible("nothing to change\n"), std::borrow::Cow::Borrowed(_)));
    }
}
