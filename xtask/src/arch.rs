//! `cargo xtask arch`: ARCHITECTURE.md's dependency graph must be the graph the manifests have.
//!
//! The graph is the block between `<!-- dependency-graph -->` and `<!-- /dependency-graph -->` in ARCHITECTURE.md:
//! one line per workspace package, `NAME → DEP, DEP, …` (or `NAME → nothing`), where the dependencies are the
//! package's normal (not dev, not build) dependencies on other workspace packages, on every target. Text after two
//! spaces and a `(` is a comment. The manifests' graph comes from `cargo metadata --no-deps`. Any difference — a
//! package missing or extra, an edge missing or extra — fails, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// The markers around the graph in ARCHITECTURE.md.
const OPEN: &str = "<!-- dependency-graph -->";
const CLOSE: &str = "<!-- /dependency-graph -->";

/// Package name → the workspace packages it depends on.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Runs the check.
pub(crate) fn run() -> Result<(), String> {
    let path = crate::root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let documented = documented_graph(&text)?;
    let actual = manifest_graph()?;
    let problems = compare(&documented, &actual);
    if problems.is_empty() {
        eprintln!("ARCHITECTURE.md's dependency graph matches the manifests ({} packages)", actual.len());
        Ok(())
    } else {
        Err(format!(
            "ARCHITECTURE.md's dependency graph differs from the manifests:\n  {}\nthe manifests say:\n{}",
            problems.join("\n  "),
            render(&actual)
        ))
    }
}

/// The graph drawn in ARCHITECTURE.md.
fn documented_graph(text: &str) -> Result<Graph, String> {
    let start = text.find(OPEN).ok_or_else(|| format!("ARCHITECTURE.md has no `{OPEN}` block"))? + OPEN.len();
    let len = text[start..]
        .find(CLOSE)
        .ok_or_else(|| format!("ARCHITECTURE.md has no `{CLOSE}` after `{OPEN}`"))?;
    parse_graph(&text[start..start + len])
}

/// Parses the lines of the graph block (code fences and blank lines are skipped).
fn parse_graph(block: &str) -> Result<Graph, String> {
    let mut graph = Graph::new();
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("```")) {
        let line = line.split_once("  (").map_or(line, |(before, _)| before).trim_end();
        let (name, deps) = line.split_once('→').ok_or_else(|| {
            format!("a graph line without `→`: `{line}` (write `NAME → DEP, DEP` or `NAME → nothing`)")
        })?;
        let name = name.trim().to_owned();
        let deps: BTreeSet<String> = match deps.trim() {
            "nothing" => BTreeSet::new(),
            deps => deps.split(',').map(|d| d.trim().to_owned()).collect(),
        };
        if deps.iter().any(String::is_empty) {
            return Err(format!("an empty dependency name in the graph line of `{name}`"));
        }
        if graph.insert(name.clone(), deps).is_some() {
            return Err(format!("`{name}` has two lines in the graph"));
        }
    }
    Ok(graph)
}

/// The graph of the manifests, from `cargo metadata`.
fn manifest_graph() -> Result<Graph, String> {
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(crate::root())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    graph_from_metadata(&metadata)
}

/// Normal dependencies between the packages `metadata` lists.
fn graph_from_metadata(metadata: &serde_json::Value) -> Result<Graph, String> {
    let packages = metadata["packages"].as_array().ok_or("cargo metadata lists no packages")?;
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut graph = Graph::new();
    for package in packages {
        let name = package["name"].as_str().ok_or("a package without a name in cargo metadata")?;
        let deps = package["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str())
            .filter(|d| names.contains(d))
            .map(str::to_owned)
            .collect();
        graph.insert(name.to_owned(), deps);
    }
    Ok(graph)
}

/// Every difference between the two graphs, in a stable order.
fn compare(documented: &Graph, actual: &Graph) -> Vec<String> {
    let mut problems = Vec::new();
    for name in actual.keys().filter(|n| !documented.contains_key(*n)) {
        problems.push(format!("`{name}` is a workspace package but has no line in the graph"));
    }
    for name in documented.keys().filter(|n| !actual.contains_key(*n)) {
        problems.push(format!("`{name}` has a line in the graph but is no workspace package"));
    }
    for (name, deps) in actual {
        let Some(drawn) = documented.get(name) else { continue };
        for dep in deps.difference(drawn) {
            problems.push(format!("`{name}` depends on `{dep}`, which the graph does not draw"));
        }
        for dep in drawn.difference(deps) {
            problems.push(format!("the graph draws `{name}` → `{dep}`, which its manifest does not have"));
        }
    }
    problems
}

/// The graph in the block's own notation.
fn render(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(name, deps)| {
            let deps = if deps.is_empty() {
                "nothing".to_owned()
            } else {
                deps.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
            };
            format!("{name} → {deps}\n")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(lines: &[(&str, &[&str])]) -> Graph {
        lines
            .iter()
            .map(|(name, deps)| ((*name).to_owned(), deps.iter().map(|d| (*d).to_owned()).collect()))
            .collect()
    }

    #[test]
    fn parses_the_notation_and_its_comments() {
        let block =
            "\n```text\nmemory-id → nothing\nmemory-entry → memory-id, memory-ranker  (stores score)\n```\n";
        assert_eq!(
            parse_graph(block).unwrap(),
            graph(&[("memory-id", &[]), ("memory-entry", &["memory-id", "memory-ranker"])])
        );
    }

    #[test]
    fn refuses_lines_it_cannot_read() {
        assert!(parse_graph("memory-id depends on nothing").unwrap_err().contains("without `→`"));
        assert!(parse_graph("a → b\na → c").unwrap_err().contains("two lines"));
        assert!(parse_graph("a → b,,c").unwrap_err().contains("empty dependency"));
    }

    #[test]
    fn names_every_difference() {
        let documented = graph(&[("a", &["b"]), ("b", &[]), ("gone", &[])]);
        let actual = graph(&[("a", &["c"]), ("b", &[]), ("c", &[])]);
        assert_eq!(
            compare(&documented, &actual),
            [
                "`c` is a workspace package but has no line in the graph",
                "`gone` has a line in the graph but is no workspace package",
                "`a` depends on `c`, which the graph does not draw",
                "the graph draws `a` → `b`, which its manifest does not have",
            ]
        );
        assert!(compare(&actual, &actual).is_empty());
    }

    #[test]
    fn reads_only_normal_workspace_dependencies_from_metadata() {
        let metadata = serde_json::json!({"packages": [
            {"name": "a", "dependencies": [
                {"name": "b", "kind": null},
                {"name": "c", "kind": "dev"},
                {"name": "serde", "kind": null}
            ]},
            {"name": "b", "dependencies": []},
            {"name": "c", "dependencies": [{"name": "b", "kind": "build"}]}
        ]});
        assert_eq!(graph_from_metadata(&metadata).unwrap(), graph(&[("a", &["b"]), ("b", &[]), ("c", &[])]));
    }

    #[test]
    fn the_rendered_graph_reads_back() {
        let g = graph(&[("a", &["b", "c"]), ("b", &[]), ("c", &["b"])]);
        assert_eq!(parse_graph(&render(&g)).unwrap(), g);
    }
}
