//! The gate: policy before any store call, one audit record per call, fail closed, the precedence of errors.

use alp_memory::memory_audit::Outcome;
use alp_memory::memory_entry::{FieldName, Limits, Ttl};
use alp_memory::{CreateRequest, FieldInput, MemoryError, SearchRequest, UpdateRequest};

use crate::support::Harness;

fn create(id: &str, content: &str) -> CreateRequest {
    CreateRequest { id: id.into(), content: content.into(), fields: FieldInput::new() }
}

fn update(id: &str, expected_version: u64) -> UpdateRequest {
    UpdateRequest { id: id.into(), expected_version, content: None, fields: FieldInput::new(), clear: vec![] }
}

fn search(prefix: Option<&str>, query: &str) -> SearchRequest {
    SearchRequest { query: query.into(), prefix: prefix.map(Into::into), ..SearchRequest::default() }
}

mod gate {
    use super::*;

    #[test]
    fn an_allowed_read_records_its_receipt_after_the_store_and_before_the_answer() {
        let h = Harness::new();
        h.service.create("main", create("shared:facts:db", "PostgreSQL")).unwrap();
        h.take();
        let entry = h.service.get("worker", "shared:facts:db").unwrap();
        assert_eq!(entry.content, "PostgreSQL");
        assert_eq!(h.take(), ["store:get", "audit:allowed"]);
        let record = h.records().pop().unwrap();
        assert_eq!(record.shown(), ["shared:facts:db@1"]);
        assert_eq!(record.door(), Some(alp_memory::memory_audit::Door::Get));
    }

    #[test]
    fn a_write_still_audits_before_touching_the_store_and_carries_no_receipt() {
        let h = Harness::new();
        h.service.create("main", create("shared:facts:db", "PostgreSQL")).unwrap();
        assert_eq!(h.take(), ["audit:allowed", "store:create"]);
        let record = h.records().pop().unwrap();
        assert!(record.shown().is_empty());
        assert_eq!(record.door(), Some(alp_memory::memory_audit::Door::Create));
    }

    #[test]
    fn denied_requests_never_reach_the_store_and_are_audited_first() {
        let h = Harness::new();
        type Case = (&'static str, Box<dyn Fn(&Harness) -> MemoryError>, &'static str);
        let cases: Vec<Case> = vec![
            (
                "get private",
                Box::new(|h| h.service.get("main", "private:worker:x").err().unwrap()),
                "PRIVATE_MEMORY_DENIED",
            ),
            (
                "get other project",
                Box::new(|h| h.service.get("worker", "project:other:x").err().unwrap()),
                "MEMORY_NOT_GRANTED",
            ),
            (
                "create ungranted",
                Box::new(|h| h.service.create("worker", create("project:alp:goals", "x")).err().unwrap()),
                "MEMORY_NOT_GRANTED",
            ),
            (
                "create base of wildcard",
                Box::new(|h| h.service.create("worker", create("shared:team", "x")).err().unwrap()),
                "MEMORY_NOT_GRANTED",
            ),
            (
                "update private",
                Box::new(|h| h.service.update("main", update("private:worker:x", 1)).err().unwrap()),
                "PRIVATE_MEMORY_DENIED",
            ),
            (
                "delete read-only",
                Box::new(|h| h.service.delete("reviewer", "project:alp:goals", 1).err().unwrap()),
                "MEMORY_NOT_GRANTED",
            ),
            (
                "search private prefix",
                Box::new(|h| {
                    h.service
                        .search("main", &search(Some("private:worker"), ""))
                        .map(|page| page.entries)
                        .err()
                        .unwrap()
                }),
                "PRIVATE_MEMORY_DENIED",
            ),
            (
                "search ungranted prefix",
                Box::new(|h| {
                    h.service
                        .search("reviewer", &search(Some("shared"), ""))
                        .map(|page| page.entries)
                        .err()
                        .unwrap()
                }),
                "MEMORY_NOT_GRANTED",
            ),
            (
                "prune without write grant",
                Box::new(|h| h.service.prune("reviewer", None).err().unwrap()),
                "MEMORY_NOT_GRANTED",
            ),
        ];
        for (name, call, code) in cases {
            h.take();
            let before = h.records().len();
            let error = call(&h);
            assert_eq!(error.kind(), "UnauthorizedMemoryAccessError", "{name}");
            assert_eq!(error.code(), code, "{name}");
            assert_eq!(
                h.take(),
                ["audit:denied"],
                "{name}: the denial is audited and the store never called"
            );
            let records = h.records();
            assert_eq!(records.len(), before + 1, "{name}: exactly one record");
            let last = records.last().unwrap();
            assert_eq!(last.outcome(), Outcome::Denied, "{name}");
            assert_eq!(last.code(), Some(code), "{name}");
        }
    }

