//! Connection URLs: parsing with this crate's defaults, and the password kept out of every message.

use std::time::Duration;

use crate::DatabaseOpenError;

/// The connect timeout of the first connection when the URL names none (`connect_timeout`).
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The URL (or `key=value` connection string) without its password, for messages and output: the password of
/// `user:password@` is removed with its `:`, and a `password` parameter is removed whole. Everything else is kept
/// as written. Text that is not a URL is treated as a `key=value` string.
///
/// ```
/// use memory_postgres::redacted;
///
/// assert_eq!(redacted("postgresql://alp:s3cret@db.internal:5432/alp"), "postgresql://alp@db.internal:5432/alp");
/// assert_eq!(redacted("postgres://alp@db/alp?password=s3cret&sslmode=require"),
/// "postgres://alp@db/alp?sslmode=require"); assert_eq!(redacted("host=db user=alp password='s3 cret' dbname=alp"),
/// "host=db user=alp dbname=alp");
/// ```
pub fn redacted(url: &str) -> String {
    match split_scheme(url) {
        Some((scheme, rest)) => redact_url(scheme, rest),
        None => redact_key_values(url),
    }
}

/// `postgres://` or `postgresql://` and the rest, as the client's URL parser recognises them.
fn split_scheme(url: &str) -> Option<(&str, &str)> {
    ["postgresql://", "postgres://"]
        .into_iter()
        .find_map(|scheme| url.strip_prefix(scheme).map(|rest| (&url[..scheme.len()], rest)))
}

/// Mirrors the client's parser: the credentials run to the first `@` anywhere after the scheme (so a password
/// holding `/` or `?` is still a password), the user to the first `:` in them; parameters follow the first `?` after
/// the credentials and are split on `&`.
fn redact_url(scheme: &str, rest: &str) -> String {
    let mut out = String::from(scheme);
    let rest = match rest.find('@') {
        Some(at) => {
            let user = rest[..at].split(':').next().unwrap_or_default();
            out.push_str(user);
            out.push('@');
            &rest[at + 1..]
        }
        None => rest,
    };
    match rest.find('?') {
        Some(q) => {
            out.push_str(&rest[..q]);
            let kept: Vec<&str> = rest[q + 1..]
                .split('&')
                .filter(|param| {
                    let key = param.split('=').next().unwrap_or_default();
                    !percent_decode(key).to_ascii_lowercase().contains("password")
                })
                .collect();
            if !kept.is_empty() {
                out.push('?');
                out.push_str(&kept.join("&"));
            }
        }
        None => out.push_str(rest),
    }
    out
}

/// Removes `password=…` (quoted or not, with `\` escapes, spaces around `=`) from a `key=value` string, as libpq
/// reads one.
fn redact_key_values(text: &str) -> String {
    let mut kept = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else {
            kept.push(rest.trim_end().to_owned());
            break;
        };
        let key = rest[..eq].trim();
        let mut value_start = rest[eq + 1..].trim_start();
        let mut end = value_start.len();
        let mut chars = value_start.char_indices();
        if value_start.starts_with('\'') {
            chars.next();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '\'' => {
                        end = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
        } else {
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    c if c.is_whitespace() => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
        }
        let value = &value_start[..end];
        if !key.to_ascii_lowercase().contains("password") {
            kept.push(format!("{key}={value}"));
        }
        value_start = &value_start[end..];
        rest = value_start.trim_start();
    }
    kept.join(" ")
}

/// Decodes `%XX` escapes (invalid ones are kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(Some(hi)), Some(Some(lo))) =
                (bytes.get(i + 1).map(|b| hex(*b)), bytes.get(i + 2).map(|b| hex(*b)))
        {
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What a connection needs: the parsed configuration, the URL as it may be shown, and the secrets every message is
/// scrubbed of.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) shown: String,
    secrets: Vec<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("url", &self.shown).finish_non_exhaustive()
    }
}

