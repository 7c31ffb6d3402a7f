//! Reading a tool's `arguments` by hand, so that every mistake is a `USAGE` tool result and never a protocol error.
//!
//! rmcp hands `call_tool` the raw `arguments` object and validates nothing against the published schema; each tool
//! takes what it knows from the object and [`Args::finish`] refuses whatever is left (the schemas say
//! `additionalProperties: false`), so an argument such as `role` or `as` is refused, not ignored.

use alp_memory::MemoryError;
use alp_memory::memory_entry::MAX_SAFE_INTEGER;
use serde_json::{Map, Value};

/// A tool's arguments, consumed one by one.
#[derive(Debug)]
pub(crate) struct Args {
    tool: &'static str,
    map: Map<String, Value>,
    /// The names asked for so far, to say what the tool takes when something else is given.
    asked: Vec<String>,
}

impl Args {
    /// `arguments` may be absent on the wire; absent means `{}`.
    pub(crate) fn new(tool: &'static str, arguments: Option<Map<String, Value>>) -> Args {
        Args { tool, map: arguments.unwrap_or_default(), asked: Vec::new() }
    }

    fn take(&mut self, name: &str) -> Option<Value> {
        self.asked.push(name.to_owned());
        self.map.remove(name)
    }

    fn usage(&self, message: String) -> MemoryError {
        MemoryError::Usage(format!("{}: {message}", self.tool))
    }

    /// A required string (it may be empty).
    pub(crate) fn string(&mut self, name: &str) -> Result<String, MemoryError> {
        match self.take(name) {
            None => Err(self.usage(format!("missing required argument `{name}`"))),
            Some(value) => self.as_string(name, value),
        }
    }

    /// An optional string.
    pub(crate) fn optional_string(&mut self, name: &str) -> Result<Option<String>, MemoryError> {
        match self.take(name) {
            None => Ok(None),
            Some(value) => self.as_string(name, value).map(Some),
        }
    }

    fn as_string(&self, name: &str, value: Value) -> Result<String, MemoryError> {
        match value {
            Value::String(text) => Ok(text),
            other => Err(self.usage(format!("`{name}` must be a string, not {}", type_name(&other)))),
        }
    }

    /// A required integer in `0..=2^53 − 1` (the integers JSON readers keep exact).
    pub(crate) fn count(&mut self, name: &str) -> Result<u64, MemoryError> {
        match self.optional_count(name)? {
            Some(value) => Ok(value),
            None => Err(self.usage(format!("missing required argument `{name}`"))),
        }
    }

    /// An optional integer in `0..=2^53 − 1`.
    pub(crate) fn optional_count(&mut self, name: &str) -> Result<Option<u64>, MemoryError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Number(number)) => match number.as_u64() {
                Some(value) if value <= MAX_SAFE_INTEGER => Ok(Some(value)),
                _ => Err(self.usage(format!(
                    "`{name}` must be an integer between 0 and {MAX_SAFE_INTEGER}, not {number}"
                ))),
            },
            Some(other) => Err(self.usage(format!("`{name}` must be an integer, not {}", type_name(&other)))),
        }
    }

    /// An optional version: an integer in `1..=2^53 − 1`.
    pub(crate) fn optional_version(&mut self, name: &str) -> Result<Option<u64>, MemoryError> {
        match self.optional_count(name)? {
            Some(0) => {
                Err(self.usage(format!("`{name}` must be a version, from 1 to {MAX_SAFE_INTEGER}, not 0")))
            }
            other => Ok(other),
        }
    }

    /// A required version: an integer in `1..=2^53 − 1`.
    pub(crate) fn version(&mut self, name: &str) -> Result<u64, MemoryError> {
        match self.optional_version(name)? {
            Some(value) => Ok(value),
            None => Err(self.usage(format!("missing required argument `{name}`"))),
        }
    }

    /// A required integer that may be negative (the memory tool's `insert_line`: the range is checked against the
    /// file, with the reference handler's message).
    pub(crate) fn integer(&mut self, name: &str) -> Result<i64, MemoryError> {
        match self.take(name) {
            None => Err(self.usage(format!("missing required argument `{name}`"))),
            Some(Value::Number(number)) => number
                .as_i64()
                .ok_or_else(|| self.usage(format!("`{name}` must be an integer, not {number}"))),
            Some(other) => Err(self.usage(format!("`{name}` must be an integer, not {}", type_name(&other)))),
        }
    }

    /// An optional array of strings.
    pub(crate) fn optional_strings(&mut self, name: &str) -> Result<Vec<String>, MemoryError> {
        match self.take(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(text) => Ok(text),
                    other => Err(self.usage(format!(
                        "`{name}` must be an array of strings, and holds {}",
                        type_name(&other)
                    ))),
                })
                .collect(),
            Some(other) => {
                Err(self.usage(format!("`{name}` must be an array of strings, not {}", type_name(&other))))
            }
        }
    }

    /// An optional array of exactly two integers (the memory tool's `view_range`).
    pub(crate) fn optional_range(&mut self, name: &str) -> Result<Option<(i64, i64)>, MemoryError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Array(items)) => match items.as_slice() {
                [Value::Number(start), Value::Number(end)] => match (start.as_i64(), end.as_i64()) {
                    (Some(start), Some(end)) => Ok(Some((start, end))),
                    _ => Err(self.usage(format!("`{name}` must be two integers [start, end]"))),
                },
                _ => Err(self.usage(format!("`{name}` must be two integers [start, end]"))),
            },
            Some(other) => {
                Err(self
                    .usage(format!("`{name}` must be two integers [start, end], not {}", type_name(&other))))
            }
        }
    }

    /// Refuses what no getter took: an unknown argument is never ignored.
    pub(crate) fn finish(self) -> Result<(), MemoryError> {
        let mut unknown: Vec<&str> = self.map.keys().map(String::as_str).collect();
        if unknown.is_empty() {
            return Ok(());
        }
        unknown.sort_unstable();
        let quote = |names: &[&str]| -> String {
            names
                .iter()
                .map(|name| format!("`{}`", alp_memory::memory_id::shown(name)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let asked: Vec<&str> = self.asked.iter().map(String::as_str).collect();
        Err(self.usage(format!(
            "unknown argument{} {} (it takes {})",
            if unknown.len() == 1 { "" } else { "s" },
            quote(&unknown),
            if asked.is_empty() { "no arguments".to_owned() } else { quote(&asked) }
        )))
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