    #[test]
    fn invalid_ids_are_audited_as_errors_with_the_id_as_given() {
        let h = Harness::new();
        for bad in ["../../.ssh/id_rsa", "shared:..", "Shared:x", "shared", "shared:a\nb", ""] {
            h.take();
            let error = h.service.get("worker", bad).unwrap_err();
            assert_eq!((error.kind(), error.code()), ("InvalidMemoryIdError", "INVALID_MEMORY_ID"));
            assert_eq!(h.take(), ["audit:error"], "{bad:?}");
            let last = h.records().pop().unwrap();
            assert_eq!(
                (last.id(), last.outcome(), last.code()),
                (bad, Outcome::Error, Some("INVALID_MEMORY_ID"))
            );
        }
    }

    #[test]
    fn unknown_role_is_an_agent_definition_error_audited_with_the_role_as_given() {
        let h = Harness::new();
        let error = h.service.get("ghost", "shared:x").unwrap_err();
        assert_eq!((error.kind(), error.code()), ("AgentDefinitionError", "INVALID_AGENT_DEFINITION"));
        assert_eq!(h.take(), ["audit:error"]);
        let last = h.records().pop().unwrap();
        assert_eq!((last.actor(), last.code()), ("ghost", Some("INVALID_AGENT_DEFINITION")));
    }

    #[test]
    fn every_call_writes_exactly_one_record() {
        let h = Harness::new();
        let service = &h.service;
        let _ = service.create("main", create("shared:a", "one"));
        let _ = service.create("main", create("shared:a", "again")); // already exists: still one record
        let _ = service.get("main", "shared:missing"); // not found: one record
        let _ = service.update("main", update("shared:a", 7)); // conflict: one record
        let _ = service.update("main", update("shared:a", 1));
        let _ = service.delete("main", "shared:a", 2);
        let _ = service.search("main", &search(None, "one"));
        let outcomes: Vec<(String, Outcome)> =
            h.records().iter().map(|r| (r.operation().as_str().to_owned(), r.outcome())).collect();
        let expected = ["create", "create", "get", "update", "update", "delete", "search"]
            .map(|op| (op.to_owned(), Outcome::Allowed));
        assert_eq!(outcomes, expected);
        let seqs: Vec<u64> = h.records().iter().map(|r| r.seq()).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5, 6, 7]);
    }
}

mod fail_closed {
    use super::*;

