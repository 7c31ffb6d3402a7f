#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]
//! The primitives under attack: traversal never escapes the root whatever the components (a property test), an
//! attacker swapping a directory for a symlink while opens run never gets a file outside read (a race loop), and a
//! writer killed with `kill -9` at random instants always leaves the old bytes or the new ones, and no second link
//! that the leftover-link rule does not recognise (a crash loop).
#![cfg(target_os = "linux")]

use std::io::Read as _;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_fs::{
    Install, Opened, RootHandle, Staged, TEMP_PREFIX, WriteError, is_own_leftover_link, open_regular,
    write_atomic,
};
use proptest::prelude::*;
use rustix::fs::{AtFlags, OFlags, RenameFlags};

/// Both resolutions: `openat2` (where the kernel has it) and the forced component walk.
const WALK: [bool; 2] = [false, true];

fn identity(fd: &OwnedFd) -> (u64, u64) {
    let stat = rustix::fs::fstat(fd).unwrap();
    (stat.st_dev, stat.st_ino)
}

fn identity_of(path: &Path) -> (u64, u64) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    (meta.dev(), meta.ino())
}

/// `<tmp>/root` with directories `a`, `a/b`, a file `a/f`, and symlinks out of the root, inside it and to `/`;
/// `<tmp>/outside` holds a file `f` too.
struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    dirs: Vec<(u64, u64)>,
    file: (u64, u64),
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/f"), "inside").unwrap();
    std::fs::create_dir(tmp.path().join("outside")).unwrap();
    std::fs::write(tmp.path().join("outside/f"), "outside").unwrap();
    std::os::unix::fs::symlink("../outside", root.join("out")).unwrap();
    std::os::unix::fs::symlink("a", root.join("in")).unwrap();
    std::os::unix::fs::symlink("/", root.join("abs")).unwrap();
    std::os::unix::fs::symlink("f", root.join("a/lf")).unwrap();
    let dirs = ["", "a", "a/b"].iter().map(|rel| identity_of(&root.join(rel))).collect();
    let file = identity_of(&root.join("a/f"));
    Tree { _tmp: tmp, root, dirs, file }
}

fn component() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "a", "b", "f", "lf", "out", "in", "abs", "..", ".", "", "/", "/etc", "/tmp", "a/b", "../root", "x",
    ])
    .prop_map(str::to_owned)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the components, a directory opened is one of the root's own (reached without a symlink), and a file
    /// opened for reading is the root's own file.
    #[test]
    fn traversal_never_escapes_the_root(components in prop::collection::vec(component(), 0..6), last in component()) {
        let tree = tree();
        for walk in WALK {
            let root = RootHandle::open(&tree.root, walk).unwrap();
            let rel: Vec<&str> = components.iter().map(String::as_str).collect();
            let Ok(dir) = root.open_dir(&rel) else { continue };
            prop_assert!(tree.dirs.contains(&identity(&dir)), "{rel:?} opened a directory outside");
            if let Ok(Opened::Regular { fd, .. }) = open_regular(&root, dir.as_fd(), &last) {
                prop_assert_eq!(identity(&fd), tree.file, "{:?} / {} opened a file outside", rel, last);
            }
            let stepped = root.step_dir(dir.as_fd(), &last);
            if let Ok(next) = stepped {
                prop_assert!(tree.dirs.contains(&identity(&next)), "{rel:?} / {last} stepped outside");
            }
        }
    }
}

