//! The fields: parsed once from text, validated by construction, set and cleared by name.

use memory_entry::{
    FieldName, FieldValue, Fields, Filter, Importance, Key, Kind, Limits, NewEntry, Patch, ScopeRef, Source,
    Timestamp, Ttl,
};
use memory_id::parse_memory_id;

#[test]
fn every_field_parses_from_its_text_and_writes_it_back() {
    for (name, text) in [
        (FieldName::Kind, "decision"),
        (FieldName::Type, "architecture"),
        (FieldName::Key, "package-manager"),
        (FieldName::Importance, "critical"),
        (FieldName::Source, "agent: main #1"),
        (FieldName::Scope, "feat-dashboard"),
        (FieldName::Ttl, "90d"),
    ] {
        let value = FieldValue::parse(name, text).unwrap();
        assert_eq!((value.name(), value.text().as_str()), (name, text));
        assert_eq!(FieldName::parse(name.as_str()), Some(name));
    }
}

#[test]
fn malformed_values_never_become_fields() {
    for (name, text, why) in [
        (FieldName::Kind, "banana", "is not one of fact, decision, reference, log, draft"),
        (FieldName::Type, "Project", "is not one of"),
        (FieldName::Importance, "extreme", "is not one of critical, high, medium, low"),
        (FieldName::Key, "", "it is empty"),
        (FieldName::Key, "two\nlines", "holds a control character"),
        (FieldName::Source, &"s".repeat(201), "longer than 200 bytes"),
        (FieldName::Scope, "feat dashboard", "holds whitespace"),
        (FieldName::Ttl, "0s", "is not a duration"),
        (FieldName::Ttl, "9007199254740992s", "is not a duration"),
    ] {
        let error = FieldValue::parse(name, text).unwrap_err();
        assert_eq!(error.field(), name.as_str(), "{text:?}");
        assert!(error.to_string().contains(why), "{text:?}: {error}");
        assert!(!error.to_string().contains('\n'), "one line: {error}");
    }
    assert_eq!(Ttl::parse("9007199254740991s").unwrap().as_secs(), 9_007_199_254_740_991);
}

#[test]
fn set_clear_get_and_match_by_name() {
    let mut fields = Fields::default();
    assert_eq!(
        fields.values().map(|v| v.name()).collect::<Vec<_>>(),
        [FieldName::Kind, FieldName::Importance]
    );
    for name in FieldName::ALL {
        let text = match name {
            FieldName::Kind => "log",
            FieldName::Type => "task",
            FieldName::Importance => "low",
            FieldName::Ttl => "1w",
            _ => "x",
        };
        fields.set(FieldValue::parse(name, text).unwrap());
    }
    assert_eq!(fields.values().count(), 7);
    assert!(Filter::new(fields.values().collect()).matches(&fields));
    assert!(!Filter::new(vec![FieldValue::Key(Key::parse("y").unwrap())]).matches(&fields));
    for name in FieldName::ALL {
        fields.clear(name);
    }
    assert_eq!(fields, Fields::default());
    assert_eq!(fields.kind, Kind::Reference);
    assert_eq!(fields.importance, Importance::Medium);
    let _ = (Source::parse("s").unwrap(), ScopeRef::parse("task-1").unwrap());
}

#[test]
fn a_patch_names_each_field_once() {
    let key = || FieldValue::Key(Key::parse("k").unwrap());
    assert!(
        Patch::new(None, vec![key()], vec![FieldName::Key])
            .unwrap_err()
            .to_string()
            .contains("both set and cleared")
    );
    assert!(Patch::new(None, vec![key(), key()], vec![]).unwrap_err().to_string().contains("given twice"));
    assert!(Patch::new(None, vec![], vec![FieldName::Ttl, FieldName::Ttl]).is_err());
    let patch = Patch::new(Some("x".into()), vec![key()], vec![FieldName::Scope]).unwrap();
    assert!(patch.touches_unique_key());
}

#[test]
fn validation_reports_malformed_before_limits() {
    let now = Timestamp::parse("2026-11-30T00:00:00Z").unwrap();
    let id = parse_memory_id("shared:x").unwrap();
    let limits = Limits { max_value_chars: 3, ..Limits::default() };
    let mut entry = NewEntry::new(id, "abcd\0");
    let error = entry.validate(&limits, now).unwrap_err();
    assert!(error.to_string().contains("U+0000 at character 5"), "{error}");
    entry.content = "abcd".into();
    assert_eq!(entry.validate(&limits, now).unwrap_err().to_string(), "content is more than 3 characters");
    entry.content = "abc".into();
    entry.fields.ttl = Some(Ttl::parse("400d").unwrap());
    assert_eq!(entry.validate(&limits, now).unwrap_err().to_string(), "ttl 400d is over the limit of 365d");
    entry.fields.ttl = Some(Ttl::parse("800000w").unwrap());
    let error =
        entry.validate(&Limits { max_ttl: Ttl::parse("900000w").unwrap(), ..limits }, now).unwrap_err();
    assert!(error.to_string().contains("after the year 9999"), "{error}");
}
