//! Agent definitions on disk, each test in its own temporary directory.

use memory_policy::{
    AgentDefinitionProblem, InvalidRoleReason, Operation, list_roles, load_agent, load_agents,
};
use tempfile::TempDir;

fn agents(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

const WORKER: &str = "\
role: worker            # must equal the file name
reportsTo: main         # optional; grants nothing
memory:
  read:  [shared, \"project:alp\", \"private:worker\"]
  write: [\"project:alp:log:*\", \"private:worker\"]
";

fn strings(grants: &[memory_policy::Grant]) -> Vec<&str> {
    grants.iter().map(memory_policy::Grant::as_str).collect()
}

#[test]
fn a_valid_definition() {
    let dir = agents(&[("worker.yaml", WORKER)]);
    let worker = load_agent(dir.path(), "worker").unwrap();
    assert_eq!(worker.role().as_str(), "worker");
    assert_eq!(worker.reports_to().map(|r| r.as_str()), Some("main"));
    assert_eq!(strings(worker.grants(Operation::Read)), ["shared", "project:alp", "private:worker"]);
    assert_eq!(strings(worker.grants(Operation::Write)), ["project:alp:log:*", "private:worker"]);
    assert!(worker.warnings().is_empty());
}

#[test]
fn optional_parts_and_other_keys() {
    let dir = agents(&[
        ("bare.yaml", "role: bare\n"),
        ("nulls.yaml", "role: nulls\nmemory:\n  read: null\n"),
        ("extra.yaml", "role: extra\ncapabilities: [shell]\nmemory:\n  read: [shared]\n"),
    ]);
    let bare = load_agent(dir.path(), "bare").unwrap();
    assert!(bare.grants(Operation::Read).is_empty() && bare.reports_to().is_none());
    assert!(load_agent(dir.path(), "nulls").unwrap().grants(Operation::Read).is_empty());
    assert_eq!(strings(load_agent(dir.path(), "extra").unwrap().grants(Operation::Read)), ["shared"]);
}

#[test]
fn unparsable_yaml() {
    let dir = agents(&[("worker.yaml", "role: worker\nmemory: [unclosed\n")]);
    let err = load_agent(dir.path(), "worker").unwrap_err();
    assert_eq!(err.problem().code(), "malformed");
    assert_eq!(err.file(), dir.path().join("worker.yaml"));
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("agent definition `{}` is malformed: ", err.file().display())),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");
}

#[test]
fn wrong_shapes_are_malformed() {
    let cases = [
        "",
        "memory:\n  read: [shared]\n",
        "role: worker\nmemory:\n  read: shared\n",
        "role: worker\nmemory:\n  read: [[shared]]\n",
        "role: worker\nreportsTo: ../main\n",
        "role: worker\nrole: worker\n",
    ];
    for text in cases {
        let dir = agents(&[("worker.yaml", text)]);
        let err = load_agent(dir.path(), "worker").unwrap_err();
        assert_eq!(err.problem().code(), "malformed", "{text:?}: {err}");
    }
}

#[test]
fn an_invalid_grant_names_the_file_and_the_grant() {
    let dir = agents(&[("worker.yaml", "role: worker\nmemory:\n  read: [shared, \"project:*:goals\"]\n")]);
    let err = load_agent(dir.path(), "worker").unwrap_err();
    assert_eq!(err.problem().code(), "invalid_grant");
    assert_eq!(err.grant(), Some("project:*:goals"));
    assert_eq!(err.role(), "worker");
    let file = dir.path().join("worker.yaml");
    assert_eq!(err.file(), file);
    assert_eq!(
        err.to_string(),
        format!(
            "agent definition `{}`: invalid grant `project:*:goals`: segment 2 holds a `*`, which may only be the \
             whole last segment",
            file.display()
        )
    );
    let dir = agents(&[("worker.yaml", "role: worker\nmemory:\n  write: [\"shared:..\"]\n")]);
    let err = load_agent(dir.path(), "worker").unwrap_err();
    assert_eq!((err.problem().code(), err.grant()), ("invalid_grant", Some("shared:..")));
}

#[test]
fn role_must_match_the_file_name() {
    let dir = agents(&[("worker.yaml", "role: main\nmemory:\n  read: [\"private:*\"]\n")]);
    let err = load_agent(dir.path(), "worker").unwrap_err();
    assert_eq!(err.problem(), &AgentDefinitionProblem::RoleMismatch { declared: "main".to_owned() });
    assert_eq!(
        err.to_string(),
        format!("agent definition `{}` declares role `main` but is named for `worker`", err.file().display())
    );
}

#[test]
fn unknown_role() {
    let dir = agents(&[("worker.yaml", WORKER)]);
    let err = load_agent(dir.path(), "reviewer").unwrap_err();
    assert_eq!(err.problem(), &AgentDefinitionProblem::UnknownRole);
    assert_eq!(err.role(), "reviewer");
    assert_eq!(err.file(), dir.path().join("reviewer.yaml"));
    assert!(err.to_string().starts_with("unknown role `reviewer`: no agent definition at `"), "{err}");
}

#[test]
fn role_names_are_checked_before_any_path_is_used() {
    // A definition outside the agents directory that a traversing role name would reach.
    let root = agents(&[("secret.yaml", "role: secret\nmemory:\n  read: [shared]\n")]);
    let dir = root.path().join("agents");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("worker.yaml"), WORKER).unwrap();
    let outside = root.path().join("secret").display().to_string();
    for role in ["../secret", "..", ".", "", "a/b", "a\\b", &outside, "worker\0", "a:b", "*"] {
        let err = load_agent(&dir, role).unwrap_err();
        assert_eq!(err.problem().code(), "invalid_role", "{role:?}");
        assert_eq!(err.file(), dir.as_path(), "{role:?}: no file path is built from an invalid role");
        assert!(!err.to_string().contains('\n'));
    }
    let err = load_agent(&dir, "../secret").unwrap_err();
    let AgentDefinitionProblem::InvalidRole(invalid) = err.problem() else { panic!("{err}") };
    assert_eq!(invalid.reason(), InvalidRoleReason::Segment(memory_id::SegmentProblem::Separator));
    assert_eq!(err.to_string(), "agent definition for invalid role `../secret`: separator");
}

#[test]
fn unknown_keys_inside_memory_are_refused() {
    let dir = agents(&[("worker.yaml", "role: worker\nmemory:\n  reed: [shared]\n")]);
    let err = load_agent(dir.path(), "worker").unwrap_err();
    assert_eq!(err.problem().code(), "malformed");
    assert!(err.to_string().contains("reed"), "{err}");
}

#[test]
fn a_grant_on_another_roles_private_memory_loads_but_is_never_effective() {
    let text = "role: worker\nmemory:\n  read: [shared, \"private:main\", \"private:main:*\"]\n  write: [\"private:main:notes\"]\n";
    let dir = agents(&[("worker.yaml", text)]);
    let worker = load_agent(dir.path(), "worker").unwrap();
    let never: Vec<(Operation, &str)> =
        worker.never_effective().into_iter().map(|(op, g)| (op, g.as_str())).collect();
    assert_eq!(
        never,
        [
            (Operation::Read, "private:main"),
            (Operation::Read, "private:main:*"),
            (Operation::Write, "private:main:notes")
        ]
    );
    assert_eq!(
        worker.warnings(),
        [
            "read grant `private:main` names another role's private memory and is never effective",
            "read grant `private:main:*` names another role's private memory and is never effective",
            "write grant `private:main:notes` names another role's private memory and is never effective",
        ]
    );
    assert_eq!(strings(&worker.effective_grants(Operation::Read)), ["shared"]);
}

#[test]
fn listing_roles() {
    let dir = agents(&[
        ("worker.yaml", WORKER),
        ("main.yaml", "role: main\n"),
        ("notes.txt", "not a definition"),
        (".yaml", "no stem"),
        ("worker.yml", "other extension"),
    ]);
    let roles: Vec<String> = list_roles(dir.path()).unwrap().iter().map(|r| r.as_str().to_owned()).collect();
    assert_eq!(roles, ["main", "worker"]);
    let actors = load_agents(dir.path()).unwrap();
    assert_eq!(actors.iter().map(|a| a.role().as_str()).collect::<Vec<_>>(), ["main", "worker"]);
    assert!(list_roles(&dir.path().join("missing")).unwrap().is_empty());
    assert!(load_agents(&dir.path().join("missing")).unwrap().is_empty());
}

#[test]
fn load_agents_stops_at_the_first_bad_definition() {
    let dir = agents(&[("a.yaml", "role: a\n"), ("b.yaml", "role: c\n"), ("d.yaml", "role: [\n")]);
    let err = load_agents(dir.path()).unwrap_err();
    assert_eq!((err.role(), err.problem().code()), ("b", "role_mismatch"));
}

/// Whoever can write into the agents directory may be hostile: a definition costs bounded time and memory.
mod hostile {
    use std::time::{Duration, Instant};

    use super::*;

    fn problem(dir: &std::path::Path, role: &str) -> (String, String) {
        let started = Instant::now();
        let err = load_agent(dir, role).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "{role}: {:?}", started.elapsed());
        (err.problem().code().to_owned(), err.to_string())
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = std::ffi::CString::new(dir.path().join("worker.yaml").to_str().unwrap()).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            fifo.as_c_str(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR,
            0,
        )
        .unwrap();
        let (code, message) = problem(dir.path(), "worker");
        assert_eq!(code, "unreadable");
        assert!(message.contains("a FIFO, socket or device, not a regular file"), "{message}");
    }

    #[test]
    fn a_symlink_to_dev_zero_is_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("worker.yaml")).unwrap();
        let (code, message) = problem(dir.path(), "worker");
        assert_eq!(code, "unreadable");
        assert!(message.contains("a symbolic link"), "{message}");
    }

    #[test]
    fn a_definition_over_64_kib_is_refused() {
        let padding = format!("# {}\n", "x".repeat(70 * 1024));
        let dir = agents(&[("worker.yaml", &format!("{WORKER}{padding}"))]);
        let (code, message) = problem(dir.path(), "worker");
        assert_eq!(code, "unreadable");
        assert!(message.contains("larger than 64 KiB"), "{message}");
        assert_eq!(memory_policy::MAX_DEFINITION_BYTES, 64 * 1024);
    }

    #[test]
    fn aliases_are_refused_before_expansion() {
        let mut bomb =
            String::from("role: worker\nx: &a [\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"]\ny: [");
        while bomb.len() < 25_000 {
            bomb.push_str("*a, ");
        }
        bomb.push_str("*a]\nmemory:\n  read: [shared]\n");
        let dir =
            agents(&[("worker.yaml", &bomb), ("main.yaml", "role: main\nmemory: &m\n  read: [shared]\n")]);
        assert_eq!(problem(dir.path(), "worker").0, "malformed");
        // A lone anchor is harmless.
        assert!(load_agent(dir.path(), "main").is_ok());
        let dir = agents(&[("main.yaml", "role: &r main\nreportsTo: *r\n")]);
        assert_eq!(problem(dir.path(), "main").0, "malformed");
    }

    #[test]
    fn nesting_deeper_than_32_is_refused() {
        let deep = |depth: usize| format!("role: worker\nx: {}{}\n", "[".repeat(depth), "]".repeat(depth));
        let dir = agents(&[("worker.yaml", &deep(30)), ("main.yaml", &deep(40).replace("worker", "main"))]);
        assert!(load_agent(dir.path(), "worker").is_ok());
        assert_eq!(problem(dir.path(), "main").0, "malformed");
        // 60 KiB of brackets: refused as it is met, in linear time.
        let dir = agents(&[("worker.yaml", &deep(30_000))]);
        assert_eq!(problem(dir.path(), "worker").0, "malformed");
    }

    #[test]
    fn a_role_with_a_pattern_character_cannot_be_defined() {
        let dir = agents(&[("a[b].yaml", "role: a[b]\n")]);
        let (code, message) = problem(dir.path(), "a[b]");
        assert_eq!(code, "invalid_role");
        assert!(message.contains("pattern_char"), "{message}");
        let dir = agents(&[("ok.yaml", "role: ok\nreportsTo: \"x)\"\n")]);
        assert_eq!(problem(dir.path(), "ok").0, "malformed");
    }
}

