//! `alp inspect` end to end: the real binary, its pages loaded by a real headless browser (Debian's `chromium`,
//! with and without JavaScript), screenshots kept under the target directory, the DOM checked against `alp agent
//! show` and against hostile content, requests without the key refused, and the audit records the pages wrote.
//!
//! Without `chromium` the browser checks are skipped with a notice, except under CI (`CI` set), where they fail.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli::Env;
use crate::serve::{WAIT, header, parse_response};

/// A running `alp --json inspect`.
struct Inspect {
    child: Child,
    /// `http://127.0.0.1:PORT/KEY/`.
    url: String,
    addr: String,
    key: String,
}

impl Inspect {
    fn start(env: &Env, place: &[std::ffi::OsString]) -> Inspect {
        let mut command = env.command();
        command.args(place).arg("--agents").arg(env.agents()).args(["--json", "inspect"]);
        let (child, printed) = crate::serve::announced(&mut command);
        let keys: Vec<&str> = printed.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["url"]);
        let url = printed["url"].as_str().unwrap().to_owned();
        let rest =
            url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("loopback by default: {url}"));
        let (port, path) = rest.split_once('/').unwrap();
        assert_ne!(port, "0", "the real port");
        let key = path.strip_suffix('/').unwrap().to_owned();
        assert!(key.len() >= 43 && !key.contains('/'), "a key of at least 256 bits of base64: {key}");
        Inspect { child, addr: format!("127.0.0.1:{port}"), url, key }
    }

    fn on_root(env: &Env) -> Inspect {
        Inspect::start(env, &["--root".into(), env.root().into_os_string()])
    }

    /// A plain HTTP/1.1 GET of `target` as is: (status, lowercase headers, body).
    fn get(&self, target: &str) -> (u16, Vec<(String, String)>, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        write!(stream, "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.addr).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        parse_response(&answer)
    }

    /// A page below the key, which must answer 200 with the strict headers.
    fn page(&self, page: &str) -> String {
        let (status, headers, body) = self.get(&format!("/{}/{page}", self.key));
        assert_eq!(status, 200, "{page}: {body}");
        assert_strict(&headers);
        assert_eq!(header(&headers, "content-type"), Some("text/html; charset=utf-8"));
        body
    }
}

impl Drop for Inspect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The headers every answer carries: no script, nothing from elsewhere, no referrer, no caching, no sniffing.
fn assert_strict(headers: &[(String, String)]) {
    assert_eq!(
        header(headers, "content-security-policy"),
        Some(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors \
             'none'"
        )
    );
    assert_eq!(header(headers, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(headers, "referrer-policy"), Some("no-referrer"));
    assert_eq!(header(headers, "cache-control"), Some("no-store"));
}

/// Debian's `chromium`, or `None` (with a notice) when it is not installed; under CI its absence fails the test.
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("chromium"))
        .find(|path| path.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is not installed: .ci/run installs it (apt-get install chromium)"
        );
        eprintln!(
            "note: chromium is not installed; skipping the alp inspect browser checks (apt-get install chromium)"
        );
    }
    found
}

