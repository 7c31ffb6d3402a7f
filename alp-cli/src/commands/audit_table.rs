//! `alp audit show` on a terminal: the matching records as a table for people, newest last. The records arrive as
//! the stored lines [`select`](alp_memory::memory_audit::select) writes; the first [`BUFFERED`] rows set the column
//! widths, and every later row is printed as it arrives with those widths, so that memory stays bounded whatever
//! `--limit` asks for.

use std::io::{self, Write};

use serde::Deserialize;

use crate::output::{counted, visible};

/// The columns, in order.
const COLUMNS: [&str; 8] = ["seq", "time (local)", "actor", "door", "id", "outcome", "via", "shown"];

/// How many rows are held to measure the columns before the table is printed.
const BUFFERED: usize = 1000;

/// The fields of a record a row shows (the others, `grant`, `prevHash` and `hash`, are left out).
#[derive(Deserialize)]
struct Record {
    seq: u64,
    timestamp: String,
    actor: String,
    operation: String,
    #[serde(default)]
    door: Option<String>,
    id: String,
    outcome: String,
    code: Option<String>,
    #[serde(default)]
    shown: Vec<String>,
    #[serde(default)]
    via: Option<String>,
}

type Row = [String; 8];

/// A writer of stored audit lines that prints them as table rows.
pub(crate) struct AuditTable<W: Write> {
    out: W,
    wide: bool,
    /// The stored RFC 3339 UTC timestamp as local time.
    local: fn(&str) -> String,
    /// Bytes of a line not yet complete.
    pending: Vec<u8>,
    /// Rows held until the widths are set.
    rows: Vec<Row>,
    /// Set once the header is printed.
    widths: Option<[usize; 8]>,
}

impl<W: Write> AuditTable<W> {
    /// A table written to `out`; with `wide`, the `shown` column lists the entries instead of counting them.
    pub(crate) fn new(out: W, wide: bool, local: fn(&str) -> String) -> AuditTable<W> {
        AuditTable { out, wide, local, pending: Vec::new(), rows: Vec::new(), widths: None }
    }

    fn row(&self, line: &[u8]) -> io::Result<Row> {
        let record: Record = serde_json::from_slice(line)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not an audit record: {e}")))?;
        let outcome = match (&record.code, record.outcome.as_str()) {
            (Some(code), _) => code.clone(),
            (None, outcome) => outcome.to_owned(),
        };
        let shown = match (record.shown.is_empty(), self.wide) {
            (true, _) => "-".to_owned(),
            (false, true) => record.shown.join(" "),
            (false, false) => record.shown.len().to_string(),
        };
        Ok([
            record.seq.to_string(),
            (self.local)(&record.timestamp),
            if record.actor.is_empty() { "(operator)".to_owned() } else { cell(&record.actor) },
            cell(record.door.as_deref().unwrap_or(&record.operation)),
            if record.id.is_empty() { "-".to_owned() } else { cell(&record.id) },
            cell(&outcome),
            record.via.as_deref().map_or_else(|| "-".to_owned(), cell),
            cell(&shown),
        ])
    }

    fn print(&mut self, row: &Row, widths: &[usize; 8]) -> io::Result<()> {
        let mut line = String::new();
        for (n, (text, width)) in row.iter().zip(widths).enumerate() {
            if n == 0 {
                line.push_str(&format!("{text:>width$}"));
            } else if n == row.len() - 1 {
                line.push_str(text);
            } else {
                line.push_str(&format!("{text:<width$}"));
            }
            if n + 1 < row.len() {
                line.push_str("  ");
            }
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())
    }

    /// Measures the rows held, prints the header and them.
    fn start(&mut self) -> io::Result<()> {
        let mut widths = COLUMNS.map(|name| name.chars().count());
        for row in &self.rows {
            for (width, text) in widths.iter_mut().zip(row) {
                *width = (*width).max(text.chars().count());
            }
        }
        self.widths = Some(widths);
        self.print(&COLUMNS.map(str::to_owned), &widths)?;
        for row in std::mem::take(&mut self.rows) {
            self.print(&row, &widths)?;
        }
        Ok(())
    }

    fn push(&mut self, line: &[u8]) -> io::Result<()> {
        let row = self.row(line)?;
        match self.widths {
            Some(widths) => self.print(&row, &widths),
            None => {
                self.rows.push(row);
                if self.rows.len() >= BUFFERED { self.start() } else { Ok(()) }
            }
        }
    }

    /// Prints what is held and the closing line: how many records were shown, and, when the window was the
    /// terminal's default `--tail` and it was full, how to see others.
    pub(crate) fn finish(mut self, count: u64, default_tail: Option<u64>) -> io::Result<()> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.push(&rest)?;
        }
        if count == 0 {
            self.out.write_all(b"no record matches\n")?;
            return self.out.flush();
        }
        if self.widths.is_none() {
            self.start()?;
        }
        let mut closing = format!("{} shown", counted(count, "record", "records"));
        if let Some(tail) = default_tail.filter(|tail| *tail == count) {
            closing.push_str(&format!(
                " (the last {tail} that match; --tail N or --limit N shows others, --json prints them as stored)"
            ));
        }
        closing.push('\n');
        self.out.write_all(closing.as_bytes())?;
        self.out.flush()
    }
}

