//! An entry type for the tests, implementing both traits the crate asks for.

use memory_context::PlanItem;
use memory_ranker::RankItem;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) content: String,
    pub(crate) updated_at: i128,
    pub(crate) memory_type: Option<String>,
    pub(crate) key: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) critical: bool,
}

impl Entry {
    pub(crate) fn new(id: &str, content: &str, updated_at: i128) -> Entry {
        Entry { id: id.to_owned(), content: content.to_owned(), updated_at, ..Entry::default() }
    }

    pub(crate) fn typed(mut self, memory_type: &str) -> Entry {
        self.memory_type = Some(memory_type.to_owned());
        self
    }

    pub(crate) fn key(mut self, key: &str) -> Entry {
        self.key = Some(key.to_owned());
        self
    }

    pub(crate) fn scope(mut self, scope: &str) -> Entry {
        self.scope = Some(scope.to_owned());
        self
    }

    pub(crate) fn critical(mut self) -> Entry {
        self.critical = true;
        self
    }
}

impl RankItem for Entry {
    fn id(&self) -> &str {
        &self.id
    }

    fn content(&self) -> &str {
        &self.content
    }

    fn updated_at(&self) -> i128 {
        self.updated_at
    }
}

impl PlanItem for Entry {
    fn scope_ref(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    fn memory_type(&self) -> Option<&str> {
        self.memory_type.as_deref()
    }

    fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    fn is_critical(&self) -> bool {
        self.critical
    }
}