/// An attacker swaps `d` (a directory holding `f`) with a symlink to a directory outside holding its own `f`,
/// as fast as it can (`RENAME_EXCHANGE`), while opens run: no open ever reads the outside file.
#[test]
fn swapping_a_directory_for_a_symlink_never_lets_an_open_out() {
    for walk in WALK {
        let tmp = tempfile::tempdir().unwrap();
        let root_path = tmp.path().join("root");
        std::fs::create_dir_all(root_path.join("d")).unwrap();
        std::fs::write(root_path.join("d/f"), "inside").unwrap();
        std::fs::create_dir(tmp.path().join("outside")).unwrap();
        std::fs::write(tmp.path().join("outside/f"), "SECRET").unwrap();
        std::os::unix::fs::symlink("../outside", root_path.join("swap")).unwrap();
        let root = RootHandle::open(&root_path, walk).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let attacker = {
            let stop = Arc::clone(&stop);
            let root_path = root_path.clone();
            std::thread::spawn(move || {
                let dir = std::fs::File::open(&root_path).unwrap();
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(&dir, "d", &dir, "swap", RenameFlags::EXCHANGE).unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        let (mut inside, mut refused) = (0u32, 0u32);
        for _ in 0..4000 {
            match root.open_dir(&["d"]) {
                Ok(dir) => match open_regular(&root, dir.as_fd(), "f") {
                    Ok(Opened::Regular { fd, .. }) => {
                        let mut text = String::new();
                        std::fs::File::from(fd).read_to_string(&mut text).unwrap();
                        assert_eq!(text, "inside", "walk {walk}: an open followed the symlink");
                        inside += 1;
                    }
                    other => panic!("walk {walk}: {other:?}"),
                },
                Err(_) => refused += 1,
            }
            // The file opened straight from the root handle, through the swapped component.
            if let Ok(fd) = root.open_at(root.fd(), "d", OFlags::PATH, rustix::fs::Mode::empty()) {
                let stat = rustix::fs::fstat(&fd).unwrap();
                assert_ne!(
                    rustix::fs::FileType::from_raw_mode(stat.st_mode),
                    rustix::fs::FileType::RegularFile
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = attacker.join().unwrap();
        assert!(swaps > 0);
        eprintln!("walk {walk}: {inside} opens inside, {refused} refused, {swaps} swaps");
    }
}

/// The bytes of generation `n`: 4 KiB of one repeated line, so that a partial or mixed file is recognisable.
fn generation(n: u64) -> Vec<u8> {
    let line = format!("generation {n:012}\n");
    line.repeat(4096 / line.len()).into_bytes()
}

fn is_a_generation(bytes: &[u8]) -> bool {
    let Some(first) = bytes.split_inclusive(|&b| b == b'\n').next() else { return false };
    let Ok(text) = std::str::from_utf8(first) else { return false };
    let Some(n) = text.strip_prefix("generation ").and_then(|rest| rest.trim_end().parse::<u64>().ok())
    else {
        return false;
    };
    bytes == generation(n)
}

const CHILD_ROLE: &str = "MEMORY_FS_TEST_CHILD";
const CHILD_DIR: &str = "MEMORY_FS_TEST_DIR";

/// Not a test of its own: the writer process of the crash loop, which does nothing unless started by it. It
/// replaces `target` with generation after generation, and installs `created` with the `link` + `unlink`
/// fallback (then unlinks it), until killed.
#[test]
fn child_entry() {
    if std::env::var(CHILD_ROLE).as_deref() != Ok("writer") {
        return;
    }
    let dir = PathBuf::from(std::env::var(CHILD_DIR).unwrap());
    let root = RootHandle::open(&dir, false).unwrap();
    for n in 1.. {
        write_atomic(&root, root.fd(), "target", &generation(n), Install::Replace).unwrap();
        match write_atomic(&root, root.fd(), "created", &generation(n), Install::NoReplaceByLink) {
            Ok(()) => rustix::fs::unlinkat(root.fd(), "created", AtFlags::empty()).unwrap(),
            Err(e) => panic!("{e:?}"),
        }
    }
}

/// A pseudo-random number of milliseconds in `range`, from the clock (no generator needed for a kill instant).
fn jitter(range: std::ops::Range<u64>) -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
    range.start + u64::from(nanos) % (range.end - range.start)
}

#[test]
fn kill_9_during_atomic_writes_leaves_old_or_new_bytes_and_only_own_leftovers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("root");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("target"), generation(0)).unwrap();
    let mut leftovers = 0;
    for round in 0..20 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
            .env(CHILD_ROLE, "writer")
            .env(CHILD_DIR, &dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(jitter(20..120)));
        child.kill().unwrap();
        child.wait().unwrap();
        let bytes = std::fs::read(dir.join("target")).unwrap();
        assert!(is_a_generation(&bytes), "round {round}: a partial or mixed file: {} bytes", bytes.len());
        // A killed fallback install may leave `created` with a second name, a temporary one: the rule says whose.
        let root = RootHandle::open(&dir, false).unwrap();
        if let Ok(stat) = rustix::fs::statat(root.fd(), "created", AtFlags::SYMLINK_NOFOLLOW) {
            assert!(is_a_generation(&std::fs::read(dir.join("created")).unwrap()), "round {round}");
            if stat.st_nlink == 2 {
                assert!(is_own_leftover_link(root.fd(), &stat), "round {round}: a second link not our own");
                leftovers += 1;
            } else {
                assert_eq!(stat.st_nlink, 1, "round {round}");
            }
            std::fs::remove_file(dir.join("created")).unwrap();
        }
        // The cleanup a store runs: temporary files go; then every name left has one link.
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            if name.starts_with(TEMP_PREFIX) {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            assert_eq!(entry.metadata().unwrap().nlink(), 1, "round {round}: {:?}", entry.file_name());
        }
    }
    eprintln!("{leftovers} rounds left the fallback's own second link");
}

/// A second link that is not a temporary file of the writer is not its own, and a file with three links never is.
#[test]
fn the_leftover_rule_recognises_only_its_own_temporary_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("x"), "x").unwrap();
    let root = RootHandle::open(dir, false).unwrap();
    let stat = |name: &str| rustix::fs::statat(root.fd(), name, AtFlags::SYMLINK_NOFOLLOW).unwrap();
    assert!(!is_own_leftover_link(root.fd(), &stat("x")));
    std::fs::hard_link(dir.join("x"), dir.join("alias")).unwrap();
    assert!(!is_own_leftover_link(root.fd(), &stat("x")));
    std::fs::remove_file(dir.join("alias")).unwrap();
    std::fs::hard_link(dir.join("x"), dir.join(format!("{TEMP_PREFIX}1:2:0000000000000003"))).unwrap();
    assert!(is_own_leftover_link(root.fd(), &stat("x")));
    std::fs::hard_link(dir.join("x"), dir.join("third")).unwrap();
    assert!(!is_own_leftover_link(root.fd(), &stat("x")));
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

/// A staged file is invisible under its name until installed; several staged files installed together land with
/// exactly their bytes; a staged file dropped, or refused by `NoReplace`, leaves no temporary file, and the
/// target as it was.
#[test]
fn staged_files_are_installed_whole_or_leave_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let root = RootHandle::open(tmp.path(), false).unwrap();
    let mut a = Staged::write(&root, root.fd(), b"first").unwrap();
    let mut b = Staged::write(&root, root.fd(), b"second").unwrap();
    let temps = names_in(tmp.path());
    assert_eq!(temps.len(), 2);
    assert!(temps.iter().all(|name| name.starts_with(TEMP_PREFIX)), "{temps:?}");
    a.sync().unwrap();
    b.sync().unwrap();
    a.install("a.md", Install::Replace).unwrap();
    b.install("b.md", Install::NoReplace).unwrap();
    memory_fs::sync(root.fd()).unwrap();
    assert_eq!(names_in(tmp.path()), ["a.md", "b.md"]);
    assert_eq!(std::fs::read(tmp.path().join("a.md")).unwrap(), b"first");
    assert_eq!(std::fs::read(tmp.path().join("b.md")).unwrap(), b"second");

    // Dropped before its install: gone.
    drop(Staged::write(&root, root.fd(), b"never").unwrap());
    assert_eq!(names_in(tmp.path()), ["a.md", "b.md"]);

    // Refused where something is at the name, with either way of installing: gone, and the target unchanged.
    for install in [Install::NoReplace, Install::NoReplaceByLink] {
        let mut c = Staged::write(&root, root.fd(), b"third").unwrap();
        c.sync().unwrap();
        assert_eq!(c.install("b.md", install), Err(WriteError::Exists));
        assert_eq!(names_in(tmp.path()), ["a.md", "b.md"]);
        assert_eq!(std::fs::read(tmp.path().join("b.md")).unwrap(), b"second");
    }

    // Replace swaps the bytes in one rename.
    let mut d = Staged::write(&root, root.fd(), b"fourth").unwrap();
    d.sync().unwrap();
    d.install("a.md", Install::Replace).unwrap();
    assert_eq!(std::fs::read(tmp.path().join("a.md")).unwrap(), b"fourth");
    assert_eq!(names_in(tmp.path()), ["a.md", "b.md"]);
}