impl<W: Write> Write for AuditTable<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.push(&line)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Text from a record (an ID, a role an agent's runtime gave) as one cell: control characters, line breaks and
/// tabs too, written as `\u{…}`, so that no cell can move the cursor or break the row.
fn cell(text: &str) -> String {
    visible(text).replace('\n', "\\u{a}").replace('\t', "\\u{9}")
}

/// A stored timestamp (RFC 3339 UTC) in the local time zone, to the second: `2026-11-29 23:33:13`. Text that is not
/// a time is shown as it is.
pub(crate) fn local_time(stored: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(stored) {
        Ok(at) => at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S").to_string(),
        Err(_) => cell(stored),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::AuditTable;

    /// The time as stored, without the date: the tests do not depend on the machine's time zone.
    fn clock(stored: &str) -> String {
        stored[11..19].to_owned()
    }

    const LOG: &str = concat!(
        r#"{"seq":7,"timestamp":"2026-11-29T22:33:13.123Z","actor":"worker","operation":"search","door":"context","id":"project:alp","outcome":"allowed","code":null,"shown":["project:alp:goals@3","shared:team@1"],"via":"tok_1","prevHash":"a","hash":"b"}"#,
        "\n",
        r#"{"seq":8,"timestamp":"2026-11-29T22:33:14.000Z","actor":"worker","operation":"get","door":"get","id":"private:main:x","outcome":"denied","code":"PRIVATE_MEMORY_DENIED","prevHash":"b","hash":"c"}"#,
        "\n",
        r#"{"seq":10,"timestamp":"2026-11-29T22:33:15.000Z","actor":"","operation":"token-create","id":"tok_2","outcome":"allowed","code":null,"prevHash":"c","hash":"d"}"#,
        "\n",
        r#"{"seq":11,"timestamp":"2026-11-29T22:33:16.000Z","actor":"a\u001b[2Jb","operation":"search","door":"search","id":"","outcome":"allowed","code":null,"prevHash":"d","hash":"e"}"#,
        "\n",
    );

    fn render(wide: bool, pieces: &[&str], count: u64, default_tail: Option<u64>) -> String {
        let mut out = Vec::new();
        let mut table = AuditTable::new(&mut out, wide, clock);
        for piece in pieces {
            table.write_all(piece.as_bytes()).unwrap();
        }
        table.finish(count, default_tail).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rows_newest_last_with_counts_codes_tokens_and_operators() {
        let shown = render(false, &[LOG], 4, None);
        assert_eq!(
            shown,
            concat!(
                "seq  time (local)  actor        door          id              outcome                via    shown\n",
                "  7  22:33:13      worker       context       project:alp     allowed                tok_1  2\n",
                "  8  22:33:14      worker       get           private:main:x  PRIVATE_MEMORY_DENIED  -      -\n",
                " 10  22:33:15      (operator)   token-create  tok_2           allowed                -      -\n",
                " 11  22:33:16      a\\u{1b}[2Jb  search        -               allowed                -      -\n",
                "4 records shown\n",
            )
        );
    }

    #[test]
    fn wide_lists_the_entries_and_lines_may_arrive_in_pieces() {
        let (first, rest) = LOG.split_at(100);
        let shown = render(true, &[first, rest], 4, None);
        assert!(shown.contains("  tok_1  project:alp:goals@3 shared:team@1\n"), "{shown}");
        assert_eq!(shown, render(true, &[LOG], 4, None));
    }

    #[test]
    fn nothing_and_a_full_default_tail_say_so() {
        assert_eq!(render(false, &[], 0, Some(50)), "no record matches\n");
        let one = LOG.lines().next().unwrap().to_owned() + "\n";
        let shown = render(false, &[&one], 1, Some(1));
        assert!(shown.ends_with("1 record shown (the last 1 that match; --tail N or --limit N shows others, --json prints them as stored)\n"), "{shown}");
        assert!(render(false, &[&one], 1, Some(50)).ends_with("\n1 record shown\n"));
    }

    #[test]
    fn rows_past_the_measured_ones_keep_the_widths() {
        let line = LOG.lines().nth(1).unwrap();
        let mut log = String::new();
        for _ in 0..super::BUFFERED {
            log.push_str(line);
            log.push('\n');
        }
        log.push_str(&line.replace("private:main:x", "private:main:a-much-longer-id"));
        log.push('\n');
        let shown = render(false, &[&log], super::BUFFERED as u64 + 1, None);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), super::BUFFERED + 3);
        assert!(lines[super::BUFFERED + 1].contains("private:main:a-much-longer-id  PRIVATE_MEMORY_DENIED"));
        assert!(lines[1].contains("private:main:x  PRIVATE_MEMORY_DENIED"));
    }
}
