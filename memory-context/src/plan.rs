//! The task and feature read plan (ALP 80 §5.2 and §6): which entries an agent starting work receives, and in what
//! order the budget is spent on them.

use std::collections::BTreeMap;

use memory_ranker::{DeterministicContextRanker, RankItem, Ranked};

/// What the read plan needs to know about an entry, on top of what the ranker needs.
pub trait PlanItem: RankItem {
    /// The object the entry is scoped to (a feature or task reference such as `feat-dashboard`); `None` or exactly
    /// `project` means unscoped.
    fn scope_ref(&self) -> Option<&str>;

    /// The ALP 80 type as its lower-case name (`project`, `architecture`, `decision`, …); `None` when unset.
    fn memory_type(&self) -> Option<&str>;

    /// The lookup key; `None` when unset. Entries without a key never shadow and are never shadowed.
    fn key(&self) -> Option<&str>;

    /// Whether the entry's importance is `critical`.
    fn is_critical(&self) -> bool;
}

impl<T: PlanItem + ?Sized> PlanItem for &T {
    fn scope_ref(&self) -> Option<&str> {
        (**self).scope_ref()
    }

    fn memory_type(&self) -> Option<&str> {
        (**self).memory_type()
    }

    fn key(&self) -> Option<&str> {
        (**self).key()
    }

    fn is_critical(&self) -> bool {
        (**self).is_critical()
    }
}

/// What the agent is about to work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanTarget<'a> {
    /// A task, with the feature it belongs to when it has one (`--task T [--feature F]`).
    Task {
        /// The task reference, compared byte for byte with entries' scope.
        task: &'a str,
        /// The task's parent feature, if any.
        feature: Option<&'a str>,
    },
    /// A feature alone (`--feature F`).
    Feature {
        /// The feature reference, compared byte for byte with entries' scope.
        feature: &'a str,
    },
}

impl PlanTarget<'_> {
    fn task(&self) -> Option<&str> {
        match *self {
            PlanTarget::Task { task, .. } => Some(task),
            PlanTarget::Feature { .. } => None,
        }
    }

    fn feature(&self) -> Option<&str> {
        match *self {
            PlanTarget::Task { feature, .. } => feature,
            PlanTarget::Feature { feature } => Some(feature),
        }
    }
}

/// The budget tiers, in the order the budget is spent on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// Importance `critical`, whatever the scope.
    Critical,
    /// Scoped to the task.
    Task,
    /// Scoped to the feature.
    Feature,
    /// Unscoped, of type `project` or `architecture`.
    ProjectOrArchitecture,
    /// Every other unscoped entry.
    Unscoped,
}

impl Tier {
    /// All tiers, in budget order.
    pub const ALL: [Tier; 5] =
        [Tier::Critical, Tier::Task, Tier::Feature, Tier::ProjectOrArchitecture, Tier::Unscoped];

    /// The tier's index in [`Tier::ALL`].
    fn position(self) -> usize {
        match self {
            Tier::Critical => 0,
            Tier::Task => 1,
            Tier::Feature => 2,
            Tier::ProjectOrArchitecture => 3,
            Tier::Unscoped => 4,
        }
    }

    /// A stable lower-case name: `critical`, `task`, `feature`, `project-or-architecture`, `unscoped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Critical => "critical",
            Tier::Task => "task",
            Tier::Feature => "feature",
            Tier::ProjectOrArchitecture => "project-or-architecture",
            Tier::Unscoped => "unscoped",
        }
    }
}

/// How narrow a candidate's scope is relative to the target; narrower wins a (type, key) conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// A critical entry scoped to some other task or feature.
    Elsewhere,
    Unscoped,
    Feature,
    Task,
}

impl Level {
    fn of<T: PlanItem>(item: &T, target: &PlanTarget<'_>) -> Option<Level> {
        match item.scope_ref() {
            None | Some("project") => Some(Level::Unscoped),
            Some(scope) if target.task() == Some(scope) => Some(Level::Task),
            Some(scope) if target.feature() == Some(scope) => Some(Level::Feature),
            Some(_) if item.is_critical() => Some(Level::Elsewhere),
            Some(_) => None,
        }
    }
}

/// An entry in the plan, with its score and tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEntry<T> {
    ranked: Ranked<T>,
    tier: Tier,
}

impl<T> PlannedEntry<T> {
    /// The entry.
    pub fn item(&self) -> &T {
        self.ranked.item()
    }

    /// How many distinct query terms it contains (it is planned whatever the score).
    pub fn score(&self) -> usize {
        self.ranked.score()
    }

