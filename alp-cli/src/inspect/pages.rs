//! The HTML of `alp inspect`'s pages, written with maud: every value put into a page (memory text, IDs, roles,
//! grants, audit fields, error messages) is escaped by the template itself; the only markup not escaped is this
//! file's own stylesheet. No page has a script or loads anything.

use std::collections::BTreeMap;

use alp_memory::memory_audit::{Door, Outcome, VerifyReport};
use alp_memory::memory_entry::{MemoryEntry, Version};
use alp_memory::memory_id::{MemoryPrefix, parse_memory_id};
use alp_memory::memory_policy::{Actor, Coverage, Operation};
use alp_memory::token::TokenRecord;
use alp_memory::{MemoryError, Page as Listed, Survey};
use http::StatusCode;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

/// A rendered page and its status.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) html: String,
}

const CSS: &str = r#"
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff}
header{display:flex;gap:1.5em;align-items:center;flex-wrap:wrap;padding:.6em 1.2em;background:#24292f;color:#fff}
header a{color:#fff;text-decoration:none;padding:.2em .5em;border-radius:4px}
header a.on{background:#57606a}
header form{margin-left:auto}
main{padding:1em 1.2em;max-width:90em}
h1{font-size:1.4em;margin:.3em 0 .6em}
h2{font-size:1.15em;margin:1.4em 0 .5em}
table{border-collapse:collapse;margin:.3em 0}
th,td{border:1px solid #d0d7de;padding:.3em .6em;text-align:left;vertical-align:top}
thead th{background:#f6f8fa}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;border:1px solid #d0d7de;padding:.6em;margin:.3em 0}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}
.muted{color:#57606a}
.error{border:1px solid #cf222e;background:#ffebe9;padding:.6em;border-radius:4px}
table.matrix td.cell{text-align:center;vertical-align:middle;min-width:7.5em;font-weight:600}
table.matrix th[scope=row]{vertical-align:middle}
table.matrix th.root{text-align:center}
.cell.rw{background:#2da44e;color:#fff}
.cell.r{background:#b6e3ff;color:#0a3069}
.cell.w{background:#ffd8b5;color:#762c00}
.cell.part{background:repeating-linear-gradient(135deg,#fff8c5 0 8px,#fae17d 8px 10px);color:#4d2d00}
.cell.none{background:#f6f8fa;color:#8c959f}
td.cell.none::after{content:"—"}
.cell small{display:block;font-weight:400;font-size:.8em}
.legend{display:flex;gap:.8em;flex-wrap:wrap;margin:.8em 0}
.legend span.cell{display:inline-block;padding:.2em .7em;border:1px solid #d0d7de;border-radius:4px;font-weight:600}
.diff{background:#fff;border:1px solid #d0d7de;padding:.3em 0;margin:.3em 0;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em}
.diff div{white-space:pre-wrap;word-break:break-word;padding:0 .6em}
.diff .ins{background:#dafbe1}.diff .del{background:#ffebe9}.diff .gap{color:#8c959f}
.version{border-left:4px solid #d0d7de;padding-left:.8em;margin:1em 0}
form.filters{display:grid;grid-template-columns:repeat(auto-fill,minmax(13em,1fr));gap:.4em .8em;margin:.5em 0 1em}
form.filters label{display:flex;flex-direction:column;font-size:.85em;color:#57606a}
.pager{display:flex;gap:1em;margin:.6em 0}
details summary{cursor:pointer}
"#;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Nav {
    Overview,
    Matrix,
    Entries,
    Trail,
    Entry,
}

/// A link to a page with query parameters, encoded as a form sends them.
fn link(page: &str, params: &[(&str, &str)]) -> String {
    if params.is_empty() {
        return page.to_owned();
    }
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in params {
        query.append_pair(name, value);
    }
    format!("{page}?{}", query.finish())
}

fn entry_link(id: &str) -> String {
    link("entry", &[("id", id)])
}

fn layout(status: StatusCode, title: &str, nav: Nav, body: Markup) -> Page {
    let tab = |target: Nav, href: &str, text: &str| {
        html! { a href=(href) class=[(nav == target).then_some("on")] { (text) } }
    };
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "alp inspect · " (title) }
                style { (PreEscaped(CSS)) }
            }
            body {
                header {
                    strong { "alp inspect" }
                    nav {
                        (tab(Nav::Overview, "./", "Overview"))
                        (tab(Nav::Matrix, "matrix", "Grants matrix"))
                        (tab(Nav::Entries, "entries", "Entries"))
                        (tab(Nav::Trail, "audit", "Audit trail"))
                    }
                    form action="entry" method="get" {
                        input type="text" name="id" placeholder="open an entry by ID" size="28";
                        " "
                        button type="submit" { "Open" }
                    }
                }
                main { (body) }
            }
        }
    };
    Page { status, html: markup.into_string() }
}

/// What the overview shows.
pub(crate) struct Overview<'a> {
    pub(crate) place: &'a str,
    pub(crate) agents: &'a str,
    pub(crate) survey: &'a Survey,
    pub(crate) roles: &'a [super::Definition],
    pub(crate) tokens: &'a [TokenRecord],
    pub(crate) chain: &'a VerifyReport,
    pub(crate) head: &'a (u64, String),
}

fn grants(actor: &Actor, operation: Operation) -> String {
    let list: Vec<&str> = actor.grants(operation).iter().map(|g| g.as_str()).collect();
    if list.is_empty() { "(none)".to_owned() } else { list.join(", ") }
}

pub(crate) fn overview(o: &Overview<'_>) -> Page {
    let (intact, status) = super::chain_status(o.chain);
    let total: u64 = o.survey.roots.values().sum();
    let body = html! {
        h1 { "Overview" }
        p { (o.place) br; span.muted { "agent definitions: " code { (o.agents) } } }
        h2 { "Audit chain" }
        p {
            span class=(if intact { "ok" } else { "bad" }) { (status) }
            br;
            "head: " code { (o.head.0) ":" (o.head.1) }
        }
        h2 { "Entries per scope root (" (total) " live)" }
        @if o.survey.roots.is_empty() {
            p.muted { "No live entries." }
        } @else {
            table {
                thead { tr { th { "scope root" } th { "entries" } th { "" } } }
                tbody {
                    @for (root, count) in &o.survey.roots {
                        tr {
                            td { a href=(link("entries", &[("prefix", root)])) { code { (root) } } }
                            td { (count) }
                            td { a href=(link("audit", &[("id", root)])) { "audit trail" } }
                        }
                    }
                }
            }
        }
        h2 { "Roles (" (o.roles.len()) ")" }
        @if o.roles.is_empty() {
            p.muted { "No agent definitions; add one with " code { "alp agent add ROLE" } "." }
        } @else {
            table {
                thead { tr { th { "role" } th { "reports to" } th { "read" } th { "write" } th { "warnings" } } }
                tbody {
                    @for (role, actor) in o.roles {
                        tr {
                            td { code { (role) } }
                            @match actor {
                                Ok(actor) => {
                                    td { (actor.reports_to().map(|r| r.as_str()).unwrap_or("")) }
                                    td.mono { (grants(actor, Operation::Read)) }
                                    td.mono { (grants(actor, Operation::Write)) }
                                    td { @for warning in actor.warnings() { div.bad { (warning) } } }
                                }
                                Err(error) => { td colspan="4" { div.bad { "does not load: " (error) } } }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Tokens (" (o.tokens.len()) ")" }
        @if o.tokens.is_empty() {
            p.muted { "No tokens; make one with " code { "alp token create --role ROLE" } "." }
        } @else {
            table {
                thead { tr { th { "id" } th { "role" } th { "name" } th { "created" } th { "state" } th { "" } } }
                tbody {
                    @for token in o.tokens {
                        tr {
                            td { code { (token.id()) } }
                            td { (token.role()) }
                            td { (token.name().unwrap_or("")) }
                            td { (token.created_at().to_string()) }
                            td { (super::token_state(token)) }
                            td { a href=(link("audit", &[("via", token.id())])) { "its calls" } }
                        }
                    }
                }
            }
        }
    };
    layout(StatusCode::OK, "overview", Nav::Overview, body)
}

/// One cell of the grants matrix: its word (`read`, `write`, `read+write`, `partial` or empty), its class, and the
/// grants behind it.
struct Cell {
    word: &'static str,
    class: &'static str,
    detail: Vec<String>,
}

fn cell(actor: &Actor, root: &MemoryPrefix) -> Cell {
    let (read, write) = (actor.coverage(Operation::Read, root), actor.coverage(Operation::Write, root));
    let mut detail = Vec::new();
    for (op, coverage) in [("read", &read), ("write", &write)] {
        match coverage {
            Coverage::Whole(grants) => detail.push(format!("{op} all: {}", grants.join(", "))),
            Coverage::Part(grants) => detail.push(format!("{op} part: {}", grants.join(", "))),
            Coverage::Nothing => {}
        }
    }
    let (word, class) = match (&read, &write) {
        (Coverage::Whole(_), Coverage::Whole(_)) => ("read+write", "rw"),
        (Coverage::Whole(_), Coverage::Nothing) => ("read", "r"),
        (Coverage::Nothing, Coverage::Whole(_)) => ("write", "w"),
        (Coverage::Nothing, Coverage::Nothing) => ("", "none"),
        _ => ("partial", "part"),
    };
    if detail.is_empty() {
        let foreign = root.scope() == alp_memory::memory_id::Scope::Private
            && root.owner().is_some_and(|owner| owner != actor.role().as_str());
        detail.push(if foreign {
            "another role's private memory: no grant ever reaches it".to_owned()
        } else {
            "no access".to_owned()
        });
    }
    Cell { word, class, detail }
}

pub(crate) fn matrix(survey: &Survey, roles: &[super::Definition]) -> Page {
    let roots: Vec<MemoryPrefix> =
        survey.roots.keys().filter_map(|root| MemoryPrefix::parse(root).ok()).collect();
    let body = html! {
        h1 { "Grants matrix" }
        p.muted {
            "Which role may read and write each scope root that holds entries, from the agent definitions as the \
             policy reads them now. A role never reaches another role's private memory."
        }
        div.legend {
            span.cell.rw { "read+write" }
            span.cell.r { "read" }
            span.cell.w { "write" }
            span.cell.part { "partial" }
            span.cell.none { "no access" }
            span.muted { "partial: grants cover only part of the root (which ones: in the cell and on hover)" }
        }
        @if roles.is_empty() || roots.is_empty() {
            p.muted { "Nothing to draw: " (roles.len()) " roles, " (roots.len()) " scope roots with entries." }
        } @else {
            table.matrix {
                thead {
                    tr {
                        th { "role \\ scope root" }
                        @for root in &roots {
                            th.root scope="col" {
                                a href=(link("entries", &[("prefix", root.as_str())])) { code { (root.as_str()) } }
                                br;
                                small.muted { (entries_count(survey.roots.get(root.as_str()).copied().unwrap_or(0))) }
                            }
                        }
                    }
                }
                tbody {
                    @for (role, actor) in roles {
                        tr {
                            th scope="row" { code { (role) } }
                            @match actor {
                                Ok(actor) => {
                                    @for root in &roots {
                                        @let c = cell(actor, root);
                                        td class=(format!("cell {}", c.class)) data-role=(role)
                                            data-root=(root.as_str()) data-cell=(c.word)
                                            title=(format!("{role} on {}: {}", root.as_str(), c.detail.join("; "))) {
                                            (c.word)
                                            @if c.class == "part" {
                                                @for line in &c.detail { small { (line) } }
                                            }
                                        }
                                    }
                                }
                                Err(error) => {
                                    td colspan=(roots.len()) { div.bad { "definition does not load: " (error) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout(StatusCode::OK, "grants matrix", Nav::Matrix, body)
}

fn entries_count(count: u64) -> String {
    if count == 1 { "1 entry".to_owned() } else { format!("{count} entries") }
}

/// One delivery of an entry, from a record's receipt.
pub(crate) struct Receipt {
    seq: u64,
    timestamp: String,
    actor: String,
    door: String,
    via: Option<String>,
    version: u64,
}

/// The deliveries of `id` in `lines` (stored records, one per line).
pub(crate) fn receipts(id: &str, lines: &[u8]) -> Vec<Receipt> {
    let text = |record: &Value, key: &str| record.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut found = Vec::new();
    for line in lines.split(|b| *b == b'\n').filter(|line| !line.is_empty()) {
        let Ok(record) = serde_json::from_slice::<Value>(line) else { continue };
        let shown =
            record.get("shown").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
        for entry in shown {
            let Some((shown_id, version)) = entry.rsplit_once('@') else { continue };
            let Ok(version) = version.parse::<u64>() else { continue };
            if shown_id == id {
                found.push(Receipt {
                    seq: record.get("seq").and_then(Value::as_u64).unwrap_or(0),
                    timestamp: text(&record, "timestamp").unwrap_or_default(),
                    actor: text(&record, "actor").unwrap_or_default(),
                    door: text(&record, "door").or_else(|| text(&record, "operation")).unwrap_or_default(),
                    via: text(&record, "via"),
                    version,
                });
            }
        }
    }
    found
}

fn actor_name(actor: &str) -> Markup {
    html! { @if actor.is_empty() { span.muted { "(operator)" } } @else { (actor) } }
}

fn fields(entry: &MemoryEntry) -> Markup {
    let object = alp_memory::json::entry_object(entry);
    html! {
        table {
            tbody {
                @if let Value::Object(map) = object {
                    @for (name, value) in &map {
                        @if name != "content" {
                            tr {
                                th { (name) }
                                td.mono { (value.as_str().map_or_else(|| value.to_string(), str::to_owned)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The line diff from `old` to `new`, three lines of context around each change.
fn diff(old: &str, new: &str) -> Markup {
    let diff = similar::TextDiff::from_lines(old, new);
    let groups = diff.grouped_ops(3);
    html! {
        @if groups.is_empty() {
            p.muted { "content unchanged" }
        } @else {
            div.diff {
                @for (n, group) in groups.iter().enumerate() {
                    @if n > 0 { div.gap { "⋯" } }
                    @for op in group {
                        @for change in diff.iter_changes(op) {
                            @let (class, sign) = match change.tag() {
                                similar::ChangeTag::Delete => ("del", "-"),
                                similar::ChangeTag::Insert => ("ins", "+"),
                                similar::ChangeTag::Equal => ("eq", " "),
                            };
                            div class=(class) { (sign) " " (change.value().trim_end_matches('\n')) }
                        }
                    }
                }
            }
        }
    }
}

fn content_of(version: &Version) -> &str {
    match version {
        Version::Entry(entry) | Version::Redacted(entry) => &entry.content,
        Version::Tombstone { .. } => "",
    }
}

pub(crate) fn entry(id: &str, versions: &[Version], receipts: &[Receipt], read_at_most: u64) -> Page {
    let mut by_version: BTreeMap<u64, Vec<&Receipt>> = BTreeMap::new();
    for receipt in receipts {
        by_version.entry(receipt.version).or_default().push(receipt);
    }
    let body = html! {
        h1 { "Entry " code { (id) } }
        p {
            a href=(link("audit", &[("id", id)])) { "every call on this ID" }
            " · "
            a href=(link("audit", &[("disclosed", id)])) { "every call that returned it" }
        }
        h2 { "Current version" }
        @match versions.first() {
            Some(Version::Entry(entry)) => { (fields(entry)) pre.content { (entry.content) } }
            Some(Version::Redacted(entry)) => { (fields(entry)) p.muted { "(content redacted)" } }
            Some(Version::Tombstone { version, deleted_at, .. }) => {
                p.bad { "Deleted at " (deleted_at.to_string()) " (version " (version) " is its tombstone)." }
            }
            None => p.muted { "No version kept." }
        }
        h2 {
            "History (" (if versions.len() == 1 { "1 version".to_owned() } else { format!("{} versions, newest first", versions.len()) }) ")"
        }
        @for (n, version) in versions.iter().enumerate() {
            @let older = versions.get(n + 1);
            div.version {
                h3 {
                    "version " (version.version())
                    @match version {
                        Version::Entry(entry) => { " · " span.muted { "updated " (entry.updated_at.to_string()) } }
                        Version::Redacted(entry) => {
                            " · " span.muted { "updated " (entry.updated_at.to_string()) } " · " span.bad { "redacted" }
                        }
                        Version::Tombstone { deleted_at, .. } => {
                            " · " span.bad { "deleted " (deleted_at.to_string()) }
                        }
                    }
                }
                @if version.is_redacted() {
                    p.muted { "Its content was redacted; no diff." }
                } @else if !version.is_tombstone() {
                    @if older.is_some_and(Version::is_redacted) {
                        p.muted { "The version before it was redacted; no diff." }
                    } @else {
                        @if older.is_none() { p.muted { "First kept version:" } }
                        (diff(older.map_or("", content_of), content_of(version)))
                    }
                }
                @match by_version.get(&version.version()) {
                    None => p.muted { "Received by nobody (in the last " (read_at_most) " receipts of the live log)." }
                    Some(list) => {
                        table {
                            thead { tr { th { "received by" } th { "when" } th { "door" } th { "via" } th { "record" } } }
                            tbody {
                                @for r in list.iter().rev() {
                                    tr {
                                        td { (actor_name(&r.actor)) }
                                        td { (r.timestamp) }
                                        td { (r.door) }
                                        td { code { (r.via.as_deref().unwrap_or("")) } }
                                        td { a href=(link("audit", &[("before", &(r.seq + 1).to_string()), ("limit", "1")])) { "#" (r.seq) } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout(StatusCode::OK, id, Nav::Entry, body)
}

pub(crate) fn entries(prefix: &str, page: &Listed<MemoryEntry>) -> Page {
    let body = html! {
        h1 { "Entries under " code { (prefix) } }
        form method="get" action="entries" {
            input type="text" name="prefix" value=(prefix) size="40";
            " "
            button type="submit" { "List" }
        }
        @if page.entries.is_empty() {
            p.muted { "No live entries here." }
        } @else {
            table {
                thead { tr { th { "id" } th { "version" } th { "kind" } th { "updated" } th { "content" } } }
                tbody {
                    @for entry in &page.entries {
                        tr {
                            td { a href=(entry_link(entry.id.as_str())) { code { (entry.id.as_str()) } } }
                            td { (entry.version) }
                            td { (entry.fields.kind.as_str()) }
                            td { (entry.updated_at.to_string()) }
                            td { (first_line(&entry.content)) }
                        }
                    }
                }
            }
        }
        @if let (true, Some(last)) = (page.more, page.entries.last()) {
            div.pager { a href=(link("entries", &[("prefix", prefix), ("after", last.id.as_str())])) { "next page →" } }
        }
    };
    layout(StatusCode::OK, prefix, Nav::Entries, body)
}

/// The first line of `text`, cut to 120 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut cut: String = line.chars().take(120).collect();
    if cut.len() < line.len() || text.lines().nth(1).is_some() {
        cut.push('…');
    }
    cut
}

/// The filter form of the audit trail, as the query gave it (to fill it again and to keep it in paging links).
pub(crate) struct TrailForm {
    values: Vec<(&'static str, String)>,
}

/// The filters the trail takes, as `alp audit show` names them.
const FILTERS: [(&str, &str); 10] = [
    ("actor", "role, or (operator)"),
    ("door", ""),
    ("outcome", ""),
    ("code", "e.g. MEMORY_NOT_GRANTED"),
    ("via", "token ID"),
    ("id", "ID prefix, segment-wise"),
    ("disclosed", "entry ID returned"),
    ("from", "RFC 3339, or 2h, 7d back"),
    ("to", "RFC 3339, or 30m back"),
    ("since", "seq ≥"),
];

impl TrailForm {
    pub(crate) fn read(params: &super::Params) -> TrailForm {
        let mut values: Vec<(&'static str, String)> = Vec::new();
        for (name, _) in FILTERS.iter().chain(&[("limit", "")]) {
            if let Some(value) = params.get(name) {
                values.push((name, value.to_owned()));
            }
        }
        TrailForm { values }
    }

    fn get(&self, name: &str) -> &str {
        self.values.iter().find(|(n, _)| *n == name).map_or("", |(_, v)| v.as_str())
    }

    /// A link to the trail with these filters and `extra`.
    fn link(&self, extra: &[(&str, &str)]) -> String {
        let mut params: Vec<(&str, &str)> = self.values.iter().map(|(n, v)| (*n, v.as_str())).collect();
        params.extend_from_slice(extra);
        link("audit", &params)
    }
}

fn select(name: &str, current: &str, options: &[&str]) -> Markup {
    html! {
        select name=(name) {
            option value="" selected[current.is_empty()] { "any" }
            @for option in options {
                option value=(option) selected[current == *option] { (option) }
            }
        }
    }
}

/// Where a record's `id` leads: an entry's page for a memory call on a valid ID, a listing for a search's prefix.
fn record_target(record: &Value) -> Option<String> {
    let id = record.get("id").and_then(Value::as_str)?;
    match record.get("operation").and_then(Value::as_str)? {
        "get" | "create" | "update" | "delete" | "redact" => parse_memory_id(id).ok().map(|_| entry_link(id)),
        "search" if !id.is_empty() => {
            MemoryPrefix::parse(id).ok().map(|_| link("entries", &[("prefix", id)]))
        }
        _ => None,
    }
}

pub(crate) fn trail(form: &TrailForm, lines: &[u8], size: u64, head: u64) -> Page {
    let mut records: Vec<Value> = lines
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    records.reverse();
    let seq = |record: &Value| record.get("seq").and_then(Value::as_u64).unwrap_or(0);
    let newest = records.first().map(seq);
    let oldest = records.last().map(seq);
    let doors: Vec<&str> = Door::ALL.iter().map(|door| door.as_str()).collect();
    let outcomes: Vec<&str> = Outcome::ALL.iter().map(|outcome| outcome.as_str()).collect();
    let text = |record: &Value, key: &str| record.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let body = html! {
        h1 { "Audit trail" }
        p.muted { "Newest first. Each record is the outcome of one call, written before the call answered. " (head) " records in the live log." }
        form.filters method="get" action="audit" {
            @for (name, hint) in FILTERS {
                label {
                    (name)
                    @match name {
                        "door" => (select(name, form.get(name), &doors)),
                        "outcome" => (select(name, form.get(name), &outcomes)),
                        _ => input type="text" name=(name) value=(form.get(name)) placeholder=(hint);
                    }
                }
            }
            label { "per page" input type="text" name="limit" value=(form.get("limit")) placeholder="50"; }
            label { "\u{a0}" button type="submit" { "Filter" } }
        }
        div.pager {
            a href=(form.link(&[])) { "newest" }
            @if let Some(newest) = newest.filter(|n| *n < head) {
                a href=(form.link(&[("after", &newest.to_string())])) { "← newer" }
            }
            @if let Some(oldest) = oldest.filter(|o| *o > 1 && records.len() as u64 == size) {
                a href=(form.link(&[("before", &oldest.to_string())])) { "older →" }
            }
        }
        @if records.is_empty() {
            p.muted { "No record matches." }
        } @else {
            table {
                thead { tr { th { "seq" } th { "time (UTC)" } th { "actor" } th { "door" } th { "id" } th { "outcome" } th { "via" } th { "shown" } } }
                tbody {
                    @for record in &records {
                        @let id = text(record, "id");
                        @let shown: Vec<&str> = record.get("shown").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
                        tr data-seq=(seq(record)) {
                            td { (seq(record)) }
                            td.mono { (text(record, "timestamp")) }
                            td { (actor_name(&text(record, "actor"))) }
                            td { (record.get("door").or(record.get("operation")).and_then(Value::as_str).unwrap_or("")) }
                            td {
                                @match record_target(record) {
                                    Some(href) => a href=(href) { code { (id) } },
                                    None => code { (id) },
                                }
                                @if let Some(grant) = record.get("grant").and_then(Value::as_array) {
                                    @for g in grant.iter().filter_map(Value::as_str) { div.muted.mono { (g) } }
                                }
                            }
                            td {
                                @let outcome = text(record, "outcome");
                                span class=(if outcome == "allowed" { "ok" } else { "bad" }) { (outcome) }
                                @if let Some(code) = record.get("code").and_then(Value::as_str) { br; code { (code) } }
                            }
                            td { code { (text(record, "via")) } }
                            td {
                                @if shown.len() == 1 {
                                    (shown_link(shown[0]))
                                } @else if !shown.is_empty() {
                                    details {
                                        summary { (shown.len()) " entries" }
                                        @for entry in &shown { div { (shown_link(entry)) } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout(StatusCode::OK, "audit trail", Nav::Trail, body)
}

fn shown_link(entry: &str) -> Markup {
    let id = entry.rsplit_once('@').map_or(entry, |(id, _)| id);
    html! { a href=(entry_link(id)) { code { (entry) } } }
}

pub(crate) fn error(error: &MemoryError) -> Page {
    let status = match crate::exit_code(error) {
        2 | 3 => StatusCode::BAD_REQUEST,
        5 => StatusCode::NOT_FOUND,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let body = html! {
        h1 { "Cannot show this page" }
        div.error { code { (error.code()) } ": " (error.to_string()) }
    };
    layout(status, "error", Nav::Overview, body)
}

pub(crate) fn not_found(path: &str) -> Page {
    let body = html! {
        h1 { "No such page" }
        p { code { (path) } " is not a page of alp inspect." }
    };
    layout(StatusCode::NOT_FOUND, "no such page", Nav::Overview, body)
}
