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

    /// Folds one piece onto the end of `folded`. The caller joins pieces only at a `\n` (see the type docs).
    fn push_folded(&mut self, text: &str) {
        let FoldBuffer { folded, nfc } = self;
        if text.is_ascii() {
            let start = folded.len();
            folded.push_str(text);
            folded[start..].make_ascii_lowercase();
            return;
        }
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
    fn buffer_is_reused() {
        let mut buffer = FoldBuffer::new();
        buffer.fold_entry("shared:long", &"X".repeat(1000));
        assert_eq!(buffer.fold_entry("shared:a", "B"), "shared:a\nb");
    }
}
