//! The crate as an adopter uses it: only public items, the way the docs show them.

use std::collections::HashSet;

use memory_id::{
    InvalidMemoryIdError, MAX_ID_BYTES, MAX_SEGMENT_BYTES, MAX_SEGMENTS, MemoryId, MemoryPrefix, Scope,
    parse_memory_id,
};

#[test]
fn parse_and_read_back() {
    let id = parse_memory_id("project:alp:log:2026-09").unwrap();
    assert_eq!(id.scope(), Scope::Project);
    assert_eq!(id.owner(), Some("alp"));
    assert_eq!(id.segments().collect::<Vec<_>>(), ["project", "alp", "log", "2026-09"]);
    assert_eq!(id.segments().next_back(), Some("2026-09"));
    assert_eq!(id.segment_count(), 4);
    assert_eq!(id.path_segments().collect::<Vec<_>>(), ["log", "2026-09"]);
    assert_eq!(id.scope_root().as_str(), "project:alp");
    assert_eq!(id.to_prefix().as_str(), id.as_str());
    assert_eq!(MemoryPrefix::from(&id), id.to_prefix());
    assert_eq!(AsRef::<str>::as_ref(&id), "project:alp:log:2026-09");
    assert_eq!(format!("{id:?}"), "MemoryId(\"project:alp:log:2026-09\")");
    assert_eq!(id.clone().into_string(), "project:alp:log:2026-09");
}

#[test]
fn from_str_and_display_round_trip() {
    for text in ["shared:a", "project:alp:goals", "private:worker:drafts:x"] {
        let id: MemoryId = text.parse().unwrap();
        assert_eq!(id.to_string(), text);
        let prefix: MemoryPrefix = text.parse().unwrap();
        assert_eq!(prefix.to_string(), text);
    }
    let err = "../../.ssh/id_rsa".parse::<MemoryId>().unwrap_err();
    assert_eq!(err.reason().code(), "unknown_scope");
    assert_eq!(err.input(), "../../.ssh/id_rsa");
}

#[test]
fn scopes() {
    for scope in Scope::ALL {
        assert_eq!(Scope::from_keyword(scope.keyword()), Some(scope));
        assert_eq!(scope.to_string(), scope.keyword());
        assert_eq!(MemoryPrefix::of_scope(scope).as_str(), scope.keyword());
        assert_eq!(MemoryPrefix::of_scope(scope).to_id(), None);
    }
    assert_eq!(Scope::from_keyword("Shared"), None);
    assert_eq!(Scope::Shared.min_id_parts(), 2);
    assert_eq!(Scope::Private.min_id_parts(), 3);
    assert!(!Scope::Shared.has_owner() && Scope::Project.has_owner());
}

#[test]
fn limits_are_published() {
    assert_eq!((MAX_ID_BYTES, MAX_SEGMENTS, MAX_SEGMENT_BYTES), (1024, 64, 200));
}

#[test]
fn ids_work_as_keys() {
    let ids: HashSet<MemoryId> =
        ["shared:a", "shared:a", "shared:b"].into_iter().map(|s| parse_memory_id(s).unwrap()).collect();
    assert_eq!(ids.len(), 2);
    let mut sorted: Vec<MemoryId> =
        ["shared:b", "project:x:y", "shared:a"].iter().map(|s| s.parse().unwrap()).collect();
    sorted.sort();
    assert_eq!(
        sorted.iter().map(MemoryId::as_str).collect::<Vec<_>>(),
        ["project:x:y", "shared:a", "shared:b"]
    );
}

#[test]
fn the_error_is_an_ordinary_error() {
    fn assert_error<E: std::error::Error + Send + Sync + 'static>(_: &E) {}
    let err: InvalidMemoryIdError = parse_memory_id("shared:..").unwrap_err();
    assert_error(&err);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err.clone());
    assert_eq!(boxed.to_string(), err.to_string());
}

#[cfg(feature = "serde")]
mod serde_feature {
    use memory_id::{MemoryId, MemoryPrefix, Scope};

    #[derive(Debug, serde::Deserialize, serde::Serialize)]
    struct Entry {
        id: MemoryId,
        scope: Scope,
    }

    #[test]
    fn ids_serialize_as_strings() {
        let id: MemoryId = "shared:team".parse().unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"shared:team\"");
        let back: MemoryId = serde_json::from_str("\"shared:team\"").unwrap();
        assert_eq!(back, id);
        let entry: Entry = serde_json::from_str(r#"{"id":"private:worker:x","scope":"private"}"#).unwrap();
        assert_eq!(entry.id.owner(), Some("worker"));
        assert_eq!(serde_json::to_string(&entry).unwrap(), r#"{"id":"private:worker:x","scope":"private"}"#);
        let prefix: MemoryPrefix = serde_json::from_str("\"project:alp\"").unwrap();
        assert_eq!(serde_json::to_string(&prefix).unwrap(), "\"project:alp\"");
    }

    #[test]
    fn deserializing_validates() {
        let err = serde_json::from_str::<MemoryId>("\"shared:..\"").unwrap_err().to_string();
        assert!(err.contains("invalid memory id `shared:..`: segment 2 is `..`, a dot segment"), "{err}");
        let err = serde_json::from_str::<MemoryId>("\"../../.ssh/id_rsa\"").unwrap_err().to_string();
        assert!(err.contains("`../../.ssh/id_rsa` is not a scope"), "{err}");
        let err = serde_json::from_str::<MemoryId>("\"project:alp\"").unwrap_err().to_string();
        assert!(err.contains("needs at least 3"), "{err}");
        let err = serde_json::from_str::<MemoryId>("\"shared:a\\u0000\"").unwrap_err().to_string();
        assert!(err.contains("holding a control character"), "{err}");
        assert!(serde_json::from_str::<MemoryPrefix>("\"project\"").is_ok());
        let err = serde_json::from_str::<MemoryPrefix>("\"project:\"").unwrap_err().to_string();
        assert!(err.contains("segment 2 is ``, empty"), "{err}");
        let err = serde_json::from_str::<Scope>("\"Shared\"").unwrap_err().to_string();
        assert!(err.contains("unknown memory scope `Shared`"), "{err}");
        assert!(serde_json::from_str::<MemoryId>("42").is_err());
    }
}
