//! The isolation claim of `alp serve`, tested with real OS users: the server runs as a user of its own that owns the
//! root (0700), and an agent running as another user can read no file of the root, yet its token works. Needs root
//! (CI runs the tests as root) to make the two throwaway users; otherwise the test says it is skipped.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

use crate::cli::Env;
use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::serve::{ALP, WAIT, fails, ok, token};

/// The variables that hand the agent-side helper its job (set only when the isolation test runs it).
const URL_VAR: &str = "ALP_ISOLATION_URL";
const ROOT_VAR: &str = "ALP_ISOLATION_ROOT";
const TOKEN_VAR: &str = "ALP_MEMORY_TOKEN";
/// The helper's one line of findings on stdout starts with this.
const MARK: &str = "agent-findings ";

/// A throwaway system user without a home or a login shell, deleted (with its group) when dropped, even when the
/// test fails.
struct OsUser {
    name: String,
    uid: u32,
    gid: u32,
}

impl OsUser {
    fn create(kind: &str) -> OsUser {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let name = format!("alptest-{kind}-{:x}{:05x}", std::process::id() & 0xfff, nanos & 0xfffff);
        let made = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", &name])
            .output()
            .unwrap();
        assert!(made.status.success(), "useradd {name}: {}", String::from_utf8_lossy(&made.stderr));
        // From here on the user is deleted whatever happens.
        let mut user = OsUser { name, uid: 0, gid: 0 };
        user.uid = id(&user.name, "-u");
        user.gid = id(&user.name, "-g");
        assert_ne!(user.uid, 0);
        user
    }

    /// `program ARGS…` run as this user (its uid and gid, no supplementary groups), from `/`.
    fn run(&self, program: &Path, args: &[&std::ffi::OsStr], envs: &[(&str, &str)]) -> Output {
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", "/nonexistent")
            .envs(envs.iter().copied())
            .current_dir("/")
            .stdin(Stdio::null())
            .uid(self.uid)
            .gid(self.gid);
        command.output().unwrap()
    }
}

impl Drop for OsUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

fn id(name: &str, flag: &str) -> u32 {
    let out = Command::new("id").args([flag, name]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

/// `path` itself if every user may run it (each ancestor searchable by others, the file readable and executable by
/// them), else a copy in `dir` that is.
fn runnable_by_anyone(path: &Path, dir: &Path) -> PathBuf {
    let open =
        |p: &Path, bits: u32| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & bits == bits);
    if open(path, 0o005) && path.ancestors().skip(1).all(|a| open(a, 0o001)) {
        return path.to_path_buf();
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.join(path.file_name().unwrap());
    std::fs::copy(path, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(
        dir.ancestors().skip(1).all(|a| open(a, 0o001)),
        "{} is not reachable by other users",
        dir.display()
    );
    copy
}

fn chown_r(owner: &OsUser, path: &Path) {
    let done = Command::new("chown").arg("-R").arg(format!("{}:{}", owner.uid, owner.gid)).arg(path).status();
    assert!(done.unwrap().success(), "chown -R {}", path.display());
}

/// Every file and directory under `dir` (itself included).
fn walk(dir: &Path, into: &mut Vec<PathBuf>) {
    into.push(dir.to_path_buf());
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, into);
        } else {
            into.push(path);
        }
    }
}

