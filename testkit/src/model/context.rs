//! The character-budgeted context and the task/feature read plan of `conformance/README.md`
//! ("Building the context", "The read plan"), written plainly.
//!
//! ```
//! use testkit::model::{context, ranking::Entry};
//! let entries = [Entry::new("shared:a", "alpha\n", 2), Entry::new("shared:b", &"b".repeat(50), 1)];
//! let built = context::build(&entries, 20);
//! assert_eq!(built.text, "## shared:a\nalpha\n\n");
//! assert_eq!((built.included, built.omitted), (vec!["shared:a".to_owned()], vec!["shared:b".to_owned()]));
//! ```

use std::collections::BTreeMap;

use memory_context::Tier;

use super::ranking::{self, Entry};

/// The context built from ranked entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The text: the blocks of the included entries, in order.
    pub text: String,
    /// The IDs whose blocks are in the text, in order.
    pub included: Vec<String>,
    /// The IDs whose blocks did not fit, in order.
    pub omitted: Vec<String>,
}

/// Walks `entries` in order; an entry's block `"## " + id + "\n" + content without trailing "\n"/"\r" + "\n\n"`
/// goes in whole if its characters fit in what is left of `budget`, and is omitted otherwise (later, shorter
/// blocks may still fit).
pub fn build(entries: &[Entry], budget: usize) -> Context {
    let mut context = Context { text: String::new(), included: Vec::new(), omitted: Vec::new() };
    for entry in entries {
        let block = format!("## {}\n{}\n\n", entry.id, entry.content.trim_end_matches(['\n', '\r']));
        if context.text.chars().count() + block.chars().count() <= budget {
            context.text.push_str(&block);
            context.included.push(entry.id.clone());
        } else {
            context.omitted.push(entry.id.clone());
        }
    }
    context
}

/// The read plan for a task (with its feature, if any) or a feature alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The planned IDs with their tiers, in plan order.
    pub entries: Vec<(String, Tier)>,
    /// The candidates a narrower entry with the same (type, key) removed, sorted by ID.
    pub shadowed: Vec<String>,
}

/// Plans the read for `task` and/or `feature`: candidates by scope (task 3, feature 2, unscoped 1, critical from
/// elsewhere 0), shadowing within each (type, key) by the highest level, tiers, and inside each tier the ranking
/// definition in plan mode (the query orders, never drops).
pub fn plan(entries: &[Entry], task: Option<&str>, feature: Option<&str>, query: &str) -> Plan {
    let level = |e: &Entry| match e.scope.as_deref() {
        None | Some("project") => Some(1),
        Some(s) if Some(s) == task => Some(3),
        Some(s) if Some(s) == feature => Some(2),
        Some(_) if e.critical => Some(0),
        Some(_) => None,
    };
    let candidates: Vec<(&Entry, i32)> = entries.iter().filter_map(|e| level(e).map(|l| (e, l))).collect();
    let mut best: BTreeMap<(Option<&str>, &str), i32> = BTreeMap::new();
    for (e, l) in &candidates {
        if let Some(key) = e.key.as_deref() {
            let slot = best.entry((e.memory_type.as_deref(), key)).or_insert(*l);
            *slot = (*slot).max(*l);
        }
    }
    let shadows =
        |e: &Entry, l: i32| e.key.as_deref().is_some_and(|k| best[&(e.memory_type.as_deref(), k)] > l);
    let mut shadowed: Vec<String> =
        candidates.iter().filter(|(e, l)| shadows(e, *l)).map(|(e, _)| e.id.clone()).collect();
    shadowed.sort();
    let tier = |e: &Entry, l: i32| match (e.critical, l) {
        (true, _) | (_, 0) => Tier::Critical,
        (_, 3) => Tier::Task,
        (_, 2) => Tier::Feature,
        _ if matches!(e.memory_type.as_deref(), Some("project" | "architecture")) => {
            Tier::ProjectOrArchitecture
        }
        _ => Tier::Unscoped,
    };
    let mut planned: Vec<(&Entry, Tier, usize)> = candidates
        .iter()
        .filter(|(e, l)| !shadows(e, *l))
        .map(|(e, l)| (*e, tier(e, *l), ranking::score(query, &e.id, &e.content)))
        .collect();
    planned.sort_by_key(|(e, t, s)| (*t, ranking::order_key(*s, e)));
    Plan { entries: planned.into_iter().map(|(e, t, _)| (e.id.clone(), t)).collect(), shadowed }
}