impl Target {
    /// Parses `url`; the connect timeout is the URL's, else 5 s.
    pub(crate) fn parse(url: &str) -> Result<Target, DatabaseOpenError> {
        let shown = redacted(url);
        let mut secrets = raw_secrets(url);
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e: tokio_postgres::Error| DatabaseOpenError::InvalidUrl {
                url: shown.clone(),
                reason: scrub(&crate::error::describe(&e), &secrets),
            })?;
        if let Some(password) = config.get_password() {
            secrets.push(String::from_utf8_lossy(password).into_owned());
        }
        secrets.retain(|secret| !secret.is_empty());
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("alp-memory");
        }
        Ok(Target { config, shown, secrets })
    }

    /// `message` with every secret of this URL replaced by `***`.
    pub(crate) fn scrub(&self, message: &str) -> String {
        scrub(message, &self.secrets)
    }

    /// The connect timeout in force.
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.config.get_connect_timeout().copied().unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }
}

/// Everything in `url` that could be a password, as written and decoded, whether or not the URL parses.
fn raw_secrets(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    if let Some((_, rest)) = split_scheme(url) {
        if let Some(at) = rest.find('@')
            && let Some((_, password)) = rest[..at].split_once(':')
        {
            secrets.push(password.to_owned());
            secrets.push(percent_decode(password));
        }
        if let Some(q) = rest.find('?') {
            for param in rest[q + 1..].split('&') {
                if let Some((key, value)) = param.split_once('=')
                    && percent_decode(key).to_ascii_lowercase().contains("password")
                {
                    secrets.push(value.to_owned());
                    secrets.push(percent_decode(value));
                }
            }
        }
    }
    secrets
}

fn scrub(message: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .fold(message.to_owned(), |text, secret| text.replace(secret, "***"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacted_removes_every_form_of_password() {
        for (url, expected) in [
            ("postgresql://alp:pw@host/db", "postgresql://alp@host/db"),
            (
                "postgres://alp:p%40ss@host:5432/db?sslmode=require",
                "postgres://alp@host:5432/db?sslmode=require",
            ),
            ("postgresql://alp:a/b?c@host/db", "postgresql://alp@host/db"),
            ("postgresql://alp@host/db", "postgresql://alp@host/db"),
            ("postgresql://host/db", "postgresql://host/db"),
            ("postgresql:///db?host=/tmp/s&password=pw", "postgresql:///db?host=/tmp/s"),
            ("postgresql:///db?password=pw", "postgresql:///db"),
            ("postgresql:///db?pass%77ord=pw&x=1", "postgresql:///db?x=1"),
            ("postgresql://u:pw@%2Ftmp%2Fsock:5432/db", "postgresql://u@%2Ftmp%2Fsock:5432/db"),
            ("host=/tmp user=u password=pw dbname=d", "host=/tmp user=u dbname=d"),
            ("host=/tmp password = 'p w\\' x' dbname=d", "host=/tmp dbname=d"),
            ("password=p\\ w host=h", "host=h"),
            ("", ""),
        ] {
            assert_eq!(redacted(url), expected, "{url}");
        }
    }

    #[test]
    fn messages_are_scrubbed_of_the_password_as_written_and_decoded() {
        let target = Target::parse("postgresql://alp:p%40ss@%2Ftmp%2Fnowhere/db").unwrap();
        assert_eq!(target.shown, "postgresql://alp@%2Ftmp%2Fnowhere/db");
        assert_eq!(target.scrub("saw p@ss and p%40ss"), "saw *** and ***");
    }

    #[test]
    fn an_unparsable_url_is_reported_without_its_password() {
        let Err(error) = Target::parse("postgresql://alp:hunter2@host:notaport/db") else {
            panic!("a bad port parsed")
        };
        let message = error.to_string();
        assert!(!message.contains("hunter2"), "{message}");
        assert!(message.contains("postgresql://alp@host:notaport/db"), "{message}");
    }

    #[test]
    fn the_connect_timeout_defaults_to_5s_and_the_url_wins() {
        assert_eq!(Target::parse("postgresql://u@h/db").unwrap().connect_timeout(), Duration::from_secs(5));
        assert_eq!(
            Target::parse("postgresql://u@h/db?connect_timeout=2").unwrap().connect_timeout(),
            Duration::from_secs(2)
        );
    }
}
