//! Properties, checked against a reference validator written from the grammar in DESIGN §1 (independent of the
//! crate's code), on inputs built from segments that are likely to trip each rule.

use memory_id::{MemoryId, MemoryPrefix, parse_memory_id};
use proptest::prelude::*;

/// The reason the grammar gives for `input`, or `None` if it is valid; `min_parts` is the part count a scope needs.
fn reference(input: &str, min_parts: fn(&str) -> usize) -> Option<&'static str> {
    if input.len() > 1024 {
        return Some("too_long");
    }
    let parts: Vec<&str> = input.split(':').collect();
    if parts.len() > 64 {
        return Some("too_many_segments");
    }
    if !["shared", "project", "private"].contains(&parts[0]) {
        return Some("unknown_scope");
    }
    if parts.len() < min_parts(parts[0]) {
        return Some("too_few_parts");
    }
    parts[1..].iter().find_map(|segment| reference_segment(segment))
}

fn reference_segment(segment: &str) -> Option<&'static str> {
    if segment.is_empty() {
        Some("empty")
    } else if segment == "." || segment == ".." {
        Some("dot_segment")
    } else if segment.contains(['/', '\\']) {
        Some("separator")
    } else if segment.chars().any(|c| c <= '\u{1f}' || c == '\u{7f}') {
        Some("control_char")
    } else if segment.len() > 200 {
        Some("segment_too_long")
    } else {
        None
    }
}

fn id_parts(scope: &str) -> usize {
    if scope == "shared" { 2 } else { 3 }
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["shared", "project", "private"]).prop_map(str::to_owned),
        6 => "[a-z]{1,3}",
        1 => prop::sample::select(vec![
            "", ".", "..", "...", "a/b", "/", "\\", "x\\y", "\0", "x\ny", "\t", "\u{7f}", "\u{1f}", "\u{85}",
            "\u{e9}", "e\u{301}", "*", "%2e%2e", " ", "Shared", "\u{2028}", "..\n",
        ])
        .prop_map(str::to_owned),
        1 => "a{195,205}",
        1 => "\u{e9}{98,102}",
        1 => any::<String>(),
    ]
}

/// Inputs made of likely segments, sometimes many, sometimes long.
fn input() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::collection::vec(segment(), 1..8).prop_map(|s| s.join(":")),
        1 => prop::collection::vec(segment(), 60..70).prop_map(|s| s.join(":")),
        1 => prop::collection::vec("a{150,200}", 4..7).prop_map(|s| format!("shared:{}", s.join(":"))),
    ]
}

/// Valid IDs only, built from valid segments (a filter on `input()` would reject most cases).
fn valid_id() -> impl Strategy<Value = MemoryId> {
    let segment = prop_oneof![
        4 => "[a-z]{1,3}",
        1 => prop::sample::select(vec!["...", ".a", "*", "%2e%2e", " ", "\u{e9}", "e\u{301}", "\u{85}", "shared"])
            .prop_map(str::to_owned),
        1 => r"[^:/\\\x00-\x1f\x7f]{1,50}".prop_filter("a dot segment", |s| s != "." && s != ".."),
        1 => "a{150,200}",
    ];
    let scope = prop::sample::select(vec!["shared", "project", "private"]);
    (scope, prop::collection::vec(segment, 2..6)).prop_map(|(scope, segments)| {
        let text = format!("{scope}:{}", segments.join(":"));
        parse_memory_id(&text).unwrap_or_else(|e| panic!("{e}"))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parse_agrees_with_the_reference(input in input()) {
        let got = parse_memory_id(&input).err().map(|e| e.reason().code());
        prop_assert_eq!(got, reference(&input, id_parts), "{:?}", input);
        let got = MemoryPrefix::parse(&input).err().map(|e| e.reason().code());
        prop_assert_eq!(got, reference(&input, |_| 1), "prefix {:?}", input);
    }

    #[test]
    fn accepted_ids_have_valid_segments_and_enough_parts(input in input()) {
        if let Ok(id) = parse_memory_id(&input) {
            let segments: Vec<&str> = input.split(':').collect();
            prop_assert!(segments.len() >= id_parts(segments[0]) && segments.len() <= 64);
            prop_assert!(input.len() <= 1024);
            for segment in &segments[1..] {
                prop_assert!(!segment.is_empty() && *segment != "." && *segment != "..");
                prop_assert!(!segment.contains(['/', '\\']) && segment.len() <= 200);
                prop_assert!(!segment.chars().any(|c| c.is_ascii_control()));
            }
            prop_assert_eq!(id.path_segments().count() + usize::from(id.owner().is_some()) + 1, segments.len());
            prop_assert!(id.path_segments().count() >= 1);
            prop_assert!(id.scope_root().contains(&id));
        }
    }

    #[test]
    fn display_then_parse_is_identity(id in valid_id()) {
        let text = id.to_string();
        prop_assert_eq!(&text, id.as_str());
        prop_assert_eq!(parse_memory_id(&text).unwrap(), id.clone());
        prop_assert_eq!(text.parse::<MemoryId>().unwrap(), id.clone());
        let prefix = id.to_prefix();
        prop_assert_eq!(MemoryPrefix::parse(&prefix.to_string()).unwrap(), prefix);
    }

    #[test]
    fn arbitrary_strings_never_panic(input in any::<String>()) {
        let id = parse_memory_id(&input);
        let prefix = MemoryPrefix::parse(&input);
        if let Err(e) = &id {
            let message = e.to_string();
            prop_assert!(!message.chars().any(char::is_control), "{:?}", message);
        }
        prop_assert_eq!(id.err().map(|e| e.reason().code()), reference(&input, id_parts));
        prop_assert_eq!(prefix.err().map(|e| e.reason().code()), reference(&input, |_| 1));
    }

    #[test]
    fn error_messages_are_one_line(input in input()) {
        if let Err(e) = parse_memory_id(&input) {
            let message = e.to_string();
            prop_assert!(!message.chars().any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}'), "{:?}", message);
            prop_assert!(message.starts_with("invalid memory id `"));
        }
    }

    #[test]
    fn contains_matches_whole_segments(prefix in input(), id in valid_id()) {
        if let Ok(prefix) = MemoryPrefix::parse(&prefix) {
            let p: Vec<&str> = prefix.segments().collect();
            let i: Vec<&str> = id.segments().collect();
            prop_assert_eq!(prefix.contains(&id), i.starts_with(&p));
        }
    }

    #[test]
    fn every_ancestor_contains_and_a_longer_last_segment_does_not(id in valid_id(), k in 1usize..6) {
        let segments: Vec<&str> = id.segments().collect();
        let k = k.min(segments.len());
        let ancestor = MemoryPrefix::parse(&segments[..k].join(":")).unwrap();
        prop_assert!(ancestor.contains(&id), "{} does not contain {}", ancestor, id);
        // `sharedx` is no prefix at all; deeper, a longer last segment is a sibling, never an ancestor.
        if let Ok(longer) = MemoryPrefix::parse(&format!("{ancestor}x")) {
            prop_assert!(!longer.contains(&id), "{} contains {}", longer, id);
        }
    }

    #[test]
    fn order_is_byte_order(a in valid_id(), b in valid_id()) {
        prop_assert_eq!(a.cmp(&b), a.as_str().cmp(b.as_str()));
        prop_assert_eq!(a == b, a.as_str() == b.as_str());
    }
}
