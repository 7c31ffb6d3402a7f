//! The case-folding probe of a root: a store refuses a directory where names that differ only in case would name
//! one file.

use std::os::fd::BorrowedFd;
use std::path::Path;

use memory_entry::{StorageError, StorageErrorKind};
use memory_fs::{FILE_MODE, RootHandle, fresh_name, read_names, retry};
use rustix::fs::{self, AtFlags, OFlags};
use rustix::io::Errno;

/// `FS_CASEFOLD_FL` from `linux/fs.h`: the directory looks names up case-insensitively (ext4, f2fs, tmpfs).
const FS_CASEFOLD_FL: u32 = 0x4000_0000;

/// Whether `dir` has the casefold attribute. File systems without inode flags say no.
pub(crate) fn has_casefold_flag(dir: BorrowedFd<'_>) -> bool {
    fs::ioctl_getflags(dir).is_ok_and(|flags| flags.bits() & FS_CASEFOLD_FL != 0)
}

/// What looking a name up in another case showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaseProbe {
    /// The other case is another file, or nothing.
    Sensitive,
    /// The other case found the same file.
    Insensitive,
    /// No name could be tried (an empty root that cannot be written).
    Unknown,
}

/// Looks a name of the root up with its ASCII case swapped: an existing name when one has letters, else a probe
/// file created for the purpose (and removed).
pub(crate) fn probe_case(root: &RootHandle) -> Result<CaseProbe, Errno> {
    let dir = root.fd();
    let names: Vec<String> = read_names(dir)?.into_iter().map(|(name, _)| name).collect();
    let identity = |name: &str| {
        retry(|| fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)).map(|stat| (stat.st_dev, stat.st_ino))
    };
    if let Some(probe) = probe_existing(&names, identity) {
        return probe;
    }
    let name = fresh_name(".case-probe:");
    match root.open_at(dir, &name, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, FILE_MODE) {
        Ok(_) => {}
        Err(Errno::ROFS | Errno::ACCESS | Errno::PERM) => return Ok(CaseProbe::Unknown),
        Err(e) => return Err(e),
    }
    let probe = probe_existing(std::slice::from_ref(&name), identity);
    let _ = fs::unlinkat(dir, name.as_str(), AtFlags::empty());
    probe.unwrap_or(Ok(CaseProbe::Unknown))
}

/// The detection logic: takes the first of `names` that has ASCII letters and whose other case is not listed too,
/// and compares the identity (device, inode) `identity` gives for both cases. `None` when no name qualifies.
fn probe_existing<I: PartialEq>(
    names: &[String],
    identity: impl Fn(&str) -> Result<I, Errno>,
) -> Option<Result<CaseProbe, Errno>> {
    for name in names {
        let swapped = swap_case(name);
        if swapped == *name || names.contains(&swapped) {
            continue;
        }
        let Ok(original) = identity(name) else { continue };
        return Some(match identity(&swapped) {
            Ok(other) if other == original => Ok(CaseProbe::Insensitive),
            Ok(_) | Err(Errno::NOENT) => Ok(CaseProbe::Sensitive),
            Err(e) => Err(e),
        });
    }
    None
}

fn swap_case(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_lowercase() { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() })
        .collect()
}

/// The decision on a root: refused when names fold case, by the volume or by the casefold attribute.
pub(crate) fn case_verdict(probe: CaseProbe, casefold_flag: bool, root: &Path) -> Result<(), StorageError> {
    if casefold_flag {
        return Err(case_error(&format!("the memory root `{}` has the casefold attribute", root.display())));
    }
    match probe {
        CaseProbe::Insensitive => Err(case_error(&format!(
            "the memory root `{}` is on a case-insensitive file system",
            root.display()
        ))),
        CaseProbe::Sensitive | CaseProbe::Unknown => Ok(()),
    }
}

/// The error for a directory whose names fold case.
pub(crate) fn case_error(what: &str) -> StorageError {
    StorageError::about(
        StorageErrorKind::CaseInsensitive,
        None,
        format!("{what}: IDs that differ only in case would alias one file; use a case-sensitive directory"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_verdict_refuses_folding() {
        let root = Path::new("/mem");
        assert!(case_verdict(CaseProbe::Sensitive, false, root).is_ok());
        assert!(case_verdict(CaseProbe::Unknown, false, root).is_ok());
        let err = case_verdict(CaseProbe::Insensitive, false, root).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::CaseInsensitive);
        assert_eq!(
            err.to_string(),
            "the memory root `/mem` is on a case-insensitive file system: IDs that differ only in case would alias \
             one file; use a case-sensitive directory"
        );
        let err = case_verdict(CaseProbe::Sensitive, true, root).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::CaseInsensitive);
        assert!(err.to_string().contains("casefold attribute"));
    }

    #[test]
    fn probe_on_this_file_system_is_case_sensitive() {
        let dir = tempfile::tempdir().unwrap();
        let root = RootHandle::open(&dir.path().canonicalize().unwrap(), false).unwrap();
        // Empty root: a probe file is created and removed.
        assert_eq!(probe_case(&root).unwrap(), CaseProbe::Sensitive);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A name in the root is looked up in the other case.
        std::fs::create_dir(dir.path().join("shared")).unwrap();
        assert_eq!(probe_case(&root).unwrap(), CaseProbe::Sensitive);
        assert!(!has_casefold_flag(root.fd()));
    }

    #[test]
    fn detection_logic_with_injected_lookups() {
        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // A folding volume: every case of a name is the same file.
        let folding = |name: &str| Ok::<_, Errno>(name.to_ascii_lowercase());
        assert_eq!(probe_existing(&names(&["shared"]), folding), Some(Ok(CaseProbe::Insensitive)));
        // A case-sensitive volume: the other case does not exist.
        let strict = |name: &str| if name == "shared" { Ok(1) } else { Err(Errno::NOENT) };
        assert_eq!(probe_existing(&names(&["shared"]), strict), Some(Ok(CaseProbe::Sensitive)));
        // Both cases listed (only possible when case-sensitive), or no letters: no verdict from that name.
        assert_eq!(probe_existing(&names(&["a", "A", "123", ".-"]), folding), None);
        assert_eq!(probe_existing(&names(&["a", "A", "b"]), folding), Some(Ok(CaseProbe::Insensitive)));
        assert_eq!(probe_existing(&names(&[]), folding), None);
    }
}
