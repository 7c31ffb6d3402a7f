//! Tests of `memory-id`: the conformance vectors of `conformance/ids.json`, tables of valid and invalid inputs,
//! properties against an independent checker, and the public interface as an adopter sees it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod conformance;
mod fuzzed;
mod invalid;
mod properties;
mod public_interface;
mod valid;

use memory_id::{InvalidIdReason, InvalidMemoryIdError};
use testkit::model::id::Refusal;

/// A refusal as the reference model (`testkit::model::id`) writes it: the reason code and the bad segment's
/// 1-based position, for the reasons about one segment.
fn refusal(error: &InvalidMemoryIdError) -> Refusal {
    let segment = match error.reason() {
        InvalidIdReason::Segment { index, .. } => Some(index),
        _ => None,
    };
    (error.reason().code(), segment)
}