/// Where the screenshots are kept: under the target directory, as artefacts of the test run.
fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("inspect-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A headless chromium run on `url` with `args` (`--dump-dom`, `--screenshot=…`), in its own profile, bounded in
/// time; its stdout.
fn browse(browser: &Path, env: &Env, args: &[String], url: &str, script: bool) -> String {
    let profile = tempfile::tempdir_in(env.dir.path()).unwrap();
    if !script {
        // JavaScript off for every page, as a user's content setting. (`--blink-settings=scriptEnabled=false`
        // stops headless chromium's own --dump-dom and --screenshot too, which run script in the page.)
        std::fs::create_dir(profile.path().join("Default")).unwrap();
        std::fs::write(
            profile.path().join("Default/Preferences"),
            r#"{"profile":{"default_content_setting_values":{"javascript":2}}}"#,
        )
        .unwrap();
    }
    let mut command = Command::new(browser);
    command
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .env("HOME", env.home())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reading = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish with {url} in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reading.join().unwrap()
}

fn dump(browser: &Path, env: &Env, url: &str, script: bool) -> String {
    let dom = browse(browser, env, &["--dump-dom".to_owned()], url, script);
    assert!(dom.contains("</html>"), "a whole page from {url}: {dom}");
    dom
}

fn screenshot(browser: &Path, env: &Env, url: &str, name: &str, height: u32) -> PathBuf {
    let path = screenshots().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&path);
    let args = [format!("--screenshot={}", path.display()), format!("--window-size=1280,{height}")];
    browse(browser, env, &args, url, false);
    // Every page is drawn without JavaScript.
    let png = std::fs::read(&path).unwrap_or_else(|e| panic!("no screenshot {}: {e}", path.display()));
    assert!(png.starts_with(b"\x89PNG") && png.len() > 5_000, "{} is a real picture", path.display());
    path
}

/// The `<title>` of a dumped DOM.
fn title(dom: &str) -> &str {
    let start = dom.find("<title>").unwrap() + "<title>".len();
    &dom[start..start + dom[start..].find("</title>").unwrap()]
}

/// The value of attribute `name` in the tag text `tag`.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[start..start + tag[start..].find('"')?])
}

/// Every matrix cell of a dumped DOM: (role, scope root) → its word.
fn cells(dom: &str) -> std::collections::BTreeMap<(String, String), String> {
    dom.split("<td ")
        .skip(1)
        .map(|rest| &rest[..rest.find('>').unwrap()])
        .filter_map(|tag| {
            let role = attribute(tag, "data-role")?;
            Some((
                (role.to_owned(), attribute(tag, "data-root")?.to_owned()),
                attribute(tag, "data-cell")?.to_owned(),
            ))
        })
        .collect()
}

/// How a grant list covers a scope root, by a model of the grant rules written from `docs/CLI.md` (not the policy
/// crate's code): `Some(true)` wholly, `Some(false)` in part, `None` not at all.
fn covered(grants: &[Value], role: &str, root: &str) -> Option<bool> {
    let root: Vec<&str> = root.split(':').collect();
    if root[0] == "private" && root[1] != role {
        return None;
    }
    let mut best = None;
    for grant in grants.iter().map(|g| g.as_str().unwrap()) {
        let narrowed = format!("private:{role}");
        let grant = match grant {
            "private" | "private:*" => narrowed.as_str(),
            other => other,
        };
        let base: Vec<&str> = grant.strip_suffix(":*").unwrap_or(grant).split(':').collect();
        if base[0] == "private" && base[1] != role {
            continue;
        }
        if base.len() <= root.len() && root[..base.len()] == base[..] {
            best = Some(true);
        } else if base.len() > root.len() && base[..root.len()] == root[..] && best.is_none() {
            best = Some(false);
        }
    }
    best
}

fn expected_cell(agent: &Value, root: &str) -> &'static str {
    let role = agent["role"].as_str().unwrap();
    let read = covered(agent["memory"]["read"].as_array().unwrap(), role, root);
    let write = covered(agent["memory"]["write"].as_array().unwrap(), role, root);
    match (read, write) {
        (Some(true), Some(true)) => "read+write",
        (Some(true), None) => "read",
        (None, Some(true)) => "write",
        (None, None) => "",
        _ => "partial",
    }
}

const HOSTILE: &str = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">\n</pre><b>bold?</b>";