    #[test]
    fn a_failing_sink_stops_every_write_before_the_store_and_every_read_before_its_answer() {
        let h = Harness::with(Limits::default(), Some(0));
        let writes = [
            h.service.create("main", create("shared:x", "x")).map(|_| ()),
            h.service.update("main", update("shared:x", 1)).map(|_| ()),
            h.service.delete("main", "shared:x", 1),
        ];
        for result in writes {
            let error = result.unwrap_err();
            assert_eq!((error.kind(), error.code()), ("AuditUnavailableError", "AUDIT_UNAVAILABLE"));
        }
        let journal = h.take();
        assert!(journal.iter().all(|line| !line.starts_with("store:")), "store touched: {journal:?}");
        // A read reads, then cannot record its receipt: it answers nothing but AUDIT_UNAVAILABLE.
        let reads = [
            h.service.get("main", "shared:x").map(|_| ()),
            h.service.search("main", &search(None, "")).map(|_| ()),
        ];
        for result in reads {
            let error = result.unwrap_err();
            assert_eq!((error.kind(), error.code()), ("AuditUnavailableError", "AUDIT_UNAVAILABLE"));
        }
        assert_eq!(
            h.take(),
            ["store:get", "audit:FAILED", "store:list[private:main,project:alp,shared]", "audit:FAILED"]
        );
        use alp_memory::memory_store::MemoryStore as _;
        assert!(
            h.service
                .store()
                .inner
                .get(&"shared:x".parse().unwrap(), crate::support::at(crate::support::T0))
                .is_err()
        );
    }

    #[test]
    fn audit_unavailable_overrides_denials_and_invalid_input() {
        let h = Harness::with(Limits::default(), Some(0));
        for error in [
            h.service.get("main", "shared:..").unwrap_err(),
            h.service.get("ghost", "shared:x").unwrap_err(),
            h.service.get("main", "private:worker:x").unwrap_err(),
            h.service
                .create(
                    "main",
                    CreateRequest {
                        fields: FieldInput::new().with(FieldName::Kind, "banana"),
                        ..create("shared:x", "x")
                    },
                )
                .unwrap_err(),
        ] {
            assert_eq!(error.code(), "AUDIT_UNAVAILABLE");
        }
    }

    #[test]
    fn a_sink_failing_mid_prune_stops_the_prune() {
        let h = Harness::with(Limits::default(), Some(3));
        let ttl = FieldInput::new().with(FieldName::Ttl, "1h");
        for id in ["shared:a", "shared:b"] {
            h.service
                .create("main", CreateRequest { id: id.into(), content: "x".into(), fields: ttl.clone() })
                .unwrap();
        }
        h.set_time("2026-11-29T14:00:00Z");
        h.take();
        let error = h.service.prune("main", None).unwrap_err();
        assert_eq!(error.code(), "AUDIT_UNAVAILABLE");
        // Record 3 deletes shared:a; record 4 fails, so shared:b is never deleted.
        assert_eq!(
            h.take(),
            [
                "store:list[private:main,project:alp,shared]",
                "audit:allowed",
                "store:delete_expired",
                "audit:FAILED"
            ]
        );
    }

    /// Prune and import read the store before their first record: with a sink that cannot append, they fail
    /// closed before the store is listed at all.
    #[test]
    fn prune_and_import_check_the_sink_before_they_list() {
        let h = Harness::with(Limits::default(), Some(1));
        let ttl = FieldInput::new().with(FieldName::Ttl, "1h");
        h.service
            .create("main", CreateRequest { id: "shared:a".into(), content: "x".into(), fields: ttl })
            .unwrap();
        h.set_time("2026-11-29T14:00:00Z");
        h.take();
        assert_eq!(h.service.prune("main", None).unwrap_err().code(), "AUDIT_UNAVAILABLE");
        assert_eq!(h.take(), ["audit:NOT_READY"]);
        let file = "!alp-version: 80.0.0\n@memory\n  id: m\n  type: project\n  key: k\n  value: v\n";
        assert_eq!(
            h.service
                .import_alp("main", "alp", file, alp_memory::memory_store::OnExisting::Fail)
                .unwrap_err()
                .code(),
            "AUDIT_UNAVAILABLE"
        );
        assert_eq!(h.take(), ["audit:NOT_READY"]);
    }
}

mod precedence {
    use super::*;