/// `open_regular_path` on a directory mounted `nodev` (opened directly) and on one that allows devices (`O_PATH`):
/// the same answers for a file, a symlink, a directory, a FIFO (without blocking), a socket and a device node; and
/// a file or a device node bind-mounted at the name (a mount the direct open does not cross) takes the `O_PATH`
/// way, which reads the file and never opens the device. Needs root (to mount); skipped otherwise.
#[test]
fn a_path_is_opened_by_the_rule_of_its_directory_mount() {
    use memory_fs::open_regular_path;
    use rustix::fs::{FileType, Mode, makedev, mknodat};
    use testkit::tmpfs::{Tmpfs, skipped};

    let (Some(nodev), Some(dev)) = (Tmpfs::mount("nodev"), Tmpfs::mount("dev")) else {
        return skipped("the nodev path test");
    };
    let read = |opened: Opened| -> String {
        let Opened::Regular { fd, .. } = opened else { panic!("not a regular file: {opened:?}") };
        let mut text = String::new();
        std::fs::File::from(fd).read_to_string(&mut text).unwrap();
        text
    };
    let special = |dir: &Path, name: &str, kind: FileType, device: u64| {
        mknodat(rustix::fs::CWD, dir.join(name).as_path(), kind, Mode::RUSR | Mode::WUSR, device).unwrap();
    };
    for mount in [&nodev, &dev] {
        let dir = mount.path();
        std::fs::write(dir.join("file"), "text").unwrap();
        std::os::unix::fs::symlink("file", dir.join("link")).unwrap();
        std::fs::create_dir(dir.join("dir")).unwrap();
        special(dir, "fifo", FileType::Fifo, 0);
        special(dir, "null", FileType::CharacterDevice, makedev(1, 3));
        let _socket = std::os::unix::net::UnixListener::bind(dir.join("socket")).unwrap();
        assert_eq!(read(open_regular_path(&dir.join("file")).unwrap()), "text");
        assert!(matches!(open_regular_path(&dir.join("link")), Ok(Opened::Symlink)));
        assert!(matches!(open_regular_path(&dir.join("dir")), Ok(Opened::Directory)));
        let started = std::time::Instant::now();
        assert!(matches!(open_regular_path(&dir.join("fifo")), Ok(Opened::Special)));
        assert!(started.elapsed() < Duration::from_secs(2), "the FIFO blocked");
        assert!(matches!(open_regular_path(&dir.join("null")), Ok(Opened::Special)));
        assert!(matches!(open_regular_path(&dir.join("socket")), Ok(Opened::Special)));
        assert_eq!(open_regular_path(&dir.join("none")).unwrap_err(), rustix::io::Errno::NOENT);
        assert_eq!(open_regular_path(&dir.join("file/below")).unwrap_err(), rustix::io::Errno::NOTDIR);
    }
    // Mounts at names inside the nodev directory: a file, and a device node from the mount that allows devices.
    std::fs::write(dev.path().join("outside"), "bound").unwrap();
    for (source, target) in [("outside", "bound-file"), ("null", "bound-null")] {
        std::fs::write(nodev.path().join(target), "").unwrap();
        let status = Command::new("mount")
            .arg("--bind")
            .arg(dev.path().join(source))
            .arg(nodev.path().join(target))
            .status();
        assert!(status.unwrap().success(), "mount --bind {source}");
    }
    assert_eq!(read(open_regular_path(&nodev.path().join("bound-file")).unwrap()), "bound");
    assert!(matches!(open_regular_path(&nodev.path().join("bound-null")), Ok(Opened::Special)));
    for target in ["bound-file", "bound-null"] {
        let _ = Command::new("umount").arg(nodev.path().join(target)).status();
    }
}