/// The example team, a role that reads part of `shared` and writes nothing, and entries in five scope roots.
fn team(env: &Env) {
    std::fs::write(
        env.agents().join("qa.yaml"),
        "role: qa\nmemory:\n  read: [\"shared:team\", \"private:*\"]\n  write: [\"shared:team:notes:*\"]\n",
    )
    .unwrap();
    env.ok("main", &["memory", "create", "shared:team:onboarding", "--content", "Read the README first."]);
    env.ok("main", &["memory", "create", "project:alp:goals", "--content", "ship\nthe store\ntest it"]);
    env.ok(
        "main",
        &[
            "memory",
            "update",
            "project:alp:goals",
            "--expected-version",
            "1",
            "--content",
            "ship\nthe store\ndocs\ntest it",
        ],
    );
    env.ok("main", &["memory", "create", "project:alp:hostile", "--content", HOSTILE]);
    env.ok("worker", &["memory", "create", "private:worker:draft", "--content", "half an idea"]);
    env.ok("main", &["memory", "create", "private:main:plans", "--content", "the main plan"]);
    env.ok("main", &["memory", "create", "project:web:todo", "--content", "a page"]);
    env.ok("worker", &["memory", "get", "project:alp:goals"]);
}

#[test]
fn the_pages_in_a_real_browser_match_the_definitions_and_never_run_memory() {
    let env = Env::new();
    team(&env);
    let inspect = Inspect::on_root(&env);
    let browser = chromium();

    // Without the key, or with a wrong one, nothing is read: 403 and no record.
    let before = env.audit_lines().len();
    let mut wrong = inspect.key.clone();
    let last = wrong.pop().unwrap();
    wrong.push(if last == 'A' { 'B' } else { 'A' });
    for target in [
        "/".to_owned(),
        "/matrix".to_owned(),
        "/entry?id=project:alp:goals".to_owned(),
        format!("/{wrong}/entry?id=project:alp:goals"),
        format!("/{}/entry?id=project:alp:goals", &inspect.key[..inspect.key.len() - 1]),
        format!("/entry?key={}&id=project:alp:goals", inspect.key),
        "/favicon.ico".to_owned(),
    ] {
        let (status, headers, body) = inspect.get(&target);
        assert_eq!(status, 403, "{target}: {body}");
        assert_strict(&headers);
        assert!(!body.contains("ship") && !body.contains("goals"), "{body}");
    }
    assert_eq!(env.audit_lines().len(), before, "a refused request reads nothing and records nothing");

    // The pages that read memory write one record each, actor "", the receipt of what they show; the trail and a
    // missing page write none.
    let overview = inspect.page("");
    assert!(overview.contains("intact: ") && overview.contains("project:alp"), "{overview}");
    let goals = inspect.page("entry?id=project:alp:goals");
    assert!(goals.contains("docs") && goals.contains("worker"), "{goals}");
    let trail = inspect.page("audit?actor=worker&door=get");
    assert_eq!(trail.matches("<tr data-seq=").count(), 1, "{trail}");
    let (status, _, _) = inspect.get(&format!("/{}/nothing-here", inspect.key));
    assert_eq!(status, 404);
    let (status, _, body) = inspect.get(&format!("/{}/audit?outcome=maybe", inspect.key));
    assert_eq!(status, 400, "a bad filter is refused as `audit show` refuses it: {body}");
    assert!(body.contains("USAGE") && body.contains("`maybe` is not an outcome"), "{body}");
    let records: Vec<Value> = env.audit_lines()[before..].to_vec();
    let strip = |record: &Value| {
        let mut record = record.clone();
        let object = record.as_object_mut().unwrap();
        for volatile in ["seq", "timestamp", "prevHash", "hash"] {
            assert!(object.remove(volatile).is_some());
        }
        record
    };
    assert_eq!(
        records.iter().map(strip).collect::<Vec<_>>(),
        [
            json!({"actor":"","operation":"search","door":"list","id":"","outcome":"allowed","code":null}),
            json!({"actor":"","operation":"get","door":"history","id":"project:alp:goals","outcome":"allowed",
                   "code":null,"shown":["project:alp:goals@2","project:alp:goals@1"]}),
        ]
    );
    let keys: Vec<&str> = records[1].as_object().unwrap().keys().map(String::as_str).collect();
    let expected: Vec<&str> = crate::serve::RECORD_KEYS.into_iter().filter(|key| *key != "via").collect();
    assert_eq!(keys, expected, "the log's order, and no `via`: no token was involved");
    let verified = env.run(&["--json", "audit", "verify"], None);
    assert_eq!(verified.json()["ok"], json!(true), "{verified:?}");

    let Some(browser) = browser else { return };
    let url = |page: &str| format!("{}{page}", inspect.url);

    // The control: this browser runs a page's script when JavaScript is on, and not when it is off, so a title
    // left unchanged below means the script was never run, not that the browser runs none.
    let scripted = "data:text/html,<title>before</title><script>document.title='ran'</script>";
    assert_eq!(title(&dump(&browser, &env, scripted, true)), "ran");
    assert_eq!(title(&dump(&browser, &env, scripted, false)), "before");

    // The grants matrix agrees with `alp agent show` for every role and every scope root that holds entries.
    let matrix = dump(&browser, &env, &url("matrix"), true);
    assert_eq!(title(&matrix), "alp inspect · grants matrix");
    let found = cells(&matrix);
    let roots = ["private:main", "private:worker", "project:alp", "project:web", "shared"];
    let roles = env.run(&["--json", "agent", "list"], None).json();
    let mut expected = std::collections::BTreeMap::new();
    for role in roles["roles"].as_array().unwrap() {
        let role = role["role"].as_str().unwrap();
        let agent = env.run(&["--json", "agent", "show", role], None).json();
        for root in roots {
            expected.insert((role.to_owned(), root.to_owned()), expected_cell(&agent, root).to_owned());
        }
    }
    assert_eq!(found, expected);
    // What the model says, spelled out for the cases a reviewer looks for first.
    let cell = |role: &str, root: &str| found[&(role.to_owned(), root.to_owned())].as_str();
    assert_eq!(cell("main", "shared"), "read+write");
    assert_eq!(cell("worker", "project:alp"), "partial", "reads all of it, writes only its log");
    assert_eq!(cell("reviewer", "project:alp"), "read");
    assert_eq!(cell("qa", "shared"), "partial");
    assert_eq!(
        cell("reviewer", "private:worker"),
        "",
        "a grant on another role's private memory never counts"
    );
    assert_eq!(cell("qa", "private:worker"), "", "private:* never reaches another role");
    assert_eq!(cell("main", "private:worker"), "");
    assert!(matrix.contains("read part: shared:team") && matrix.contains("write part: shared:team:notes:*"));

    // Hostile content shows as text, and nothing of it runs: with JavaScript on, the title is the page's own and
    // no element was injected.
    let hostile = dump(&browser, &env, &url("entry?id=project:alp:hostile"), true);
    assert_eq!(title(&hostile), "alp inspect · project:alp:hostile");
    assert!(
        !hostile.contains("<script") && !hostile.contains("<img") && !hostile.contains("<b>"),
        "{hostile}"
    );
    assert!(
        hostile.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x onerror=\"document.title='pwned'\"&gt;"),
        "{hostile}"
    );
    assert!(hostile.contains("&lt;/pre&gt;&lt;b&gt;bold?&lt;/b&gt;"), "{hostile}");

    // Every page works with JavaScript off: the filter form is a plain GET form, and paging is links.
    let overview = dump(&browser, &env, &url(""), false);
    assert_eq!(title(&overview), "alp inspect · overview");
    for role in ["main", "qa", "reviewer", "worker"] {
        assert!(overview.contains(&format!("<code>{role}</code>")), "{role}");
    }
    let trail = dump(&browser, &env, &url("audit?limit=3"), false);
    assert_eq!(trail.matches("<tr data-seq=").count(), 3);
    assert!(
        trail.contains("older →")
            && trail.contains("<form class=\"filters\" method=\"get\" action=\"audit\">")
    );
    let older = trail.split("href=\"").find(|link| link.starts_with("audit?limit=3&amp;before=")).unwrap();
    let older = &older[..older.find('"').unwrap()].replace("&amp;", "&");
    let page2 = dump(&browser, &env, &url(older), false);
    let seqs = |dom: &str| -> Vec<u64> {
        dom.split("<tr data-seq=\"").skip(1).map(|s| s[..s.find('"').unwrap()].parse().unwrap()).collect()
    };
    let (first, second) = (seqs(&trail), seqs(&page2));
    assert_eq!(second.len(), 3);
    assert!(first.windows(2).all(|w| w[0] > w[1]) && second[0] == first[2] - 1, "{first:?} then {second:?}");
    let goals = dump(&browser, &env, &url("entry?id=project:alp:goals"), false);
    assert!(goals.contains("<div class=\"ins\">+ docs</div>"), "the line diff between versions 1 and 2");

    // Screenshots, kept as artefacts (a person looks at them: is the matrix clear at a glance?).
    for (name, page, height) in [
        ("overview", "", 1100),
        ("matrix", "matrix", 700),
        ("entry", "entry?id=project:alp:goals", 1300),
        ("hostile", "entry?id=project:alp:hostile", 900),
        ("audit", "audit", 1100),
    ] {
        screenshot(&browser, &env, &url(page), name, height);
    }
}