/// What a definition file can become between two loads, in the property below.
#[derive(Debug, Clone)]
enum Edit {
    /// Writes one of [`TEXTS`] (valid, another valid, one that grants less, malformed, mismatched) in place.
    Write(usize),
    /// Replaces the file by a new one (a new inode) holding one of [`TEXTS`].
    Replace(usize),
    Remove,
    /// A symbolic link to a valid definition where the file was.
    Symlink,
    /// Loads without changing anything.
    Nothing,
}

const TEXTS: [&str; 6] = [
    WORKER,
    "role: worker\nmemory:\n  read: [shared]\n",
    "role: worker\nmemory:\n  read: [shared]\n  write: [shared]\n",
    "role: worker\nmemory: [oops\n",
    "role: main\n",
    "role: worker\nmemory:\n  read: ['project:*']\n",
];

fn edits() -> impl proptest::strategy::Strategy<Value = Vec<(u8, Edit)>> {
    use proptest::prelude::*;
    let edit = prop_oneof![
        (0..TEXTS.len()).prop_map(Edit::Write),
        (0..TEXTS.len()).prop_map(Edit::Replace),
        Just(Edit::Remove),
        Just(Edit::Symlink),
        Just(Edit::Nothing),
    ];
    proptest::collection::vec((0u8..2, edit), 1..24)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// A [`DefinitionCache`] answers exactly what [`load_agent`] answers at the same moment, whatever was done to
    /// the files between two loads: every edit, removal or replacement is seen at the next load.
    #[test]
    fn the_definition_cache_answers_as_load_agent(edits in edits()) {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere.yaml");
        std::fs::write(&target, TEXTS[1]).unwrap();
        let cache = memory_policy::DefinitionCache::new();
        for (which, edit) in edits {
            let role = ["worker", "other"][usize::from(which)];
            let file = dir.path().join(format!("{role}.yaml"));
            // Each text names `worker`; the file of `other` holding it is a role mismatch.
            match edit {
                Edit::Write(i) => std::fs::write(&file, TEXTS[i]).unwrap(),
                Edit::Replace(i) => {
                    let fresh = dir.path().join("fresh");
                    std::fs::write(&fresh, TEXTS[i]).unwrap();
                    std::fs::rename(&fresh, &file).unwrap();
                }
                Edit::Remove => {
                    let _ = std::fs::remove_file(&file);
                }
                Edit::Symlink => {
                    let _ = std::fs::remove_file(&file);
                    std::os::unix::fs::symlink(&target, &file).unwrap();
                }
                Edit::Nothing => {}
            }
            for _ in 0..2 {
                proptest::prop_assert_eq!(cache.load(dir.path(), role), load_agent(dir.path(), role));
            }
        }
    }
}
