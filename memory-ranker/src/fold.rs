//! Folding: the one text transformation the ranker applies, to query terms and entries alike.

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

/// Folds text for matching: Unicode NFC first, then full Unicode lower-case mapping ([`str::to_lowercase`]).
///
/// This is the reference definition; [`FoldBuffer`] computes the same result faster. Lower-casing is a case
/// *mapping*, not case folding: `ß` stays `ß` (it does not become `ss`), `İ` (U+0130) becomes `i` followed by
/// U+0307, and a capital sigma becomes `ς` at the end of a word and `σ` elsewhere, exactly as
/// [`str::to_lowercase`] decides.
///
/// ```
/// use memory_ranker::fold;
///
/// assert_eq!(fold("Tiếng VIỆT"), "tiếng việt");
/// // NFD input (e + U+0301) folds to the same NFC text as the precomposed é.
/// assert_eq!(fold("Cafe\u{301}"), fold("CAFÉ"));
/// assert_ne!(fold("STRASSE"), fold("Straße"));
/// ```
pub fn fold(text: &str) -> String {
    text.nfc().collect::<String>().to_lowercase()
}

/// A reusable buffer that folds an entry's `id + "\n" + content` without allocating per entry once it has grown.
///
/// Keep one per thread (it is cheap to create and `Send`); a [`Scorer`](crate::Scorer) borrows it for each entry.
///
/// The result is always `fold(&format!("{id}\n{content}"))`. Two facts make the faster route equal to that:
///
/// * **The join can be folded piecewise.** `\n` is a starter (canonical combining class 0) that has no
///   decomposition and composes with nothing, so NFC never reorders or composes across it:
///   `NFC(a + "\n" + b) = NFC(a) + "\n" + NFC(b)`. Lower-casing maps each character on its own except a capital
///   sigma, whose final/non-final choice looks at the nearest non-case-ignorable character on each side; `\n` is
///   neither cased nor case-ignorable, so that look stops at the join. Hence `fold(a + "\n" + b) = fold(a) + "\n" +
///   fold(b)`, and a query term (which never contains whitespace) is matched against exactly the reference text.
/// * **ASCII is already folded but for case.** ASCII text is in NFC and its full lower-case mapping is the bytewise
///   ASCII one, so an ASCII piece is copied and lower-cased in place. Other text is normalised only when the NFC
///   quick check cannot prove it is already NFC, and lower-cased character by character, which is what
///   [`str::to_lowercase`] does for every character but `Σ`; text holding a `Σ` goes through [`str::to_lowercase`]
///   itself.
///
/// A property test checks the equality on arbitrary text.
#[derive(Debug, Default, Clone)]
pub struct FoldBuffer {
    folded: String,
    nfc: String,
}

impl FoldBuffer {
    /// An empty buffer.
    pub fn new() -> FoldBuffer {
        FoldBuffer::default()
    }

    /// Folds `id + "\n" + content` into the buffer and returns it. The previous contents are discarded.
    ///
    /// ```
    /// use memory_ranker::{fold, FoldBuffer};
    ///
    /// let mut buffer = FoldBuffer::new();
    /// assert_eq!(buffer.fold_entry("shared:Team", "ΟΔΟΣ"), fold("shared:Team\nΟΔΟΣ"));
    /// ```
    pub fn fold_entry(&mut self, id: &str, content: &str) -> &str {
        self.folded.clear();
        self.push_folded(id);
        self.folded.push('\n');
        self.push_folded(content);
        &self.folded
    }

    /// `id + "\n" + content` with ASCII letters lower-cased and every other byte as it is, when that text and the
    /// folded text hold the same runs of ASCII characters: then an ASCII term occurs in one exactly when it occurs in
    /// the other, and scoring needs no Unicode folding. `None` when the text holds a character that folding could
    /// turn into ASCII or that could change an ASCII character next to it (see [`may_touch_ascii`]).
    pub(crate) fn ascii_lowered_entry(&mut self, id: &str, content: &str) -> Option<&str> {
        if may_touch_ascii(id) || may_touch_ascii(content) {
            return None;
        }
        self.folded.clear();
        self.folded.reserve(id.len() + 1 + content.len());
        self.folded.push_str(id);
        self.folded.push('\n');
        self.folded.push_str(content);
        // Lower-casing ASCII bytes never touches the bytes of other characters (all at or above 0x80).
        self.folded.make_ascii_lowercase();
        Some(&self.folded)
    }

