//! Instants: read from any RFC 3339 timestamp, written in UTC with milliseconds.

use std::fmt;
use std::str::FromStr;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::{InvalidFieldError, Ttl};

/// An instant. Any RFC 3339 timestamp is read and compared as an instant; it is always written in UTC with
/// millisecond precision (`2026-11-29T22:33:13.123Z`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(OffsetDateTime);

const WRITTEN_FORMAT: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

impl Timestamp {
    /// The current time, from the system clock. The pure crates never call this; the service does, once per call.
    pub fn now() -> Timestamp {
        Timestamp(OffsetDateTime::now_utc())
    }

    /// Parses any RFC 3339 timestamp (any offset, any sub-second precision).
    ///
    /// # Errors
    ///
    /// [`InvalidFieldError`] (field `timestamp`) when `text` is not RFC 3339 or lies outside years 1–9999.
    pub fn parse(text: &str) -> Result<Timestamp, InvalidFieldError> {
        let bad = || {
            InvalidFieldError::new(
                "timestamp",
                format!("`{}` is not an RFC 3339 timestamp", memory_id::shown(text)),
            )
        };
        let parsed = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| bad())?;
        let utc = parsed.to_offset(time::UtcOffset::UTC);
        if !(1..=9999).contains(&utc.year()) {
            return Err(bad());
        }
        Ok(Timestamp(utc))
    }

    /// The instant `millis` milliseconds after the Unix epoch, if representable.
    pub fn from_unix_millis(millis: i64) -> Option<Timestamp> {
        let nanos = i128::from(millis) * 1_000_000;
        OffsetDateTime::from_unix_timestamp_nanos(nanos).ok().map(Timestamp)
    }

    /// The instant `nanos` nanoseconds after the Unix epoch, clamped to the years 1–9999 that timestamps are written
    /// in (a file's mtime can lie outside them; it must still print as a four-digit year).
    pub fn from_unix_nanos_clamped(nanos: i128) -> Timestamp {
        const FIRST: i128 = -62_135_596_800_000_000_000; // 0001-01-01T00:00:00Z
        const LAST: i128 = 253_402_300_799_999_000_000; // 9999-12-31T23:59:59.999Z
        let nanos = nanos.clamp(FIRST, LAST);
        OffsetDateTime::from_unix_timestamp_nanos(nanos)
            .map_or(Timestamp(OffsetDateTime::UNIX_EPOCH), Timestamp)
    }

    /// Nanoseconds since the Unix epoch (for ordering by instant).
    pub fn unix_nanos(self) -> i128 {
        self.0.unix_timestamp_nanos()
    }

    /// Milliseconds since the Unix epoch, truncated.
    pub fn unix_millis(self) -> i64 {
        let millis = self.0.unix_timestamp_nanos().div_euclid(1_000_000);
        i64::try_from(millis).unwrap_or(i64::MAX)
    }

    /// This instant plus `ttl`; `None` when the result is past year 9999.
    pub fn checked_add(self, ttl: Ttl) -> Option<Timestamp> {
        let secs = i64::try_from(ttl.as_secs()).ok()?;
        let later = self.0.checked_add(time::Duration::seconds(secs))?;
        (later.year() <= 9999).then_some(Timestamp(later))
    }

    /// This instant truncated to whole milliseconds, as it will read back after being written.
    pub fn truncated_to_millis(self) -> Timestamp {
        let nanos = self.0.unix_timestamp_nanos();
        let truncated = nanos - nanos.rem_euclid(1_000_000);
        OffsetDateTime::from_unix_timestamp_nanos(truncated).map(Timestamp).unwrap_or(self)
    }

    /// The `time` value, in UTC.
    pub fn as_offset_date_time(self) -> OffsetDateTime {
        self.0
    }
}

impl From<OffsetDateTime> for Timestamp {
    fn from(value: OffsetDateTime) -> Self {
        Timestamp(value.to_offset(time::UtcOffset::UTC))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.format(WRITTEN_FORMAT) {
            Ok(text) => f.write_str(&text),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

impl FromStr for Timestamp {
    type Err = InvalidFieldError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Timestamp::parse(s)
    }
}
