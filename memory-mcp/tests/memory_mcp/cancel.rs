//! A raised cancel flag (what a server raises when a call's client leaves, or on `notifications/cancelled`) stops
//! every call that lists entries at the store's next entry: `memory_search`, `memory_context` and the `memory`
//! tool's directory view. The call's one audit record is written; nothing is answered but the cancellation.

use alp_memory::memory_store::Cancel;
use serde_json::{Value, json};

use crate::support::{call, server};

#[test]
fn a_raised_flag_stops_every_listing_call() {
    let server = server("main");
    for n in 0..3 {
        let created =
            call(&server, "memory_create", json!({ "id": format!("shared:notes:n{n}"), "content": "x" }));
        assert_eq!(created.is_error, Some(false), "{created:?}");
    }
    let raised = Cancel::new();
    raised.cancel();
    for (tool, args) in [
        ("memory_search", json!({ "query": "x" })),
        ("memory_context", json!({ "query": "x", "budget": 100 })),
        ("memory", json!({ "command": "view", "path": "/memories/shared/notes" })),
        ("memory", json!({ "command": "view", "path": "/memories" })),
    ] {
        let before = server.service().audit().records().len();
        let result = server.call_with_cancel(tool, args.as_object().cloned(), &raised);
        assert_eq!(result.is_error, Some(true), "{tool} {args}: {result:?}");
        let error: &Value = &result.structured_content.as_ref().unwrap()["error"];
        assert_eq!(error["code"], "STORAGE_ERROR", "{tool} {args}: {error}");
        assert!(error["message"].as_str().unwrap().contains("cancelled"), "{error}");
        let records = server.service().audit().records();
        assert_eq!(records.len(), before + 1, "{tool}: its one record");
        assert_eq!(records.last().unwrap().operation().as_str(), "search");
        // The same call with the flag down is answered.
        let answered = server.call_with_cancel(tool, args.as_object().cloned(), &Cancel::new());
        assert_eq!(answered.is_error, Some(false), "{tool} {args}: {answered:?}");
    }
}