    /// Folds one piece onto the end of `folded`. The caller joins pieces only at a `\n` (see the type docs).
    fn push_folded(&mut self, text: &str) {
        let FoldBuffer { folded, nfc } = self;
        let start = folded.len();
        if push_folded_runs(text, folded) {
            return;
        }
        folded.truncate(start);
        let normalized: &str = if is_nfc_quick(text.chars()) == IsNormalized::Yes {
            text
        } else {
            nfc.clear();
            nfc.extend(text.nfc());
            nfc
        };
        if normalized.contains('Σ') {
            // The final-sigma rule needs the context that only `str::to_lowercase` looks at.
            folded.push_str(&normalized.to_lowercase());
        } else {
            for c in normalized.chars() {
                if c.is_ascii() {
                    folded.push(c.to_ascii_lowercase());
                } else {
                    folded.extend(c.to_lowercase());
                }
            }
        }
    }
}

/// The common case, in one pass: text that the NFC quick check proves normalised and that holds no capital sigma.
/// ASCII runs are copied and lower-cased bytewise; each run of other characters is quick-checked on its own and
/// lower-cased character by character. Returns `false` (leaving a partial result to discard) when the text needs
/// normalising or the final-sigma rule.
///
/// Checking runs separately gives the quick check's answer for the whole text: an ASCII character has canonical
/// combining class 0 and quick-check value Yes, so the check's state is the same at the start of every run of other
/// characters as at the start of the text.
fn push_folded_runs(text: &str, folded: &mut String) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // ASCII bytes never occur inside a multi-byte character, so both run ends are character boundaries.
        let ascii_end = at + ascii_prefix_len(&bytes[at..]);
        if ascii_end > at {
            let start = folded.len();
            folded.push_str(&text[at..ascii_end]);
            folded[start..].make_ascii_lowercase();
        }
        if ascii_end == bytes.len() {
            break;
        }
        let run_end = bytes[ascii_end..].iter().position(u8::is_ascii).map_or(bytes.len(), |n| ascii_end + n);
        if !push_non_ascii_run(&text[ascii_end..run_end], folded) {
            return false;
        }
        at = run_end;
    }
    true
}

/// Whether `c` is a starter that the NFC quick check always answers Yes for (canonical combining class 0, quick-check
/// value Yes): the check's state after it is the same as at the start of a text, exactly as after an ASCII
/// character. Covers Latin-1 Supplement, Latin Extended-A and -B, and Latin Extended Additional (Vietnamese), as a
/// unit test proves character by character.
fn is_quick_check_reset(c: char) -> bool {
    matches!(c, '\u{A0}'..='\u{24F}' | '\u{1E00}'..='\u{1EFF}')
}

/// Lower-cases a run of non-ASCII characters onto `folded`, quick-checking only the stretches that are not made of
/// [`is_quick_check_reset`] characters. `false` when a stretch needs normalising or holds a capital sigma.
fn push_non_ascii_run(run: &str, folded: &mut String) -> bool {
    let mut rest = run;
    while !rest.is_empty() {
        let stable = rest.find(|c| !is_quick_check_reset(c)).unwrap_or(rest.len());
        let table = latin_lowercase_table();
        for c in rest[..stable].chars() {
            match table.get(c) {
                Some(lower) => folded.push(lower),
                None => folded.extend(c.to_lowercase()),
            }
        }
        rest = &rest[stable..];
        let other = rest.find(is_quick_check_reset).unwrap_or(rest.len());
        let stretch = &rest[..other];
        if !stretch.is_empty() {
            if stretch.contains('Σ') || is_nfc_quick(stretch.chars()) != IsNormalized::Yes {
                return false;
            }
            for c in stretch.chars() {
                folded.extend(c.to_lowercase());
            }
        }
        rest = &rest[other..];
    }
    true
}