    #[test]
    fn id_before_agent_definition_before_policy_before_fields() {
        let h = Harness::new();
        let bad_kind = FieldInput::new().with(FieldName::Kind, "banana");
        let with = |id: &str| CreateRequest { id: id.into(), content: "x".into(), fields: bad_kind.clone() };
        assert_eq!(h.service.create("ghost", with("shared:..")).unwrap_err().code(), "INVALID_MEMORY_ID");
        assert_eq!(
            h.service.create("ghost", with("private:main:x")).unwrap_err().code(),
            "INVALID_AGENT_DEFINITION"
        );
        assert_eq!(
            h.service.create("worker", with("private:main:x")).unwrap_err().code(),
            "PRIVATE_MEMORY_DENIED"
        );
        assert_eq!(h.service.create("main", with("shared:x")).unwrap_err().code(), "INVALID_ENTRY");
        assert_eq!(h.take(), ["audit:error", "audit:error", "audit:denied", "audit:error"]);
    }

    #[test]
    fn not_found_before_conflict_and_conflict_before_duplicate_key() {
        let h = Harness::new();
        let keyed = |id: &str, key: &str| CreateRequest {
            id: id.into(),
            content: "x".into(),
            fields: FieldInput::new().with(FieldName::Type, "decision").with(FieldName::Key, key),
        };
        h.service.create("main", keyed("shared:a", "db")).unwrap();
        h.service.create("main", keyed("shared:b", "cache")).unwrap();
        let steal = |expected| UpdateRequest {
            fields: FieldInput::new().with(FieldName::Key, "db"),
            ..update("shared:b", expected)
        };
        assert_eq!(
            h.service
                .update("main", UpdateRequest { id: "shared:zz".into(), ..steal(9) })
                .unwrap_err()
                .code(),
            "NOT_FOUND"
        );
        assert_eq!(h.service.update("main", steal(9)).unwrap_err().code(), "VERSION_CONFLICT");
        let error = h.service.update("main", steal(1)).unwrap_err();
        assert_eq!(error.code(), "ALREADY_EXISTS");
        assert_eq!(alp_memory::json::error_object(&error)["existing"], "shared:a");
    }
}

mod entries {
    use super::*;

    #[test]
    fn create_defaults_and_round_trips_content_byte_for_byte() {
        let h = Harness::new();
        let content = "line one\r\n---\nnot frontmatter\n\n  trailing  \n";
        let entry = h.service.create("main", create("shared:notes:raw", content)).unwrap();
        assert_eq!(
            (entry.fields.kind.as_str(), entry.fields.importance.as_str(), entry.version),
            ("reference", "medium", 1)
        );
        assert_eq!(h.service.get("main", "shared:notes:raw").unwrap().content, content);
    }

    #[test]
    fn update_changes_only_given_fields_clears_others_and_always_bumps() {
        let h = Harness::new();
        let fields = FieldInput::new()
            .with(FieldName::Kind, "decision")
            .with(FieldName::Type, "architecture")
            .with(FieldName::Key, "api-pattern")
            .with(FieldName::Importance, "critical")
            .with(FieldName::Source, "agent-architect")
            .with(FieldName::Scope, "feat-api")
            .with(FieldName::Ttl, "90d");
        h.service
            .create("main", CreateRequest { id: "project:alp:api".into(), content: "v1".into(), fields })
            .unwrap();
        let same = h.service.update("main", update("project:alp:api", 1)).unwrap().into_entry().unwrap();
        assert_eq!(
            (same.version, same.content.as_str(), same.fields.key.as_ref().map(|k| k.as_str())),
            (2, "v1", Some("api-pattern"))
        );
        let cleared = h
            .service
            .update(
                "main",
                UpdateRequest {
                    content: Some("v3".into()),
                    clear: vec![FieldName::Kind, FieldName::Importance, FieldName::Ttl, FieldName::Scope],
                    ..update("project:alp:api", 2)
                },
            )
            .unwrap()
            .into_entry()
            .unwrap();
        assert_eq!(cleared.version, 3);
        assert_eq!(
            (cleared.fields.kind.as_str(), cleared.fields.importance.as_str()),
            ("reference", "medium")
        );
        assert_eq!((cleared.fields.ttl, cleared.fields.scope.as_ref().map(|k| k.as_str())), (None, None));
        assert_eq!(
            (
                cleared.fields.memory_type.map(|t| t.as_str()),
                cleared.fields.source.as_ref().map(|k| k.as_str())
            ),
            (Some("architecture"), Some("agent-architect"))
        );
    }

