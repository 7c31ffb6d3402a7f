//! `door`, `grant` and `shown`: what the caller called, the grants an operator changed, and the entries a call
//! returned. They stand in the order `…operation, door, id, outcome, code, grant, shown, via, prevHash, hash`, are
//! covered by the hash, and are absent (never `null`, never `[]`) when there is nothing to say, so a record without
//! them is byte for byte what it was.

use memory_audit::{
    AuditError, AuditEvent, AuditOperation, AuditRecord, AuditSink, BreakReason, Door, GENESIS_HASH,
    MAX_LINE_BYTES, MemoryAuditSink, Outcome, VerifyReport, parse_shown_entry, shown_entry, verify_bytes,
};
use sha2::{Digest, Sha256};
use time::macros::datetime;

use crate::event;

fn read(door: Door, shown: &[&str]) -> AuditEvent {
    let mut event = event(
        datetime!(2026-11-29 22:33:13.123 UTC),
        "worker",
        AuditOperation::Search,
        "project:alp",
        Outcome::Allowed,
        None,
    );
    event.door = Some(door);
    event.shown = shown.iter().map(|s| (*s).to_owned()).collect();
    event
}

fn agent(door: Door, operation: AuditOperation, grant: &[&str]) -> AuditEvent {
    let mut event =
        event(datetime!(2026-11-29 22:33:14 UTC), "", operation, "worker", Outcome::Allowed, None);
    event.door = Some(door);
    event.grant = Some(grant.iter().map(|s| (*s).to_owned()).collect());
    event
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

#[test]
fn every_field_stands_in_its_place_and_is_hashed() {
    let mut event =
        agent(Door::AgentGrant, AuditOperation::AgentGrant, &["read:shared:team", "write:private"]);
    event.via = Some("0123456789ab".to_owned());
    let record = AuditRecord::next_after(None, &event, None).unwrap();
    let unsigned = format!(
        "{{\"seq\":1,\"timestamp\":\"2026-11-29T22:33:14.000Z\",\"actor\":\"\",\"operation\":\"agent-grant\",\
         \"door\":\"agent-grant\",\"id\":\"worker\",\"outcome\":\"allowed\",\"code\":null,\
         \"grant\":[\"read:shared:team\",\"write:private\"],\"via\":\"0123456789ab\",\"prevHash\":\"{GENESIS_HASH}\"}}"
    );
    let hash = sha256_hex(format!("{GENESIS_HASH}\n{unsigned}").as_bytes());
    assert_eq!(record.hash(), hash);
    assert_eq!(record.to_line(), format!("{},\"hash\":\"{hash}\"}}\n", &unsigned[..unsigned.len() - 1]));

    let mut event = read(Door::Context, &["project:alp:b@3", "project:alp:a@12"]);
    event.via = Some("0123456789ab".to_owned());
    let record = AuditRecord::next_after(None, &event, None).unwrap();
    let unsigned = format!(
        "{{\"seq\":1,\"timestamp\":\"2026-11-29T22:33:13.123Z\",\"actor\":\"worker\",\"operation\":\"search\",\
         \"door\":\"context\",\"id\":\"project:alp\",\"outcome\":\"allowed\",\"code\":null,\
         \"shown\":[\"project:alp:b@3\",\"project:alp:a@12\"],\"via\":\"0123456789ab\",\"prevHash\":\"{GENESIS_HASH}\"}}"
    );
    assert_eq!(record.hash(), sha256_hex(format!("{GENESIS_HASH}\n{unsigned}").as_bytes()));
    assert_eq!((record.door(), record.grant()), (Some(Door::Context), None));
    assert_eq!(record.shown(), ["project:alp:b@3", "project:alp:a@12"]);
    assert_eq!(AuditRecord::from_line(record.to_line().trim_end().as_bytes()), Ok(record.clone()));
    assert_eq!(serde_json::to_string(&record).unwrap() + "\n", record.to_line());
}

#[test]
fn a_record_without_them_is_byte_for_byte_what_it_was() {
    let mut event = read(Door::Get, &[]);
    event.door = None;
    let record = AuditRecord::next_after(None, &event, None).unwrap();
    let line = record.to_line();
    for key in ["door", "grant", "shown"] {
        assert!(!line.contains(&format!("\"{key}\"")), "{line}");
    }
    assert_eq!(record.door_or_operation(), Door::Search);
    // A door with no receipt adds the door alone.
    let with_door = AuditRecord::next_after(None, &read(Door::List, &[]), None).unwrap().to_line();
    assert!(with_door.contains(r#""operation":"search","door":"list","id":"project:alp","#), "{with_door}");
    assert!(!with_door.contains("shown"), "{with_door}");
}

#[test]
fn the_canonical_form_accepts_both_shapes_and_nothing_else() {
    let sink = MemoryAuditSink::new();
    sink.record(&event(
        datetime!(2026-01-01 0:00 UTC),
        "w",
        AuditOperation::Get,
        "shared:a",
        Outcome::Allowed,
        None,
    ))
    .unwrap();
    sink.record(&read(Door::View, &["shared:a@1"])).unwrap();
    sink.record(&agent(Door::AgentAdd, AuditOperation::AgentAdd, &["read:shared"])).unwrap();
    let log = sink.to_jsonl();
    assert!(verify_bytes(log.as_bytes(), None).is_ok());
    let second = log.lines().nth(1).unwrap();
    let third = log.lines().nth(2).unwrap();
    let broken = |edited: String, line: usize| {
        let mut lines: Vec<String> = log.lines().map(|l| format!("{l}\n")).collect();
        lines[line] = edited + "\n";
        match verify_bytes(lines.concat().as_bytes(), None) {
            VerifyReport::Broken { first_bad_seq, reason } => (first_bad_seq, reason.code()),
            ok => panic!("accepted: {ok:?}"),
        }
    };
    // Keys out of order.
    let door_after_id =
        second.replacen(r#","door":"view","id":"project:alp""#, r#","id":"project:alp","door":"view""#, 1);
    assert_eq!(broken(door_after_id, 1), (2, "non_canonical"));
    let shown_before_code = second.replacen(
        r#","code":null,"shown":["shared:a@1"]"#,
        r#","shown":["shared:a@1"],"code":null"#,
        1,
    );
    assert_eq!(broken(shown_before_code, 1), (2, "non_canonical"));
    // Absent, never null or empty.
    let null_door = third.replacen(r#","door":"agent-add""#, r#","door":null"#, 1);
    assert_eq!(broken(null_door.replacen(r#","grant":["read:shared"]"#, "", 1), 2).1, "non_canonical");
    let empty_shown = second.replacen(r#","shown":["shared:a@1"]"#, r#","shown":[]"#, 1);
    assert_eq!(broken(empty_shown, 1), (2, "non_canonical"));
    // An unknown door, and a shown entry that is not `<id>@<version>`, are not records.
    assert_eq!(broken(second.replacen(r#""door":"view""#, r#""door":"mcp:memory""#, 1), 1), (2, "malformed"));
    assert_eq!(broken(second.replacen("shared:a@1", "shared:a@01", 1), 1), (2, "malformed"));
    // Edits of the receipts are edits of the record.
    assert_eq!(broken(second.replacen("shared:a@1", "shared:a@2", 1), 1), (2, "altered"));
    assert_eq!(broken(third.replacen("read:shared", "write:shared", 1), 2), (3, "altered"));
}

#[test]
fn receipts_go_only_where_they_belong() {
    let refused = |event: AuditEvent| match MemoryAuditSink::new().record(&event) {
        Err(AuditError::InvalidEvent { detail }) => detail,
        other => panic!("accepted: {other:?}"),
    };
    // `grant` exactly on the agent-* doors.
    let mut granted_read = read(Door::Get, &[]);
    granted_read.grant = Some(vec!["read:shared".into()]);
    assert!(refused(granted_read).contains("`grant`"));
    let mut no_grant = agent(Door::AgentRemove, AuditOperation::AgentRemove, &[]);
    no_grant.grant = None;
    assert!(refused(no_grant).contains("must carry `grant`"));
    // An agent-remove of a role with no grants carries an empty list.
    let removed =
        MemoryAuditSink::new().record(&agent(Door::AgentRemove, AuditOperation::AgentRemove, &[])).unwrap();
    assert!(removed.to_line().contains(r#","grant":[],"#));
    // `shown` only on allowed records that name their door, each entry `<id>@<version>`.
    let mut denied = read(Door::Get, &["shared:a@1"]);
    denied.outcome = Outcome::Denied;
    denied.code = Some("MEMORY_NOT_GRANTED".into());
    assert!(refused(denied).contains("shows nothing"));
    let mut doorless = read(Door::Get, &["shared:a@1"]);
    doorless.door = None;
    assert!(refused(doorless).contains("name its door"));
    for bad in ["shared:a", "shared:a@", "shared:a@0", "@3", "shared:a@x"] {
        assert!(refused(read(Door::Get, &[bad])).contains("is not `<id>@<version>`"), "{bad}");
    }
}

#[test]
fn doors_and_shown_entries_have_one_spelling() {
    for door in Door::ALL {
        assert_eq!(Door::parse(door.as_str()), Some(door));
        assert_eq!(serde_json::to_string(&door).unwrap(), format!("\"{door}\""));
    }
    let names: Vec<&str> = Door::ALL.iter().map(|d| d.as_str()).collect();
    assert_eq!(
        names,
        [
            "search",
            "get",
            "create",
            "update",
            "delete",
            "context",
            "list",
            "history",
            "restore",
            "export",
            "import",
            "prune",
            "view",
            "redact",
            "token-create",
            "token-revoke",
            "archive",
            "agent-add",
            "agent-grant",
            "agent-revoke",
            "agent-remove"
        ]
    );
    for operation in AuditOperation::ALL {
        assert_eq!(AuditOperation::parse(operation.as_str()), Some(operation));
        assert_eq!(Door::from(operation).as_str(), operation.as_str(), "an operation is also a door");
    }
    assert_eq!(Door::parse("Get"), None);
    assert_eq!(shown_entry("private:main:a@b", 7), "private:main:a@b@7");
    assert_eq!(parse_shown_entry("private:main:a@b@7"), Some(("private:main:a@b", 7)));
}

/// A record exactly as long as a line may be is written and read; one byte longer is refused before anything is
/// written.
#[test]
fn a_record_longer_than_a_line_may_be_is_refused() {
    let base = AuditRecord::next_after(None, &read(Door::Get, &[]), None).unwrap().to_line().len() - 1;
    let mut event = read(Door::Get, &[]);
    event.id.push_str(&"x".repeat(MAX_LINE_BYTES - base));
    let sink = MemoryAuditSink::new();
    let longest = sink.record(&event).unwrap();
    assert_eq!(longest.to_line().len(), MAX_LINE_BYTES + 1);
    assert!(matches!(verify_bytes(sink.to_jsonl().as_bytes(), None), VerifyReport::Ok { records: 1, .. }));
    event.id.push('x');
    assert!(
        matches!(sink.record(&event), Err(AuditError::InvalidEvent { detail }) if detail.contains("4194304"))
    );
    assert_eq!(sink.records().len(), 1, "nothing written");
    // A longer line in a log is reported where it stands, and nothing after it is read.
    let mut log = sink.to_jsonl().into_bytes();
    let mut long = log.clone();
    long.pop();
    long.extend_from_slice(b" \n");
    log.extend_from_slice(&long);
    let report = verify_bytes(&log, None);
    assert_eq!(report, VerifyReport::Broken { first_bad_seq: 2, reason: BreakReason::LineTooLong });
}
