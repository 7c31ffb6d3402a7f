//! Properties, checked against the reference validator `testkit::model::id` written from the grammar in
//! `conformance/README.md` (independent of the crate's code), on inputs built from segments that are likely to trip
//! each rule.

use memory_id::{MemoryId, MemoryPrefix, parse_memory_id};
use proptest::prelude::*;
use testkit::model::id::{contains, id_refusal, min_id_parts, prefix_refusal, segment_ok};

use crate::refusal;

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
        let got = parse_memory_id(&input).err().as_ref().map(refusal);
        prop_assert_eq!(got, id_refusal(&input), "{:?}", input);
        let got = MemoryPrefix::parse(&input).err().as_ref().map(refusal);
        prop_assert_eq!(got, prefix_refusal(&input), "prefix {:?}", input);
    }

    #[test]
    fn accepted_ids_have_valid_segments_and_enough_parts(input in input()) {
        if let Ok(id) = parse_memory_id(&input) {
            let segments: Vec<&str> = input.split(':').collect();
            prop_assert!(segments.len() >= min_id_parts(segments[0]) && segments.len() <= 64);
            prop_assert!(input.len() <= 1024);
            for segment in &segments[1..] {
                prop_assert!(segment_ok(segment), "{:?}: accepted with the segment {:?}", input, segment);
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
        prop_assert_eq!(id.err().as_ref().map(refusal), id_refusal(&input));
        prop_assert_eq!(prefix.err().as_ref().map(refusal), prefix_refusal(&input));
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
            let expected = contains(prefix.as_str(), id.as_str());
            prop_assert_eq!(prefix.contains(&id), expected, "{} contains {}", prefix, id);
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