    #[test]
    fn setting_and_clearing_one_field_is_an_invalid_entry() {
        let h = Harness::new();
        h.service.create("main", create("shared:a", "x")).unwrap();
        let error = h
            .service
            .update(
                "main",
                UpdateRequest {
                    fields: FieldInput::new().with(FieldName::Key, "k"),
                    clear: vec![FieldName::Key],
                    ..update("shared:a", 1)
                },
            )
            .unwrap_err();
        assert_eq!(error.kind(), "InvalidMemoryEntryError");
    }

    #[test]
    fn malformed_fields_are_invalid_entries_and_change_nothing() {
        let h = Harness::new();
        let cases = [
            FieldInput::new().with(FieldName::Kind, "banana"),
            FieldInput::new().with(FieldName::Type, "Project"),
            FieldInput::new().with(FieldName::Importance, "urgent"),
            FieldInput::new().with(FieldName::Ttl, "0s"),
            FieldInput::new().with(FieldName::Ttl, "soon"),
            FieldInput::new().with(FieldName::Key, "two\nlines"),
            FieldInput::new().with(FieldName::Scope, "feat dashboard"),
        ];
        for fields in cases {
            let error = h
                .service
                .create(
                    "main",
                    CreateRequest { id: "shared:x".into(), content: "x".into(), fields: fields.clone() },
                )
                .unwrap_err();
            assert_eq!(
                (error.kind(), error.code()),
                ("InvalidMemoryEntryError", "INVALID_ENTRY"),
                "{fields:?}"
            );
            assert_eq!(error.id(), Some("shared:x"));
        }
        assert!(h.take().iter().all(|l| l == "audit:error"));
    }

    #[test]
    fn limits_report_limit_and_count() {
        let h = Harness::with(Limits { max_entries_per_scope_root: 3, ..Limits::default() }, None);
        let long = "é".repeat(2001);
        let error = h.service.create("main", create("shared:long", &long)).unwrap_err();
        assert_eq!(error.code(), "LIMIT_EXCEEDED");
        assert_eq!(
            (
                alp_memory::json::error_object(&error)["limit"].as_u64(),
                alp_memory::json::error_object(&error)["count"].as_u64()
            ),
            (Some(2000), Some(2001))
        );
        assert!(
            h.service.create("main", create("shared:fits", &"é".repeat(2000))).is_ok(),
            "2000 characters (4000 bytes) fit"
        );

        let ttl = |t: &str| CreateRequest {
            id: "shared:ttl".into(),
            content: "x".into(),
            fields: FieldInput::new().with(FieldName::Ttl, t),
        };
        let error = h.service.create("main", ttl("366d")).unwrap_err();
        assert_eq!(
            (
                alp_memory::json::error_object(&error)["limit"].as_u64(),
                alp_memory::json::error_object(&error)["count"].as_u64()
            ),
            (Some(31_536_000), Some(31_622_400))
        );
        assert_eq!(
            h.service.create("main", ttl("52w")).unwrap().fields.ttl,
            Some(Ttl::parse("52w").unwrap())
        );

        h.service.create("main", create("shared:third", "x")).unwrap();
        let error = h.service.create("main", create("shared:fourth", "x")).unwrap_err();
        assert_eq!(error.code(), "LIMIT_EXCEEDED");
        assert_eq!(
            (
                alp_memory::json::error_object(&error)["limit"].as_u64(),
                alp_memory::json::error_object(&error)["count"].as_u64()
            ),
            (Some(3), Some(3))
        );
        assert_eq!(error.id(), Some("shared:fourth"));
        assert!(
            h.service.create("main", create("project:alp:other-root", "x")).is_ok(),
            "limits count per scope root"
        );
    }
}

