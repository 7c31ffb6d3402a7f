//! The history model: sequences of create, update, delete, rename and restore over three IDs, run against a store
//! and a ten-line reference side by side, and the proptest strategy that generates them.

use proptest::prelude::*;

use crate::MemoryStore;
use memory_entry::{Limits, Patch, StoreError, VersionMissing};

use super::Make;
use super::fixtures::*;

/// One step of [`check_history_model`], over the IDs `shared:a`, `shared:b` and `shared:c` (by index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryOp {
    /// Create the ID with content `c<content>`.
    Create {
        /// Which ID.
        id: usize,
        /// Names the content.
        content: u8,
    },
    /// Update it to `c<content>`, expecting its version plus `delta`.
    Update {
        /// Which ID.
        id: usize,
        /// Added to the version read (0: the right one).
        delta: i8,
        /// Names the content.
        content: u8,
    },
    /// Delete it, expecting its version plus `delta`.
    Delete {
        /// Which ID.
        id: usize,
        /// Added to the version read.
        delta: i8,
    },
    /// Rename `from` to `to` (two different IDs), expecting `from`'s version plus `delta`.
    Rename {
        /// The ID moved.
        from: usize,
        /// Where it goes.
        to: usize,
        /// Added to the version read.
        delta: i8,
    },
    /// Restore the version `back` below the ID's highest, expecting the current (or tombstone's) version plus
    /// `delta`.
    Restore {
        /// Which ID.
        id: usize,
        /// How far below the highest version.
        back: u8,
        /// Added to the version expected.
        delta: i8,
    },
}

/// A step of the model as proptest draws it: over the three IDs, with the right expected version three times in five
/// (else one off either way), and restores of up to six versions back (some no longer kept).
///
/// ```ignore
/// proptest! {
///     #[test]
///     fn history_matches_the_reference(ops in prop::collection::vec(history_op(), 1..40)) {
///         check_history_model(&in_memory, &ops);
///     }
/// }
/// ```
pub fn history_op() -> impl Strategy<Value = HistoryOp> {
    let id = 0..3usize;
    let delta = prop::sample::select(vec![0i8, 0, 0, -1, 1]);
    prop_oneof![
        3 => (id.clone(), 0..4u8).prop_map(|(id, content)| HistoryOp::Create { id, content }),
        4 => (id.clone(), delta.clone(), 0..4u8)
            .prop_map(|(id, delta, content)| HistoryOp::Update { id, delta, content }),
        2 => (id.clone(), delta.clone()).prop_map(|(id, delta)| HistoryOp::Delete { id, delta }),
        2 => (id.clone(), 1..3usize, delta.clone())
            .prop_map(|(from, shift, delta)| HistoryOp::Rename { from, to: (from + shift) % 3, delta }),
        2 => (id, 0..6u8, delta).prop_map(|(id, back, delta)| HistoryOp::Restore { id, back, delta }),
    ]
}

/// How many versions the model keeps per ID: small, so that sequences drop versions (the `prune` of the model).
pub const MODEL_KEEP_VERSIONS: u64 = 4;

/// The IDs the model uses.
const MODEL_IDS: [&str; 3] = ["shared:a", "shared:b", "shared:c"];

/// What a call ended with, as the model compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok(u64),
    NotFound,
    Conflict(u64),
    Exists,
    Missing(VersionMissing),
    Redacted,
}

fn outcome(result: Result<u64, StoreError>) -> Outcome {
    match result {
        Ok(version) => Outcome::Ok(version),
        Err(StoreError::NotFound { .. }) => Outcome::NotFound,
        Err(StoreError::VersionConflict { actual, .. }) => Outcome::Conflict(actual),
        Err(StoreError::AlreadyExists { .. }) => Outcome::Exists,
        Err(StoreError::VersionNotFound { missing, .. }) => Outcome::Missing(missing),
        Err(StoreError::VersionRedacted { .. }) => Outcome::Redacted,
        Err(other) => panic!("unexpected error {other:?}"),
    }
}

/// The reference: per ID, its kept versions oldest first (`None` is a tombstone), the current one last.
#[derive(Default)]
struct Reference(std::collections::BTreeMap<usize, Vec<(u64, Option<String>)>>);

impl Reference {
    fn highest(&self, id: usize) -> Option<u64> {
        self.0.get(&id).and_then(|kept| kept.last()).map(|(version, _)| *version)
    }
    fn current(&self, id: usize) -> Option<(u64, String)> {
        self.0.get(&id).and_then(|kept| kept.last()).and_then(|(v, c)| c.clone().map(|c| (*v, c)))
    }
    fn push(&mut self, id: usize, content: Option<String>) -> u64 {
        let version = self.highest(id).map_or(1, |v| v + 1);
        let kept = self.0.entry(id).or_default();
        kept.push((version, content));
        let drop = kept.len().saturating_sub(MODEL_KEEP_VERSIONS as usize);
        kept.drain(..drop);
        version
    }
    fn live(&self, id: usize, expected: u64) -> Result<(u64, String), Outcome> {
        let (version, content) = self.current(id).ok_or(Outcome::NotFound)?;
        if version == expected { Ok((version, content)) } else { Err(Outcome::Conflict(version)) }
    }
}