/// The single-character lower-case mappings of the [`is_quick_check_reset`] ranges, computed once from
/// [`char::to_lowercase`] itself (so it cannot disagree with it): a table lookup instead of the standard library's
/// search, for the letters of most Latin-script text.
struct LatinLowercase {
    latin: Vec<Option<char>>,
    extended_additional: Vec<Option<char>>,
}

impl LatinLowercase {
    fn build() -> LatinLowercase {
        let single = |c: char| {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => Some(l),
                _ => None,
            }
        };
        let range = |from: u32, to: u32| (from..=to).map(|n| char::from_u32(n).and_then(single)).collect();
        LatinLowercase { latin: range(0xA0, 0x24F), extended_additional: range(0x1E00, 0x1EFF) }
    }

    fn get(&self, c: char) -> Option<char> {
        let n = u32::from(c);
        let (table, base) = match n {
            0xA0..=0x24F => (&self.latin, 0xA0),
            0x1E00..=0x1EFF => (&self.extended_additional, 0x1E00),
            _ => return None,
        };
        usize::try_from(n - base).ok().and_then(|i| table.get(i).copied().flatten())
    }
}

fn latin_lowercase_table() -> &'static LatinLowercase {
    static TABLE: std::sync::OnceLock<LatinLowercase> = std::sync::OnceLock::new();
    TABLE.get_or_init(LatinLowercase::build)
}

/// The UTF-8 encodings of the characters outside U+0300–U+037F whose folding holds an ASCII character: U+0130
/// (`İ`, lower-cased to `i` + U+0307), U+1FEF (GREEK VARIA, NFC `` ` ``) and U+212A (KELVIN SIGN, NFC `K`). A unit
/// test checks every character against [`fold`].
const ASCII_MAKERS: [&[u8]; 3] = ["\u{130}".as_bytes(), "\u{1FEF}".as_bytes(), "\u{212A}".as_bytes()];

/// Whether folding `text` could make its ASCII runs differ from its ASCII runs lower-cased: it holds a character of
/// U+0300–U+037F (the combining diacritical marks, the only marks NFC composes with an ASCII letter, and U+0340–U+037F,
/// which hold singletons such as U+037E, NFC `;`; their UTF-8 starts with byte 0xCC or 0xCD), or one of
/// [`ASCII_MAKERS`]. Otherwise NFC leaves every ASCII character and its neighbours' ASCII-ness alone, and no
/// other character lower-cases or normalises to ASCII, so an ASCII term occurs in `fold(text)` exactly when it
/// occurs in `text` with its ASCII letters lower-cased.
pub(crate) fn may_touch_ascii(text: &str) -> bool {
    let bytes = text.as_bytes();
    if text.is_ascii() {
        return false;
    }
    memchr::memchr2(0xCC, 0xCD, bytes).is_some()
        || ascii_maker_finders().iter().any(|finder| finder.find(bytes).is_some())
}