    /// The tier it was placed in.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// The entry, consuming the plan entry.
    pub fn into_item(self) -> T {
        self.ranked.into_item()
    }
}

impl<T: RankItem> RankItem for PlannedEntry<T> {
    fn id(&self) -> &str {
        self.ranked.id()
    }

    fn content(&self) -> &str {
        self.ranked.content()
    }

    fn updated_at(&self) -> i128 {
        self.ranked.updated_at()
    }
}

/// A candidate left out because a candidate with the same (type, key) has a narrower scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed<T> {
    item: T,
    by: String,
}

impl<T> Shadowed<T> {
    /// The shadowed entry.
    pub fn item(&self) -> &T {
        &self.item
    }

    /// The ID of the entry that shadows it (the smallest ID, in byte order, among the narrowest candidates).
    pub fn shadowed_by(&self) -> &str {
        &self.by
    }

    /// The shadowed entry, consuming this.
    pub fn into_item(self) -> T {
        self.item
    }
}

/// The result of [`plan_read`]: the entries in budget order, and the candidates that were shadowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPlan<T> {
    entries: Vec<PlannedEntry<T>>,
    shadowed: Vec<Shadowed<T>>,
}

impl<T> ReadPlan<T> {
    /// The planned entries, tier by tier, each tier in rank order. Hand them to
    /// [`build_memory_context`](crate::build_memory_context).
    pub fn entries(&self) -> &[PlannedEntry<T>] {
        &self.entries
    }

    /// The shadowed candidates, by ID in byte order.
    pub fn shadowed(&self) -> &[Shadowed<T>] {
        &self.shadowed
    }

    /// The planned and the shadowed entries.
    pub fn into_parts(self) -> (Vec<PlannedEntry<T>>, Vec<Shadowed<T>>) {
        (self.entries, self.shadowed)
    }
}

/// Plans what an agent starting on `target` reads, from every entry it may read.
///
/// 1. **Candidates**: entries scoped to the task, scoped to the feature, unscoped (no scope, or exactly `project`),
///    and every entry of importance `critical` whatever its scope. Anything else is not part of the plan. Scopes
///    compare byte for byte, and `project` always means unscoped (even for a task named `project`).
/// 2. **Shadowing**: among candidates with a key, those sharing (type, key) keep only the narrowest scope: task over
///    feature over unscoped over a critical entry scoped elsewhere. The others are [shadowed](ReadPlan::shadowed).
///    Types compare as optional values (two untyped entries with one key do conflict); candidates equally narrow
///    all stay; entries without a key never shadow.
/// 3. **Tiers**: critical (at any level), then task-scoped, feature-scoped, unscoped of type `project` or
///    `architecture`, then other unscoped.
/// 4. **Order inside a tier**: the ranker's order ([`DeterministicContextRanker::rank_all`]): the query orders
///    entries but never drops one, in task and feature plans alike.
///
/// ```
/// use memory_context::{plan_read, PlanItem, PlanTarget, Tier};
/// use memory_ranker::{DeterministicContextRanker, RankItem};
///
/// struct E { id: &'static str, scope: Option<&'static str>, key: Option<&'static str>, critical: bool }
/// impl RankItem for E {
///     fn id(&self) -> &str { self.id }
///     fn content(&self) -> &str { "" }
///     fn updated_at(&self) -> i128 { 0 }
/// }
/// impl PlanItem for E {
///     fn scope_ref(&self) -> Option<&str> { self.scope }
///     fn memory_type(&self) -> Option<&str> { Some("architecture") }
///     fn key(&self) -> Option<&str> { self.key }
///     fn is_critical(&self) -> bool { self.critical }
/// }
///
/// let entries = [
///     E { id: "project:alp:db", scope: None, key: Some("database"), critical: false },
///     E { id: "project:alp:db-offline", scope: Some("feat-offline"), key: Some("database"), critical: false },
///     E { id: "project:alp:other-task", scope: Some("task-9"), key: None, critical: false },
///     E { id: "project:alp:critical-elsewhere", scope: Some("task-9"), key: None, critical: true },
/// ];
/// let target = PlanTarget::Task { task: "task-1", feature: Some("feat-offline") };
/// let plan = plan_read(&entries, target, &DeterministicContextRanker::new(""));
/// let order: Vec<_> = plan.entries().iter().map(|e| (e.item().id, e.tier())).collect();
/// assert_eq!(order, [("project:alp:critical-elsewhere", Tier::Critical), ("project:alp:db-offline", Tier::Feature)]);
/// assert_eq!(plan.shadowed()[0].item().id, "project:alp:db");
/// assert_eq!(plan.shadowed()[0].shadowed_by(), "project:alp:db-offline");
/// ```
pub fn plan_read<I>(
    items: I,
    target: PlanTarget<'_>,
    ranker: &DeterministicContextRanker,
) -> ReadPlan<I::Item>
where
    I: IntoIterator,
    I::Item: PlanItem,
{
    let candidates: Vec<(I::Item, Level)> =
        items.into_iter().filter_map(|item| Level::of(&item, &target).map(|level| (item, level))).collect();

    // The narrowest level per (type, key), and the smallest ID at that level, to name as the shadowing entry.
    let mut narrowest: BTreeMap<(Option<String>, String), (Level, String)> = BTreeMap::new();
    for (item, level) in &candidates {
        let Some(key) = item.key() else { continue };
        let slot = (item.memory_type().map(str::to_owned), key.to_owned());
        let id = item.id();
        match narrowest.get_mut(&slot) {
            Some((best, best_id)) => {
                if *level > *best || (*level == *best && id.as_bytes() < best_id.as_bytes()) {
                    *best = *level;
                    id.clone_into(best_id);
                }
            }
            None => {
                narrowest.insert(slot, (*level, id.to_owned()));
            }
        }
    }

    let mut tiers: [Vec<I::Item>; 5] = Default::default();
    let mut shadowed = Vec::new();
    for (item, level) in candidates {
        let winner = item.key().and_then(|key| {
            let slot = (item.memory_type().map(str::to_owned), key.to_owned());
            narrowest.get(&slot).filter(|(best, _)| *best > level).map(|(_, id)| id.clone())
        });
        match winner {
            Some(by) => shadowed.push(Shadowed { item, by }),
            None => {
                let tier = tier_of(&item, level);
                tiers[tier.position()].push(item);
            }
        }
    }
    shadowed.sort_by(|a, b| a.item.id().as_bytes().cmp(b.item.id().as_bytes()));

    let mut entries = Vec::new();
    for (tier, items) in Tier::ALL.into_iter().zip(tiers) {
        entries.extend(ranker.rank_all(items).into_iter().map(|ranked| PlannedEntry { ranked, tier }));
    }
    ReadPlan { entries, shadowed }
}