fn with_delta(version: u64, delta: i8) -> u64 {
    version.saturating_add_signed(i64::from(delta))
}

/// Runs `ops` against a fresh store (keeping [`MODEL_KEEP_VERSIONS`]) and against the reference, and checks after
/// every step that both answered alike, that every ID's history (versions, contents, tombstones) is the
/// reference's, and that no (ID, version) pair ever stood for two different contents.
pub fn check_history_model(make: &Make, ops: &[HistoryOp]) {
    let s = make(Limits { keep_versions: MODEL_KEEP_VERSIONS, ..Limits::default() });
    let mut model = Reference::default();
    let mut ledger: std::collections::BTreeMap<(usize, u64), Option<String>> =
        std::collections::BTreeMap::new();
    let read = |model: &Reference, i: usize| model.current(i).map_or(1, |(v, _)| v);
    for (step, op) in ops.iter().enumerate() {
        let now = at(step as i64);
        let (got, want) = match *op {
            HistoryOp::Create { id: i, content } => {
                let text = format!("c{content}");
                let got = s.store.create(new(MODEL_IDS[i], &text), now).map(|e| e.version);
                let want = if model.current(i).is_some() {
                    Outcome::Exists
                } else {
                    Outcome::Ok(model.push(i, Some(text)))
                };
                (outcome(got), want)
            }
            HistoryOp::Update { id: i, delta, content } => {
                let text = format!("c{content}");
                let expected = with_delta(read(&model, i), delta);
                let got =
                    s.store.update(&id(MODEL_IDS[i]), expected, &Patch::content_only(text.clone()), now);
                let want = match model.live(i, expected) {
                    Ok(_) => Outcome::Ok(model.push(i, Some(text))),
                    Err(refused) => refused,
                };
                (outcome(got.map(|e| e.version)), want)
            }
            HistoryOp::Delete { id: i, delta } => {
                let expected = with_delta(read(&model, i), delta);
                let got = s.store.delete(&id(MODEL_IDS[i]), expected, now).map(|()| 0);
                let want = match model.live(i, expected) {
                    Ok(_) => {
                        model.push(i, None);
                        Outcome::Ok(0)
                    }
                    Err(refused) => refused,
                };
                (outcome(got), want)
            }
            HistoryOp::Rename { from, to, delta } => {
                let expected = with_delta(read(&model, from), delta);
                let got = s.store.rename(&id(MODEL_IDS[from]), &id(MODEL_IDS[to]), expected, now);
                let want = match model.live(from, expected) {
                    Err(refused) => refused,
                    Ok(_) if model.current(to).is_some() => Outcome::Exists,
                    Ok((_, content)) => {
                        model.push(from, None);
                        Outcome::Ok(model.push(to, Some(content)))
                    }
                };
                (outcome(got.map(|e| e.version)), want)
            }
            HistoryOp::Restore { id: i, back, delta } => {
                let highest = model.highest(i).unwrap_or(1);
                let version = highest.saturating_sub(u64::from(back)).max(1);
                let expected = with_delta(highest, delta);
                let got = s.store.restore(&id(MODEL_IDS[i]), version, expected, now).map(|e| e.version);
                let want = match (model.highest(i), model.current(i)) {
                    (None, _) => Outcome::NotFound,
                    (Some(actual), _) if actual != expected => Outcome::Conflict(actual),
                    (Some(_), _) => match model.0[&i].iter().find(|(v, _)| *v == version).cloned() {
                        None => Outcome::Missing(VersionMissing::NoLongerKept),
                        Some((_, None)) => Outcome::Missing(VersionMissing::Tombstone),
                        Some((_, Some(content))) => Outcome::Ok(model.push(i, Some(content))),
                    },
                };
                (outcome(got), want)
            }
        };
        assert_eq!(got, want, "step {step}: {op:?}");
        for (i, text) in MODEL_IDS.iter().enumerate() {
            let want: Vec<(u64, Option<String>)> =
                model.0.get(&i).map(|kept| kept.iter().rev().cloned().collect()).unwrap_or_default();
            let have: Vec<(u64, Option<String>)> = match s.store.history(&id(text), None) {
                Ok(kept) => {
                    kept.iter().map(|v| (v.version(), v.entry().map(|e| e.content.clone()))).collect()
                }
                Err(StoreError::NotFound { .. }) => Vec::new(),
                Err(other) => panic!("history of {text}: {other:?}"),
            };
            assert_eq!(have, want, "history of {text} after step {step}: {op:?}");
            for (version, content) in have {
                let seen = ledger.entry((i, version)).or_insert_with(|| content.clone());
                assert_eq!(*seen, content, "({text}, {version}) stood for two contents");
            }
            let live = s.store.get(&id(text), now).ok().map(|e| (e.version, e.content));
            assert_eq!(live, model.current(i), "current {text} after step {step}");
        }
    }
}