/// Searchers for [`ASCII_MAKERS`], built once.
fn ascii_maker_finders() -> &'static [memchr::memmem::Finder<'static>; 3] {
    static FINDERS: std::sync::OnceLock<[memchr::memmem::Finder<'static>; 3]> = std::sync::OnceLock::new();
    FINDERS.get_or_init(|| ASCII_MAKERS.map(memchr::memmem::Finder::new))
}

/// How many bytes at the start of `bytes` are ASCII, eight at a time where it can.
fn ascii_prefix_len(bytes: &[u8]) -> usize {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut len = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if u64::from_ne_bytes(word) & HIGH_BITS != 0 {
            break;
        }
        len += 8;
    }
    len + bytes[len..].iter().position(|b| !b.is_ascii()).unwrap_or(bytes.len() - len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_is_lowercased_bytewise() {
        let mut buffer = FoldBuffer::new();
        assert_eq!(buffer.fold_entry("shared:Team", "Hello WORLD"), "shared:team\nhello world");
    }

    #[test]
    fn nfd_content_is_composed() {
        let mut buffer = FoldBuffer::new();
        assert_eq!(buffer.fold_entry("shared:x", "Tie\u{302}\u{301}ng"), "shared:x\ntiếng");
    }

    #[test]
    fn final_sigma_does_not_look_across_the_join() {
        // Σ at the end of the id is final (cased letter before, join after); at the start of content it is not.
        let mut buffer = FoldBuffer::new();
        assert_eq!(buffer.fold_entry("shared:ΟΔΟΣ", "ΣΑ"), "shared:οδος\nσα");
        assert_eq!(fold("shared:ΟΔΟΣ\nΣΑ"), "shared:οδος\nσα");
    }

    #[test]
    fn ascii_prefix_len_counts_leading_ascii_bytes() {
        for (text, expected) in [
            ("", 0),
            ("abc", 3),
            ("abcdefghij", 10),
            ("abcdefgh\u{e9}", 8),
            ("\u{e9}abc", 0),
            ("abcdefghijklmno\u{e9}x", 15),
        ] {
            assert_eq!(ascii_prefix_len(text.as_bytes()), expected, "{text:?}");
        }
    }

    #[test]
    fn quick_check_reset_characters_are_yes_starters() {
        use unicode_normalization::char::canonical_combining_class;
        let all = ('\u{80}'..='\u{10FFFF}').filter(|c| is_quick_check_reset(*c));
        let mut count = 0;
        for c in all {
            assert_eq!(canonical_combining_class(c), 0, "{c:?} is not a starter");
            assert_eq!(is_nfc_quick(std::iter::once(c)), IsNormalized::Yes, "{c:?}");
            assert_ne!(c, 'Σ');
            count += 1;
        }
        assert_eq!(count, 0x24F - 0xA0 + 1 + 0x100);
    }

    #[test]
    fn latin_table_agrees_with_to_lowercase() {
        let table = latin_lowercase_table();
        for c in ('\u{A0}'..='\u{24F}').chain('\u{1E00}'..='\u{1EFF}') {
            let expected: String = c.to_lowercase().collect();
            match table.get(c) {
                Some(lower) => assert_eq!(lower.to_string(), expected, "{c:?}"),
                None => assert_ne!(
                    expected.chars().count(),
                    1,
                    "{c:?} maps to one character but is not in the table"
                ),
            }
        }
        assert_eq!(table.get('Ệ'), Some('ệ'));
        assert_eq!(table.get('İ'), None, "two characters: left to to_lowercase");
        assert_eq!(table.get('a'), None);
    }

    /// Every character whose folding holds an ASCII character, other than ASCII itself, is one
    /// [`may_touch_ascii`] looks for; and every composition with an ASCII first character uses only marks of
    /// U+0300–U+036F.
    #[test]
    fn characters_that_fold_to_ascii_are_known() {
        use unicode_normalization::char::decompose_canonical;
        for c in ('\u{80}'..='\u{10FFFF}').filter(|c| !c.is_ascii()) {
            let text = c.to_string();
            if fold(&text).chars().any(|f| f.is_ascii()) {
                assert!(may_touch_ascii(&text), "{c:?} folds to ASCII but is not looked for");
            }
            let mut parts = Vec::new();
            decompose_canonical(c, |part| parts.push(part));
            if parts.first().is_some_and(char::is_ascii) {
                assert!(
                    parts[1..].iter().all(|m| ('\u{300}'..='\u{36F}').contains(m)),
                    "{c:?} composes ASCII with a mark outside U+0300-U+036F"
                );
            }
        }
    }

    #[test]
    fn ascii_lowered_entry_refuses_what_folding_changes() {
        let mut buffer = FoldBuffer::new();
        assert_eq!(buffer.ascii_lowered_entry("shared:A", "Dữ LIỆU"), Some("shared:a\ndữ liỆu"));
        assert_eq!(buffer.ascii_lowered_entry("shared:a", "cafe\u{301}"), None);
        assert_eq!(buffer.ascii_lowered_entry("shared:a", "\u{212A}elvin"), None);
        assert_eq!(buffer.ascii_lowered_entry("shared:\u{130}", "x"), None);
    }

    #[test]
    fn buffer_is_reused() {
        let mut buffer = FoldBuffer::new();
        buffer.fold_entry("shared:long", &"X".repeat(1000));
        assert_eq!(buffer.fold_entry("shared:a", "B"), "shared:a\nb");
    }
}