fn tier_of<T: PlanItem>(item: &T, level: Level) -> Tier {
    if item.is_critical() {
        return Tier::Critical;
    }
    match level {
        Level::Task => Tier::Task,
        Level::Feature => Tier::Feature,
        Level::Unscoped if matches!(item.memory_type(), Some("project" | "architecture")) => {
            Tier::ProjectOrArchitecture
        }
        Level::Unscoped => Tier::Unscoped,
        // Only critical entries are candidates from elsewhere; kept total rather than unreachable.
        Level::Elsewhere => Tier::Critical,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct E(Option<&'static str>, bool);

    impl RankItem for E {
        fn id(&self) -> &str {
            "shared:e"
        }
        fn content(&self) -> &str {
            ""
        }
        fn updated_at(&self) -> i128 {
            0
        }
    }

    impl PlanItem for E {
        fn scope_ref(&self) -> Option<&str> {
            self.0
        }
        fn memory_type(&self) -> Option<&str> {
            None
        }
        fn key(&self) -> Option<&str> {
            None
        }
        fn is_critical(&self) -> bool {
            self.1
        }
    }

    #[test]
    fn positions_follow_all() {
        for (i, tier) in Tier::ALL.into_iter().enumerate() {
            assert_eq!(tier.position(), i);
        }
        assert!(Tier::ALL.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn levels() {
        let target = PlanTarget::Task { task: "t", feature: Some("f") };
        assert_eq!(Level::of(&E(Some("t"), false), &target), Some(Level::Task));
        assert_eq!(Level::of(&E(Some("f"), false), &target), Some(Level::Feature));
        assert_eq!(Level::of(&E(None, false), &target), Some(Level::Unscoped));
        assert_eq!(Level::of(&E(Some("project"), false), &target), Some(Level::Unscoped));
        assert_eq!(Level::of(&E(Some("x"), true), &target), Some(Level::Elsewhere));
        assert_eq!(Level::of(&E(Some("x"), false), &target), None);
        // `project` is unscoped even when a task carries that name.
        let odd = PlanTarget::Task { task: "project", feature: None };
        assert_eq!(Level::of(&E(Some("project"), false), &odd), Some(Level::Unscoped));
        // A feature plan has no task level.
        let feature = PlanTarget::Feature { feature: "f" };
        assert_eq!(Level::of(&E(Some("t"), false), &feature), None);
    }
}
