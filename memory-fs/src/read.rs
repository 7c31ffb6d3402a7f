//! Bounded reads: never more than one byte past the limit.

use std::io::{self, Read};

/// Reads `reader` into `bytes` (cleared first; its allocation is kept, so one buffer can serve many files) until
/// the end or one byte past `limit`, whichever comes first; `true` when the end came first (everything was read
/// and it is at most `limit` bytes), `false` when there is more than `limit`.
///
/// `size` is what `fstat` said of a regular file: the buffer starts one byte larger, and a read that ends short of
/// filling it at or past `size` is taken as the end of the file, which saves the read that would return 0. A file
/// that grew after `fstat` is read on, up to one byte past `limit`. For a reader that is not a regular file (whose
/// short reads say nothing about its end), pass `u64::MAX`: it is then read until a read returns 0.
///
/// # Errors
///
/// The reader's own error; `Interrupted` is retried.
pub fn read_bounded(mut reader: impl Read, size: u64, limit: u64, bytes: &mut Vec<u8>) -> io::Result<bool> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX - 1).min(usize::MAX - 1);
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    bytes.clear();
    bytes.resize(size.saturating_add(1).max(64).min(limit + 1), 0);
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            if filled > limit {
                break;
            }
            // The file grew after `fstat` (or its size is unknown): read on, up to one byte past the limit.
            bytes.resize(bytes.len().saturating_mul(2).min(limit + 1), 0);
        }
        match reader.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if filled < bytes.len() && filled >= size {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(filled);
    Ok(filled <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `chunk` bytes per read, of a source that may be longer than it claims.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
        reads: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            let n = buf.len().min(self.chunk).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn reads_whole_files_up_to_the_limit() {
        let mut buf = Vec::new();
        assert!(read_bounded(&b"hello"[..], 5, 5, &mut buf).unwrap());
        assert_eq!(buf, b"hello");
        assert!(read_bounded(&b""[..], 0, 0, &mut buf).unwrap());
        assert!(buf.is_empty());
        // One byte past the limit is all that is read of a larger file.
        assert!(!read_bounded(&b"hello!"[..], 6, 5, &mut buf).unwrap());
        assert_eq!(buf, b"hello!");
    }

    #[test]
    fn a_file_that_grew_after_fstat_is_read_to_one_past_the_limit() {
        let data = vec![7u8; 10_000];
        let mut buf = Vec::new();
        // `fstat` said 10 bytes; the reader hands out full buffers, so the end is not assumed.
        assert!(!read_bounded(&data[..], 10, 1000, &mut buf).unwrap());
        assert_eq!(buf.len(), 1001);
        assert!(read_bounded(&data[..], 10, 10_000, &mut buf).unwrap());
        assert_eq!(buf.len(), 10_000);
    }

    #[test]
    fn an_unknown_size_reads_until_the_end() {
        let data = vec![1u8; 300];
        let mut buf = Vec::new();
        let trickle = Trickle { data: &data, chunk: 7, reads: 0 };
        assert!(read_bounded(trickle, u64::MAX, 1000, &mut buf).unwrap());
        assert_eq!(buf.len(), 300);
        let trickle = Trickle { data: &data, chunk: 7, reads: 0 };
        assert!(!read_bounded(trickle, u64::MAX, 100, &mut buf).unwrap());
        assert_eq!(buf.len(), 101);
    }

    #[test]
    fn a_regular_file_of_the_expected_size_costs_one_read() {
        let data = vec![1u8; 300];
        let mut buf = Vec::new();
        let mut trickle = Trickle { data: &data, chunk: usize::MAX, reads: 0 };
        assert!(read_bounded(&mut trickle, 300, 1000, &mut buf).unwrap());
        assert_eq!((buf.len(), trickle.reads), (300, 1));
    }
}
