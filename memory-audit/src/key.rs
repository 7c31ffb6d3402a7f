//! The optional HMAC key of a chain.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::AuditError;

/// The largest key file accepted, in bytes. HMAC hashes longer keys down to 32 bytes anyway; the cap only stops a
/// misconfigured path (a device, a log file) from being read whole.
pub const MAX_KEY_BYTES: u64 = 64 * 1024;

/// A secret key for HMAC-SHA256 chains: `hash` = HMAC-SHA256(key, `prevHash + "\n" + record without hash`), so that
/// whoever can write the log but does not hold the key cannot recompute the chain after editing it.
///
/// Only the keyed HMAC state is kept, not the key bytes. `Debug` never shows the key.
#[derive(Clone)]
pub struct AuditKey {
    mac: Hmac<Sha256>,
}

impl AuditKey {
    /// Reads the key from a file: its raw bytes, all of them (a trailing newline is part of the key). Where the key
    /// file may live is the caller's decision; it should not be writable by whoever can write the log.
    ///
    /// # Errors
    ///
    /// [`AuditError::KeyUnreadable`] when the file cannot be read or is larger than [`MAX_KEY_BYTES`];
    /// [`AuditError::EmptyKey`] when it is empty.
    pub fn from_file(path: impl AsRef<Path>) -> Result<AuditKey, AuditError> {
        let path = path.as_ref();
        let unreadable = |source| AuditError::KeyUnreadable { path: path.to_owned(), source };
        let mut bytes = Vec::new();
        // The key file may be anything the path names (a secret mounted through a symlink, say): its size is not
        // taken from `fstat`, it is read until the end or one byte past the cap.
        let whole = File::open(path)
            .and_then(|file| memory_fs::read_bounded(file, u64::MAX, MAX_KEY_BYTES, &mut bytes))
            .map_err(unreadable)?;
        if !whole {
            return Err(unreadable(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the key is larger than {MAX_KEY_BYTES} bytes"),
            )));
        }
        AuditKey::from_bytes(&bytes).ok_or_else(|| AuditError::EmptyKey { path: path.to_owned() })
    }

    /// A key from bytes; `None` when `bytes` is empty.
    pub fn from_bytes(bytes: &[u8]) -> Option<AuditKey> {
        if bytes.is_empty() {
            return None;
        }
        // HMAC accepts keys of any length, so this never fails.
        Hmac::<Sha256>::new_from_slice(bytes).ok().map(|mac| AuditKey { mac })
    }

    pub(crate) fn mac(&self) -> Hmac<Sha256> {
        self.mac.clone()
    }
}

impl fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuditKey(..)")
    }
}
