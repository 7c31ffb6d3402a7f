//! Reading a definition file: a regular file of bounded size, and nothing else ever opened for reading.

use std::io::{self, Read as _};
use std::path::Path;

/// Reads the regular file at `path` as UTF-8, at most `max_bytes`. A symlink, directory, FIFO, socket or device
/// is an error (`InvalidInput`) without being opened for reading: on Linux the name is resolved with
/// `O_PATH | O_NOFOLLOW` and only a regular file is reopened, through `/proc/self/fd`.
pub(crate) fn read_regular(path: &Path, max_bytes: u64) -> io::Result<String> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
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

#[cfg(target_os = "linux")]
fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    use rustix::fs::{FileType, Mode, OFlags};
    use std::os::fd::AsRawFd as _;

    let handle = rustix::fs::open(path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
    let stat = rustix::fs::fstat(&handle)?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => return Err(not_regular("a symbolic link")),
        FileType::Directory => return Err(not_regular("a directory")),
        _ => return Err(not_regular("a FIFO, socket or device")),
    }
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    if let Ok(proc_fd) = rustix_linux_procfs::proc_self_fd() {
        let number = handle.as_raw_fd().to_string();
        if let Ok(fd) = rustix::fs::openat(proc_fd, number.as_str(), flags, Mode::empty()) {
            return Ok(fd.into());
        }
    }
    // Without procfs: open the name again, never following a symlink or blocking, and insist on the same inode.
    let fd = rustix::fs::open(path, flags | OFlags::NOFOLLOW | OFlags::NONBLOCK, Mode::empty())?;
    let again = rustix::fs::fstat(&fd)?;
    if (again.st_dev, again.st_ino) != (stat.st_dev, stat.st_ino) {
        return Err(io::Error::new(io::ErrorKind::NotFound, "it was replaced while being opened"));
    }
    Ok(fd.into())
}

#[cfg(not(target_os = "linux"))]
fn open_regular(path: &Path) -> io::Result<std::fs::File> {
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
    Ok(file)
}
