//! Reading a log one line at a time, never holding more than one line of at most [`MAX_LINE_BYTES`].

use std::io::{self, BufRead as _, BufReader, Read};

use crate::MAX_LINE_BYTES;

/// What [`LineReader::next`] read into its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line ending in `\n` (kept in the buffer).
    Complete,
    /// The end of the input in the middle of a line: a torn final line (the buffer holds it).
    Torn,
    /// A line longer than [`MAX_LINE_BYTES`]: the buffer holds its first bytes, and nothing after it is read.
    TooLong,
    /// The end of the input.
    End,
}

/// Lines of a reader, each at most [`MAX_LINE_BYTES`] long (its `\n` not counted).
pub(crate) struct LineReader<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    /// Where the line in `buf` starts, in bytes from the start of the input.
    offset: u64,
    /// How many lines were read, the current one included.
    number: u64,
}

impl<R: Read> LineReader<R> {
    pub(crate) fn new(reader: R) -> LineReader<R> {
        LineReader {
            reader: BufReader::with_capacity(64 * 1024, reader),
            buf: Vec::new(),
            offset: 0,
            number: 0,
        }
    }

    /// Reads the next line into the buffer ([`line`](Self::line)).
    pub(crate) fn next(&mut self) -> io::Result<Line> {
        self.offset += self.buf.len() as u64;
        self.buf.clear();
        // At most one byte more than a longest line and its `\n`: enough to tell a line that is too long.
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut self.reader).take(limit).read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(Line::End);
        }
        self.number += 1;
        Ok(if self.buf.ends_with(b"\n") {
            Line::Complete
        } else if self.buf.len() as u64 == limit {
            Line::TooLong
        } else {
            Line::Torn
        })
    }

    /// The line read last, with its `\n` when it has one.
    pub(crate) fn line(&self) -> &[u8] {
        &self.buf
    }

    /// Where the line read last starts, in bytes from the start of the input.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The 1-based number of the line read last.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Vec<(Line, usize, u64)> {
        let mut reader = LineReader::new(input);
        let mut out = Vec::new();
        loop {
            let line = reader.next().unwrap();
            out.push((line, reader.line().len(), reader.offset()));
            if matches!(line, Line::End | Line::TooLong | Line::Torn) {
                return out;
            }
        }
    }

    #[test]
    fn lines_torn_lines_and_the_end() {
        assert_eq!(all(b""), [(Line::End, 0, 0)]);
        assert_eq!(all(b"a\nbc\n"), [(Line::Complete, 2, 0), (Line::Complete, 3, 2), (Line::End, 0, 5)]);
        assert_eq!(all(b"a\nbc"), [(Line::Complete, 2, 0), (Line::Torn, 2, 2)]);
    }

    #[test]
    fn a_line_of_the_longest_length_is_read_and_a_longer_one_is_not() {
        let mut longest = vec![b'x'; MAX_LINE_BYTES];
        longest.push(b'\n');
        assert_eq!(
            all(&longest),
            [(Line::Complete, MAX_LINE_BYTES + 1, 0), (Line::End, 0, longest.len() as u64)]
        );
        let mut longer = vec![b'x'; MAX_LINE_BYTES + 1];
        longer.extend_from_slice(b"\nnext\n");
        assert_eq!(all(&longer), [(Line::TooLong, MAX_LINE_BYTES + 1, 0)]);
    }
}