mod expiry {
    use super::*;

    fn with_ttl(id: &str, ttl: &str) -> CreateRequest {
        CreateRequest {
            id: id.into(),
            content: "temporary".into(),
            fields: FieldInput::new().with(FieldName::Ttl, ttl),
        }
    }

    #[test]
    fn expired_entries_are_invisible_and_say_so() {
        let h = Harness::new();
        let entry = h.service.create("main", with_ttl("shared:tmp", "1h")).unwrap();
        assert_eq!(entry.expires_at().unwrap().to_string(), "2026-11-29T13:00:00.000Z");
        h.set_time("2026-11-29T12:59:59.999Z");
        assert!(h.service.get("main", "shared:tmp").is_ok());
        h.set_time("2026-11-29T13:00:00Z");
        let error = h.service.get("main", "shared:tmp").unwrap_err();
        assert_eq!(
            (error.code(), alp_memory::json::error_object(&error)["expired"].as_bool()),
            ("NOT_FOUND", Some(true))
        );
        assert!(error.to_string().contains("expired"), "{error}");
        assert_eq!(h.service.update("main", update("shared:tmp", 1)).unwrap_err().code(), "NOT_FOUND");
        assert_eq!(h.service.delete("main", "shared:tmp", 1).unwrap_err().code(), "NOT_FOUND");
        assert!(h.service.search("main", &search(None, "temporary")).unwrap().entries.is_empty());
        let error = h.service.create("main", create("shared:tmp", "new")).unwrap_err();
        assert_eq!(error.code(), "ALREADY_EXISTS");
        assert!(error.to_string().contains("prune"), "{error}");
    }

    #[test]
    fn prune_deletes_only_expired_entries_inside_write_grants_one_record_each() {
        let h = Harness::new();
        h.service.create("main", with_ttl("shared:team:old", "1h")).unwrap();
        h.service.create("main", with_ttl("shared:facts:old", "1h")).unwrap();
        h.service.create("main", with_ttl("project:alp:log:old", "1h")).unwrap();
        h.service.create("main", with_ttl("shared:team:fresh", "1d")).unwrap();
        h.set_time("2026-11-29T14:00:00Z");
        h.take();
        let before = h.records().len();
        // worker writes shared:team:* and project:alp:log:*, not shared:facts.
        let pruned = h.service.prune("worker", None).unwrap();
        assert_eq!(pruned.withheld, 0, "worker reads both");
        let pruned: Vec<&str> = pruned.ids.iter().map(|id| id.as_str()).collect();
        assert_eq!(pruned, ["project:alp:log:old", "shared:team:old"]);
        let records = h.records();
        let new: Vec<(&str, &str)> =
            records[before..].iter().map(|r| (r.operation().as_str(), r.id())).collect();
        assert_eq!(new, [("delete", "project:alp:log:old"), ("delete", "shared:team:old")]);
        assert_eq!(h.service.prune("main", Some("shared:facts")).unwrap().ids.len(), 1);
        assert!(h.service.get("main", "shared:team:fresh").is_ok());
    }

    #[test]
    fn a_refused_prune_writes_one_denied_delete_record_with_its_prefix() {
        let h = Harness::new();
        let error = h.service.prune("worker", Some("private:main")).unwrap_err();
        assert_eq!(error.code(), "PRIVATE_MEMORY_DENIED");
        let last = h.records().pop().unwrap();
        assert_eq!(
            (last.operation().as_str(), last.id(), last.outcome()),
            ("delete", "private:main", Outcome::Denied)
        );
        assert_eq!(h.service.prune("reviewer", None).unwrap_err().code(), "MEMORY_NOT_GRANTED");
        assert_eq!(h.records().pop().unwrap().id(), "");
    }
}

