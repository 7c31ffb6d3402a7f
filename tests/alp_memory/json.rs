//! The JSON documents: the borrowing serialisers the CLI writes are byte for byte the values the MCP server
//! returns, with the keys in the order of `docs/CLI.md`.

use alp_memory::Page;
use alp_memory::json::{
    EntryJson, ListJson, SearchJson, entry_object, list_document, scored_object, search_document,
};
use alp_memory::memory_entry::{FieldName, FieldValue, Fields, MemoryEntry, NewEntry, Timestamp};
use alp_memory::memory_id::parse_memory_id;
use alp_memory::memory_store::Scored;

fn entry(id: &str, content: &str, all_fields: bool) -> MemoryEntry {
    let mut fields = Fields::default();
    if all_fields {
        for (name, text) in [
            (FieldName::Kind, "decision"),
            (FieldName::Type, "architecture"),
            (FieldName::Key, "db.engine"),
            (FieldName::Importance, "high"),
            (FieldName::Source, "meeting-2026-11"),
            (FieldName::Scope, "feature:search"),
            (FieldName::Ttl, "30d"),
        ] {
            fields.set(FieldValue::parse(name, text).unwrap());
        }
    }
    let at = Timestamp::parse("2026-11-29T12:00:00.123Z").unwrap();
    NewEntry::new(parse_memory_id(id).unwrap(), content).with_fields(fields).into_entry(at)
}

fn keys(value: &serde_json::Value) -> Vec<&str> {
    value.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn the_borrowing_serialisers_write_exactly_the_values() {
    let hostile = "quote \" backslash \\ newline \n tab \t bell \u{7} sở dữ liệu \u{1F600} </script>";
    let plain = entry("shared:a", hostile, false);
    let full = entry("project:alp:b", "x", true);
    for e in [&plain, &full] {
        assert_eq!(serde_json::to_string(&EntryJson::new(e)).unwrap(), entry_object(e).to_string());
    }
    assert_eq!(
        keys(&entry_object(&plain)),
        ["id", "kind", "version", "createdAt", "updatedAt", "content", "importance"]
    );
    assert_eq!(
        keys(&entry_object(&full)),
        [
            "id",
            "kind",
            "version",
            "createdAt",
            "updatedAt",
            "content",
            "importance",
            "type",
            "key",
            "source",
            "scope",
            "ttl",
            "expiresAt"
        ]
    );
    assert_eq!(entry_object(&full)["expiresAt"], "2026-12-29T12:00:00.123Z");
    assert_eq!(entry_object(&plain)["content"], hostile);

    let results = Page {
        entries: vec![Scored { entry: full.clone(), score: 2 }, Scored { entry: plain.clone(), score: 1 }],
        more: false,
    };
    let scored = scored_object(&results.entries[0]);
    assert_eq!(keys(&scored).last(), Some(&"score"));
    assert_eq!(scored["score"], 2);
    let search = search_document(&results);
    assert_eq!(serde_json::to_string(&SearchJson(&results)).unwrap(), search.to_string());
    assert_eq!(search["entries"].as_array().unwrap().len(), 2);
    assert_eq!(search["entries"][1], scored_object(&results.entries[1]));
    assert!(search.get("more").is_none(), "a page that holds every match says nothing more");

    let listed = Page { entries: vec![plain, full], more: true };
    let list = list_document(&listed);
    assert_eq!(serde_json::to_string(&ListJson(&listed)).unwrap(), list.to_string());
    assert_eq!(list["entries"][0], entry_object(&listed.entries[0]));
    assert!(list["entries"][1].get("score").is_none());
    assert_eq!(keys(&list), ["entries", "more"]);
    assert_eq!(list["more"], true);

    let empty: Page<Scored> = Page::default();
    assert_eq!(serde_json::to_string(&SearchJson(&empty)).unwrap(), r#"{"entries":[]}"#);
    assert_eq!(search_document(&empty).to_string(), r#"{"entries":[]}"#);
}
