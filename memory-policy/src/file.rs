//! Reading a definition file: a regular file of bounded size, and nothing else ever opened for reading.

use std::io;
use std::path::Path;

/// Reads the regular file at `path` as UTF-8, at most `max_bytes`. A symlink, directory, FIFO, socket or device
/// is an error (`InvalidInput`) without being opened for reading: on Linux the name is resolved with
/// `O_PATH | O_NOFOLLOW` and only a regular file is reopened, through `/proc/self/fd`, or, in a directory on a mount
/// `nodev`, opened there directly (`memory_fs::open_regular_path`).
pub(crate) fn read_regular(path: &Path, max_bytes: u64) -> io::Result<String> {
    let (file, size) = open_regular(path)?;
    let mut bytes = Vec::new();
    if !memory_fs::read_bounded(file, size, max_bytes, &mut bytes)? {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is larger than {} KiB", max_bytes / 1024),
        ));
    }
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8"))
}

fn not_regular(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("it is {what}, not a regular file"))
}

/// The open file and the size `fstat` saw.
#[cfg(target_os = "linux")]
fn open_regular(path: &Path) -> io::Result<(std::fs::File, u64)> {
    match memory_fs::open_regular_path(path)? {
        memory_fs::Opened::Regular { fd, stat } => Ok((fd.into(), u64::try_from(stat.st_size).unwrap_or(0))),
        memory_fs::Opened::Symlink => Err(not_regular("a symbolic link")),
        memory_fs::Opened::Directory => Err(not_regular("a directory")),
        memory_fs::Opened::Special => Err(not_regular("a FIFO, socket or device")),
    }
}

/// The open file, and no size (read until the end).
#[cfg(not(target_os = "linux"))]
fn open_regular(path: &Path) -> io::Result<(std::fs::File, u64)> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Err(not_regular("a symbolic link"));
    }
    if !meta.is_file() {
        return Err(not_regular("a directory, FIFO, socket or device"));
    }
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular("a directory, FIFO, socket or device"));
    }
    Ok((file, u64::MAX))
}
