//! `conformance/audit.json` (format in `conformance/README.md`, "Audit logs"): every golden log gets the
//! verifier's answer the vector gives, and every record of the write vectors is written again byte for byte.

use memory_audit::verify_bytes_with;
use testkit::conformance::audit::{Verdict, load};
use testkit::conformance::run;

#[test]
fn every_log_gets_its_answer() {
    run("audit logs", &load().logs, |log, failures| {
        let report = verify_bytes_with(&log.bytes(), log.key().as_ref(), &log.options());
        let got = Verdict::of(&report);
        failures
            .check(got == log.result, || format!("`{}`: expected {:?}, got {got:?}", log.name, log.result));
    });
}

#[test]
fn every_record_is_written_again_byte_for_byte() {
    run("audit writes", &load().writes, |write, failures| {
        let (stored, written) = write.written_again();
        for (n, (stored, written)) in stored.iter().zip(&written).enumerate() {
            failures.check(stored == written, || {
                format!("{:?}, line {}: stored {stored:?}, written {written:?}", write.files, n + 1)
            });
        }
    });
}