mod search {
    use super::*;

    #[test]
    fn lists_only_granted_subtrees_and_filters_every_result() {
        let h = Harness::new();
        h.service.create("main", create("shared:team", "base of the team subtree")).unwrap();
        h.service.create("main", create("shared:team:db", "postgres")).unwrap();
        h.service.create("main", create("private:main:plan", "secret postgres plan")).unwrap();
        h.service.create("main", create("project:alp:db", "postgres for alp")).unwrap();
        h.take();
        let found = h.service.search("worker", &search(None, "postgres")).unwrap().entries;
        let ids: Vec<&str> = found.iter().map(|s| s.entry.id.as_str()).collect();
        assert_eq!(ids, ["project:alp:db", "shared:team:db"]);
        assert_eq!(h.take(), ["store:list[private:worker,project:alp,shared]", "audit:allowed"]);
        assert_eq!(h.records().pop().unwrap().shown(), ["project:alp:db@1", "shared:team:db@1"]);

        let found = h.service.search("worker", &search(Some("private"), "")).unwrap().entries;
        assert!(found.is_empty());
        assert_eq!(
            h.take(),
            ["store:list[private:worker]", "audit:allowed"],
            "never opens main's private memory"
        );
        assert!(h.records().pop().unwrap().shown().is_empty(), "no entry returned: no receipt");
    }

    #[test]
    fn prefix_matches_whole_segments_and_includes_its_own_entry() {
        let h = Harness::new();
        for id in ["shared:team", "shared:team:a", "shared:teams:b"] {
            h.service.create("main", create(id, "x")).unwrap();
        }
        let ids = |prefix| -> Vec<String> {
            h.service
                .search("main", &search(Some(prefix), ""))
                .unwrap()
                .entries
                .into_iter()
                .map(|s| s.entry.id.into_string())
                .collect()
        };
        assert_eq!(ids("shared:team"), ["shared:team", "shared:team:a"]);
        assert!(ids("shared:te").is_empty());
    }

    #[test]
    fn ranks_by_score_then_newer_then_id_and_limits() {
        let h = Harness::new();
        h.service.create("main", create("shared:b", "alpha beta")).unwrap();
        h.service.create("main", create("shared:a", "alpha beta")).unwrap();
        h.set_time("2026-11-29T12:00:01Z");
        h.service.create("main", create("shared:c", "alpha")).unwrap();
        h.service.create("main", create("shared:d", "gamma")).unwrap();
        let found = h.service.search("main", &search(None, "ALPHA beta")).unwrap().entries;
        let got: Vec<(&str, usize)> = found.iter().map(|s| (s.entry.id.as_str(), s.score)).collect();
        assert_eq!(got, [("shared:a", 2), ("shared:b", 2), ("shared:c", 1)]);
        let limited = h
            .service
            .search("main", &SearchRequest { limit: Some(1), ..search(None, "alpha") })
            .unwrap()
            .entries;
        assert_eq!(limited[0].entry.id.as_str(), "shared:c", "newer first among equal scores");
        assert_eq!(limited.len(), 1);
    }
}

/// ALREADY_EXISTS names the entry holding the place only when the actor may read it: a role that may write a
/// subtree but not read it learns no ID in it, from any field of the error or its message.
mod existence {
    use alp_memory::memory_entry::NewEntry;
    use alp_memory::memory_id::parse_memory_id;
    use alp_memory::memory_store::{MemoryStore, OnExisting};

    use super::*;

    fn keyed(id: &str, key: &str) -> CreateRequest {
        CreateRequest {
            id: id.into(),
            content: "x".into(),
            fields: FieldInput::new().with(FieldName::Type, "decision").with(FieldName::Key, key),
        }
    }

