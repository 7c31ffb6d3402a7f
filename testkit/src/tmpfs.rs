//! A throwaway tmpfs for tests of what depends on mount options (`nodev`, or `dev`): mounted at a fresh directory
//! when the tests run as root, unmounted when dropped (also when the test fails).

use std::path::Path;
use std::process::Command;

/// A tmpfs mounted at a fresh temporary directory.
#[derive(Debug)]
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a 64 MiB tmpfs with `options` (`nodev`, or `dev`, plus any others, comma-separated); `None` when
    /// not running as root (the caller says the test is skipped: [`skipped`]).
    ///
    /// # Panics
    ///
    /// When running as root and `mount` fails.
    pub fn mount(options: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        // A directory just created is owned by the effective user.
        if std::os::unix::fs::MetadataExt::uid(&dir.path().metadata().unwrap()) != 0 {
            return None;
        }
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("{options},size=64m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "mount -t tmpfs -o {options} failed: {status}");
        Some(Tmpfs { dir })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily, so that a descriptor still open in a failing test does not keep the mount.
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// Says on stderr that the test `what` is skipped because mounting a tmpfs needs root.
pub fn skipped(what: &str) {
    eprintln!("note: {what} is skipped: mounting a tmpfs needs root");
}