#[test]
fn only_loopback_only_the_operator() {
    let env = Env::new();
    for (args, needle) in [
        (&["--json", "inspect", "--listen", "0.0.0.0:0"][..], "not a loopback address"),
        (&["--json", "inspect", "--listen", "192.0.2.1:7708"][..], "not a loopback address"),
        (&["--json", "inspect", "--listen", "unix:/tmp/alp-inspect.sock"][..], "never a unix socket"),
        (&["--json", "inspect", "--listen", "nowhere"][..], "is not HOST:PORT"),
        (&["--as", "main", "--json", "inspect"][..], "takes no --as"),
    ] {
        let run = env.run(args, None);
        assert_eq!(run.status, 2, "{args:?}: {run:?}");
        assert_eq!(run.error()["code"], "USAGE");
        assert!(run.error()["message"].as_str().unwrap().contains(needle), "{run:?}");
        assert!(run.stdout.is_empty());
    }
    assert!(env.audit_lines().is_empty());
}

#[test]
fn inspect_reads_a_postgresql_store() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let url = db.url();
    assert_eq!(crate::postgres::alp(&env, &[], &["--store", url, "init"]).status, 0);
    crate::postgres::ok(
        &env,
        url,
        &["--as", "main", "memory", "create", "shared:team:db", "--content", "v1"],
    );
    let update = ["memory", "update", "shared:team:db", "--expected-version", "1", "--content", "v2"];
    crate::postgres::ok(&env, url, &[&["--as", "main"][..], &update].concat());
    let inspect = Inspect::start(&env, &["--store".into(), db.url().into()]);
    let overview = inspect.page("");
    assert!(overview.contains("PostgreSQL") && overview.contains("intact: 3 records"), "{overview}");
    let entry = inspect.page("entry?id=shared:team:db");
    assert!(
        entry.contains("<div class=\"del\">- v1</div>") && entry.contains("<div class=\"ins\">+ v2</div>")
    );
    let matrix = inspect.page("matrix");
    assert!(matrix.contains("data-role=\"worker\" data-root=\"shared\" data-cell=\"read\""), "{matrix}");
    let trail = inspect.page("audit?door=history");
    assert_eq!(trail.matches("<tr data-seq=").count(), 1, "{trail}");
    let shown = crate::postgres::alp(&env, &[], &["--store", url, "audit", "show", "--actor", ""]);
    let records: Vec<Value> = shown.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let doors: Vec<(&str, Option<&Value>)> =
        records.iter().map(|r| (r["door"].as_str().unwrap(), r.get("shown"))).collect();
    assert_eq!(
        doors,
        [("list", None), ("history", Some(&json!(["shared:team:db@2", "shared:team:db@1"]))), ("list", None),]
    );
}