    /// The error's JSON object, checked to hold no trace of `secret` (a segment only the hidden ID has).
    fn redacted(error: &MemoryError, secret: &str) -> serde_json::Value {
        assert_eq!(error.code(), "ALREADY_EXISTS", "{error:?}");
        let object = alp_memory::json::error_object(error);
        assert!(object.get("existing").is_none(), "{object}");
        assert!(!object.to_string().contains(secret), "{object}");
        assert!(!error.to_string().contains(secret), "{error}");
        object
    }

    #[test]
    fn a_duplicate_key_names_a_readable_holder_only() {
        let h = Harness::new();
        h.service.create("main", keyed("shared:inbox:secret-plan", "db")).unwrap();
        h.service.create("main", keyed("shared:team:known", "cache")).unwrap();
        let hidden = h.service.create("courier", keyed("shared:inbox:note", "db")).unwrap_err();
        let object = redacted(&hidden, "secret-plan");
        assert_eq!(
            (object["id"].as_str(), object["reason"].as_str()),
            (Some("shared:inbox:note"), Some("duplicate_key"))
        );
        assert_eq!(
            hidden.to_string(),
            "an entry this role may not read already holds the same type, key and scope as `shared:inbox:note`; \
             choose another key or scope"
        );
        let named = h.service.create("courier", keyed("shared:team:mine", "cache")).unwrap_err();
        assert_eq!(alp_memory::json::error_object(&named)["existing"], "shared:team:known");
        assert!(named.to_string().contains("`shared:team:known`"), "{named}");
    }

    #[test]
    fn an_update_that_takes_a_hidden_key_names_nothing() {
        let h = Harness::new();
        h.service.create("main", keyed("shared:inbox:secret-plan", "db")).unwrap();
        h.service.create("courier", keyed("shared:inbox:mine", "cache")).unwrap();
        let steal = UpdateRequest {
            fields: FieldInput::new().with(FieldName::Key, "db"),
            ..update("shared:inbox:mine", 1)
        };
        redacted(&h.service.update("courier", steal).unwrap_err(), "secret-plan");
    }

    #[test]
    fn a_file_directory_clash_names_a_readable_holder_only() {
        let h = Harness::new();
        h.service.create("main", create("shared:inbox:x.md:hidden-name", "below")).unwrap();
        let below = h.service.create("courier", create("shared:inbox:x", "above")).unwrap_err();
        let object = redacted(&below, "hidden-name");
        assert_eq!(object["reason"], "file_directory_clash");
        h.service.create("main", create("shared:team:y.md:seen", "below")).unwrap();
        let named = h.service.create("courier", create("shared:team:y", "above")).unwrap_err();
        assert_eq!(alp_memory::json::error_object(&named)["existing"], "shared:team:y.md:seen");
    }

    #[test]
    fn a_rename_into_a_hidden_place_names_nothing() {
        let h = Harness::new();
        h.service.create("main", create("shared:inbox:x.md:hidden-name", "below")).unwrap();
        h.service.create("courier", create("shared:team:draft", "mine")).unwrap();
        let moved = h.service.rename("courier", "shared:team:draft", "shared:inbox:x", 1).unwrap_err();
        redacted(&moved, "hidden-name");
    }

    #[test]
    fn an_import_that_takes_a_hidden_key_names_nothing() {
        let h = Harness::new();
        let id = parse_memory_id("project:drop:secret-plan").unwrap();
        let fields = alp_memory::memory_entry::Fields {
            memory_type: Some("decision".parse().unwrap()),
            key: Some("db".parse().unwrap()),
            ..Default::default()
        };
        h.service.store().create(NewEntry::new(id, "x").with_fields(fields), h.service.now()).unwrap();
        let file = "!alp-version: 80.0.0\n@memory\n  id: note\n  type: decision\n  key: db\n  value: v\n";
        let error = h.service.import_alp("courier", "drop", file, OnExisting::Fail).unwrap_err();
        redacted(&error, "secret-plan");
    }
}
