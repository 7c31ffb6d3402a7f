//! `conformance/audit.json`: golden audit logs (format in `conformance/README.md`, "Audit logs") and what a verifier
//! must answer for each, and the logs a writer must write byte for byte. `memory-audit`'s tests run them.

use memory_audit::{AuditEvent, AuditKey, AuditRecord, ExpectedHead, VerifyOptions, VerifyReport};
use serde::Deserialize;

/// The sections of `audit.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditVectors {
    /// Logs to verify, each with the verifier's answer.
    pub logs: Vec<LogVector>,
    /// Logs a writer must write byte for byte from their records' fields.
    pub writes: Vec<WriteVector>,
}

/// A log and what verifying it answers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LogVector {
    /// What the vector shows.
    pub name: String,
    /// The files whose lines, one file after the other, are the log (paths under `conformance/`).
    pub files: Vec<String>,
    /// The HMAC key (its UTF-8 bytes), when the chain is keyed; none for SHA-256.
    #[serde(default)]
    pub key: Option<String>,
    /// A kept head the log must still hold (`alp audit verify --expect`).
    #[serde(default)]
    pub expect: Option<Head>,
    /// An anchor the log must continue from (`alp audit verify --from`).
    #[serde(default)]
    pub from: Option<Head>,
    /// Lines (1-based, numbered as in the files together) removed before verifying, after the edits.
    #[serde(default)]
    pub drop_lines: Vec<usize>,
    /// Edits made before verifying (lines numbered as in the files).
    #[serde(default)]
    pub edits: Vec<Edit>,
    /// The answer, as `alp audit verify --json` prints it.
    pub result: Verdict,
    /// Free text.
    #[serde(default)]
    pub note: Option<String>,
}

/// A `seq` and a hash: a kept head, an anchor, or where a log continues from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Head {
    /// The record's `seq` (0 before the first).
    pub seq: u64,
    /// Its hash.
    pub hash: String,
}

/// An edit of one line: the first occurrence of `replace` becomes `with`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// The 1-based line.
    pub line: usize,
    /// The text replaced (it must occur in the line).
    pub replace: String,
    /// What it becomes.
    pub with: String,
}

/// What a verifier answers: `{"ok":true,"records","lastHash","from":{"seq","hash"}}` or
/// `{"ok":false,"firstBadSeq","reason"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Verdict {
    /// Whether the chain verified.
    pub ok: bool,
    /// With `ok`: how many records.
    #[serde(default)]
    pub records: Option<u64>,
    /// With `ok`: the last record's hash.
    #[serde(default)]
    pub last_hash: Option<String>,
    /// With `ok`: the record the log continues from.
    #[serde(default)]
    pub from: Option<Head>,
    /// Without `ok`: where the chain first breaks.
    #[serde(default)]
    pub first_bad_seq: Option<u64>,
    /// Without `ok`: the reason's code.
    #[serde(default)]
    pub reason: Option<String>,
}

impl Verdict {
    /// The verdict a report gives.
    pub fn of(report: &VerifyReport) -> Verdict {
        match report {
            VerifyReport::Ok { records, last_hash, from: (seq, hash) } => Verdict {
                ok: true,
                records: Some(*records),
                last_hash: Some(last_hash.clone()),
                from: Some(Head { seq: *seq, hash: hash.clone() }),
                first_bad_seq: None,
                reason: None,
            },
            VerifyReport::Broken { first_bad_seq, reason } => Verdict {
                ok: false,
                records: None,
                last_hash: None,
                from: None,
                first_bad_seq: Some(*first_bad_seq),
                reason: Some(reason.code().to_owned()),
            },
        }
    }
}

/// A log a writer must write byte for byte: each record sealed, from its fields, after the record before it (the
/// first one as the first of a chain, `seq` 1).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteVector {
    /// The files whose lines, one file after the other, are the log (paths under `conformance/`).
    pub files: Vec<String>,
    /// The HMAC key (its UTF-8 bytes), when the chain is keyed.
    #[serde(default)]
    pub key: Option<String>,
    /// Free text.
    #[serde(default)]
    pub note: Option<String>,
}

/// The vectors of `conformance/audit.json`.
///
/// # Panics
///
/// When the file cannot be read or is not the format this module describes.
pub fn load() -> AuditVectors {
    super::load("audit.json")
}

/// The text of `conformance/<file>`.
///
/// # Panics
///
/// When it cannot be read.
pub fn read(file: &str) -> String {
    let path = crate::replay::repository().join("conformance").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn key_of(key: Option<&str>) -> Option<AuditKey> {
    key.map(|key| AuditKey::from_bytes(key.as_bytes()).expect("a key is not empty"))
}

fn head_of(head: &Head) -> ExpectedHead {
    ExpectedHead::new(head.seq, head.hash.clone())
}

impl LogVector {
    /// The log to verify: its files' lines, with `edits` made, without `dropLines`.
    ///
    /// # Panics
    ///
    /// When a file cannot be read, or an edit's text is not in its line.
    pub fn bytes(&self) -> Vec<u8> {
        let text: String = self.files.iter().map(|file| read(file)).collect();
        let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
        for edit in &self.edits {
            let line = &mut lines[edit.line - 1];
            assert!(
                line.contains(&edit.replace),
                "{}: line {} holds no {:?}",
                self.name,
                edit.line,
                edit.replace
            );
            *line = line.replacen(&edit.replace, &edit.with, 1);
        }
        let mut dropped = 0;
        lines.retain(|_| {
            dropped += 1;
            !self.drop_lines.contains(&dropped)
        });
        lines.concat().into_bytes()
    }

    /// The key to verify with.
    pub fn key(&self) -> Option<AuditKey> {
        key_of(self.key.as_deref())
    }

    /// The checks beyond the chain: the kept head and the anchor.
    pub fn options(&self) -> VerifyOptions {
        VerifyOptions::new()
            .expecting(self.expect.as_ref().map(head_of))
            .continuing_from(self.from.as_ref().map(head_of))
    }
}

impl WriteVector {
    /// The file's lines, and the same records written again from their fields: each sealed after the one written
    /// before it. Equal when the writer writes the format.
    ///
    /// # Panics
    ///
    /// When the file cannot be read, or a line is not a record.
    pub fn written_again(&self) -> (Vec<String>, Vec<String>) {
        let text: String = self.files.iter().map(|file| read(file)).collect();
        let name = self.files.join(" + ");
        let stored: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
        let key = key_of(self.key.as_deref());
        let mut previous: Option<AuditRecord> = None;
        let mut written = Vec::new();
        for line in &stored {
            let record = AuditRecord::from_line(line.trim_end_matches('\n').as_bytes())
                .unwrap_or_else(|e| panic!("{name}: not a record: {e}: {line}"));
            let event = AuditEvent {
                timestamp: record.timestamp(),
                actor: record.actor().to_owned(),
                operation: record.operation(),
                door: record.door(),
                id: record.id().to_owned(),
                outcome: record.outcome(),
                code: record.code().map(str::to_owned),
                grant: record.grant().map(<[String]>::to_vec),
                shown: record.shown().to_vec(),
                via: record.via().map(str::to_owned),
            };
            let sealed = AuditRecord::next_after(previous.as_ref(), &event, key.as_ref())
                .unwrap_or_else(|e| panic!("{name}: seq {}: {e}", record.seq()));
            written.push(sealed.to_line());
            previous = Some(sealed);
        }
        (stored, written)
    }
}