/// `alp --json serve --listen 127.0.0.1:0` run by `binary` as `user`: the child and its URL.
fn serve_as(user: &OsUser, binary: &Path, env: &Env) -> (Child, String) {
    let mut child = Command::new(binary)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", "/nonexistent")
        .current_dir("/")
        .arg("--root")
        .arg(env.root())
        .arg("--agents")
        .arg(env.agents())
        .args(["--json", "serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .uid(user.uid)
        .gid(user.gid)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    if line.is_empty() {
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        panic!("the server did not start as {}: {}", user.name, String::from_utf8_lossy(&output.stderr));
    }
    let listening: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    (child, listening["listening"][0].as_str().unwrap().to_owned())
}

/// Kills and reaps the server when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_agent_s_os_user_reads_no_file_of_the_root_yet_its_token_acts_as_its_role() {
    if !rustix::process::getuid().is_root() {
        eprintln!(
            "note: skipped: the isolation test needs root to create two OS users (CI runs the tests as root)"
        );
        return;
    }
    let env = Env::new();
    let server_user = OsUser::create("srv");
    let agent_user = OsUser::create("agt");

    // Set up as the operator: a token for the worker and an entry only main may read.
    let (token_id, secret) = token(&env, "worker", &["--name", "isolation"]);
    env.ok("main", &["memory", "create", "private:main:plans", "--content", "only main reads this"]);
    let token_file = env.root().join("tokens").join(format!("{token_id}.json"));
    let entry_file = env.root().join("private/main/plans.md");
    for file in [&token_file, &entry_file, &env.root().join("audit.jsonl")] {
        assert!(file.is_file(), "{}", file.display());
    }
    // The root and the definitions belong to the server's user alone; the test directory above them can be crossed
    // by anyone but not listed.
    chown_r(&server_user, &env.root());
    chown_r(&server_user, &env.agents());
    for dir in [env.root(), env.agents()] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    std::fs::set_permissions(env.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let bin_dir = tempfile::tempdir().unwrap();
    let alp = runnable_by_anyone(Path::new(ALP), bin_dir.path());
    let helper = runnable_by_anyone(&std::env::current_exe().unwrap(), bin_dir.path());

    let (child, url) = serve_as(&server_user, &alp, &env);
    let mut server = Reaped(child);

    // As the agent's user: no file of the root can be read or listed, whichever tool asks.
    let root = env.root();
    let denied = |program: &str, path: &Path| {
        let out = agent_user.run(Path::new(program), &[path.as_os_str()], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{program} {} as the agent: {out:?}", path.display());
        assert!(out.stdout.is_empty(), "{program} {}: {out:?}", path.display());
        assert!(stderr.contains("Permission denied"), "{program} {}: {stderr}", path.display());
    };
    denied("/bin/ls", &root);
    denied("/bin/ls", &root.join("tokens"));
    denied("/bin/cat", &root.join("audit.jsonl"));
    denied("/bin/cat", &entry_file);
    denied("/bin/cat", &token_file);
    denied("/bin/ls", &env.agents());
    // Nor can it open the root with alp itself and name another role.
    let direct = agent_user.run(
        &alp,
        &[
            "--root".as_ref(),
            root.as_os_str(),
            "--agents".as_ref(),
            env.agents().as_os_str(),
            "--json".as_ref(),
            "--as".as_ref(),
            "main".as_ref(),
            "memory".as_ref(),
            "get".as_ref(),
            "private:main:plans".as_ref(),
        ],
        &[],
    );
    assert_ne!(direct.status.code(), Some(0), "{direct:?}");
    assert!(direct.stdout.is_empty(), "{direct:?}");
    assert!(!String::from_utf8_lossy(&direct.stderr).contains("only main"), "{direct:?}");

    // Yet the token works, from a process running as the agent's user: rmcp's HTTP client in this test binary.
    let records_before = env.audit_lines().len();
    let found = agent_user.run(
        &helper,
        &[
            "--exact".as_ref(),
            "isolation::agent_side".as_ref(),
            "--ignored".as_ref(),
            "--nocapture".as_ref(),
            "--test-threads=1".as_ref(),
        ],
        &[(URL_VAR, &url), (TOKEN_VAR, &secret), (ROOT_VAR, root.to_str().unwrap())],
    );
    let stdout = String::from_utf8_lossy(&found.stdout);
    assert!(found.status.success(), "the agent-side client: {found:?}");
    let findings: Value = stdout
        .lines()
        .find_map(|line| line.split_once(MARK).map(|(_, findings)| findings))
        .map(|line| serde_json::from_str(line).unwrap())
        .unwrap_or_else(|| panic!("no findings from the agent's side: {found:?}"));
    assert_eq!(
        findings,
        json!({
            "uid": agent_user.uid,
            "created": { "id": "project:alp:log:iso", "version": 1 },
            "got": "written through the token",
            "private": ["UnauthorizedMemoryAccessError", "PRIVATE_MEMORY_DENIED"],
            "readRoot": "PermissionDenied",
            "readLog": "PermissionDenied",
            "readEntry": "PermissionDenied",
        })
    );

    // Stopped, the server leaves every record as the worker via the token, and every file of the root its user's.
    rustix::process::kill_process(rustix::process::Pid::from_child(&server.0), rustix::process::Signal::TERM)
        .unwrap();
    assert_eq!(server.0.wait().unwrap().code(), Some(0));
    let records = env.audit_lines();
    let served: Vec<(&str, &str, &str, &str)> = records[records_before..]
        .iter()
        .map(|r| {
            (
                r["actor"].as_str().unwrap(),
                r["operation"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
                r["via"].as_str().unwrap(),
            )
        })
        .collect();
    let via = token_id.as_str();
    assert_eq!(
        served,
        [
            ("worker", "create", "allowed", via),
            ("worker", "get", "allowed", via),
            ("worker", "get", "denied", via)
        ]
    );
    let mut paths = Vec::new();
    walk(&root, &mut paths);
    let created = root.join("projects/alp/log/iso.md");
    assert!(paths.contains(&created), "{paths:?}");
    for path in &paths {
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (server_user.uid, server_user.gid), "{}", path.display());
    }
    assert_eq!(std::fs::metadata(&root).unwrap().permissions().mode() & 0o777, 0o700);
    let verified = env.run(&["--json", "audit", "verify"], None);
    assert_eq!((verified.status, &verified.json()["ok"]), (0, &json!(true)), "{verified:?}");
}

/// The agent's side of the isolation test, run by it as the agent's OS user (not a test on its own: without the
/// isolation test's variables it does nothing). Prints one line of findings.
#[tokio::test]
#[ignore = "run by the isolation test as the agent's OS user"]
async fn agent_side() {
    let (Ok(url), Ok(secret), Ok(root)) =
        (std::env::var(URL_VAR), std::env::var(TOKEN_VAR), std::env::var(ROOT_VAR))
    else {
        eprintln!("note: nothing to do: this runs only inside the isolation test");
        return;
    };
    let root = PathBuf::from(root);
    let kind = |result: std::io::Result<()>| match result {
        Ok(()) => "readable".to_owned(),
        Err(e) => format!("{:?}", e.kind()),
    };
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(secret);
    let info =
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("alp-isolation", "0.0.0"));
    let client = tokio::time::timeout(WAIT, info.serve(StreamableHttpClientTransport::from_config(config)))
        .await
        .expect("in time")
        .expect("initialize");
    let created = ok(
        &client,
        "memory_create",
        json!({ "id": "project:alp:log:iso", "content": "written through the token" }),
    )
    .await;
    let got = ok(&client, "memory_get", json!({ "id": "project:alp:log:iso" })).await;
    let private = fails(&client, "memory_get", json!({ "id": "private:main:plans" })).await;
    let _ = client.cancel().await;
    let findings = json!({
        "uid": rustix::process::getuid().as_raw(),
        "created": { "id": created["id"], "version": created["version"] },
        "got": got["content"],
        "private": [private["kind"], private["code"]],
        "readRoot": kind(std::fs::read_dir(&root).map(drop)),
        "readLog": kind(std::fs::read(root.join("audit.jsonl")).map(drop)),
        "readEntry": kind(std::fs::read(root.join("private/main/plans.md")).map(drop)),
    });
    println!("{MARK}{findings}");
}
