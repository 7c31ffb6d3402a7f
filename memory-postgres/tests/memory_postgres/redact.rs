//! A redaction erases the version's content from the database itself: from every row, and from the files of
//! every table and index of the database (an `UPDATE` alone would leave the old row behind as a dead tuple,
//! readable on disk until its space is reused).

use std::path::{Path, PathBuf};

use memory_entry::{NewEntry, Patch};
use memory_postgres::Settings;
use memory_store::MemoryStore;

use crate::{at, id};

/// Short enough to be stored inline and uncompressed, so its bytes are in the table's file if its row is.
const SECRET: &str = "sk-live-4242-redact-me";
/// What a neighbouring entry holds, untouched by the redaction.
const KEPT: &str = "still-here-7a7a";

#[test]
fn redacted_content_is_gone_from_every_row_and_every_file_of_the_database() {
    let Some((store, db)) = crate::fresh_store(&Settings::default()) else { return };
    let oops = id("private:main:oops");
    store.create(NewEntry::new(oops.clone(), format!("the key is {SECRET}")), at(0)).unwrap();
    store.update(&oops, 1, &Patch::content_only("rotated; nothing here"), at(1)).unwrap();
    // A neighbour whose text stays shows that the scan below reads the files rows live in.
    let other = id("shared:kept");
    store.create(NewEntry::new(other.clone(), format!("kept {KEPT}")), at(2)).unwrap();

    let mut client = db.connect().unwrap();
    client.batch_execute("CHECKPOINT").unwrap();
    let files = database_files(&mut client);
    if let Some(files) = &files {
        assert!(
            files.iter().any(|file| holds(file, SECRET)),
            "before the redaction, some file of the database holds the secret: the scan can see it"
        );
    }

    store.redact(&oops, 1).unwrap();
    assert!(store.get_version(&oops, 1).unwrap().is_redacted());
    assert_eq!(store.get(&other, at(3)).unwrap().content, format!("kept {KEPT}"));

    // No row of any table of the database holds it.
    let tables: Vec<String> = client
        .query("SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public'", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(tables.len() >= 5, "{tables:?}");
    for table in &tables {
        let sql = format!("SELECT count(*) FROM {table} t WHERE t::text LIKE '%' || $1 || '%'");
        let found: i64 = client.query_one(sql.as_str(), &[&SECRET]).unwrap().get(0);
        assert_eq!(found, 0, "a row of {table} holds the secret");
    }

    // No file of the database does either, once what is in memory is written out.
    client.batch_execute("CHECKPOINT").unwrap();
    let Some(files) = database_files(&mut client) else {
        testkit::pg::skip_notice("the data directory is not readable here: the file scan is skipped");
        return;
    };
    let holding: Vec<&PathBuf> = files.iter().filter(|file| holds(file, SECRET)).collect();
    assert!(holding.is_empty(), "files of the database hold the redacted secret: {holding:?}");
    assert!(
        files.iter().any(|file| holds(file, KEPT)),
        "the neighbour's copy is still on disk: the scan reads the files that hold rows"
    );
}

/// Every file of the database's own directory (`base/<oid>`: its tables, TOAST tables and indexes), or `None`
/// when this process cannot read the data directory.
fn database_files(client: &mut postgres::Client) -> Option<Vec<PathBuf>> {
    let row = client
        .query_one(
            "SELECT current_setting('data_directory'), oid::text FROM pg_database \
             WHERE datname = current_database()",
            &[],
        )
        .unwrap();
    let (data, oid): (String, String) = (row.get(0), row.get(1));
    let dir = Path::new(&data).join("base").join(oid);
    let files: Vec<PathBuf> = std::fs::read_dir(&dir).ok()?.map(|entry| entry.unwrap().path()).collect();
    files.iter().all(|file| std::fs::File::open(file).is_ok()).then_some(files)
}

fn holds(file: &Path, needle: &str) -> bool {
    let bytes = std::fs::read(file).unwrap_or_default();
    bytes.windows(needle.len()).any(|window| window == needle.as_bytes())
}
