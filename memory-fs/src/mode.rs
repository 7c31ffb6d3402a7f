//! The modes of what is created: readable and writable by the owner only.

use rustix::fs::Mode;

/// The mode of every file created: 0600.
pub const FILE_MODE: Mode = Mode::RUSR.union(Mode::WUSR);
/// The mode of every directory created: 0700.
pub const DIR_MODE: Mode = Mode::RWXU;
