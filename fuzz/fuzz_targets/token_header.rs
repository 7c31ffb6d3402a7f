//! Fuzz target `token_header`: any bytes as an `Authorization` value and as a token's text. A credential read as a
//! token is exactly `Bearer` (any case), spaces and a 60-character token that parses back to itself; a malformed
//! one names at most a well-formed ID; nothing panics, and `Debug` never shows a secret. The same property runs
//! on stable as a proptest (`tests/alp_memory/token.rs`).
#![no_main]

use alp_memory::token::{BearerToken, Credential};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    match Credential::from_header(Some(data)) {
        Credential::Token(token) => {
            let text = token.reveal();
            assert_eq!(text.len(), 60);
            assert_eq!(BearerToken::parse(&text).as_ref(), Ok(&token));
            let trimmed = data.trim_ascii();
            assert!(trimmed.ends_with(text.as_bytes()));
            assert!(trimmed[..6].eq_ignore_ascii_case(b"bearer"));
            assert!(!format!("{token:?}").contains(&text[17..]));
        }
        Credential::Malformed { id: Some(id) } => {
            assert!(id.as_str().len() == 12 && id.as_str().bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
        Credential::Malformed { id: None } | Credential::Missing => {}
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(token) = BearerToken::parse(text) {
            assert_eq!(token.reveal(), text);
        }
    }
});
