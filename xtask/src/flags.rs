//! The flag groups and value checks several benches share, declared once with clap (`#[command(flatten)]` in
//! each bench's `Args`).

use std::path::PathBuf;
use std::str::FromStr;

use crate::corpus::Shape;

/// `--alp PATH`: the `alp` a benchmark measures.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Alp {
    /// Measure the `alp` at PATH instead of this tree's release build (to compare two builds)
    #[arg(long, value_name = "PATH")]
    pub(crate) alp: Option<PathBuf>,
}

impl Alp {
    /// The absolute path of the `alp` given, or of the release build of this tree, built now.
    pub(crate) fn binary(&self) -> Result<PathBuf, String> {
        match &self.alp {
            Some(path) => std::fs::canonicalize(path).map_err(|e| format!("--alp `{}`: {e}", path.display())),
            None => crate::setup::release_alp(),
        }
    }
}

/// `--old-commit REV | --old PATH | --no-old`: the older `alp` a benchmark compares against (one of them at most),
/// each bench with its own default revision.
#[derive(Debug, Clone, clap::Args)]
#[group(multiple = false)]
pub(crate) struct Old {
    /// The revision whose `alp` is built (once, under `target/bench-old/REV/`) and compared against [default:
    /// `bench` 5a3d736, `serve-bench` 9592246]
    #[arg(long, value_name = "REV")]
    pub(crate) old_commit: Option<String>,
    /// Compare against the `alp` at PATH instead
    #[arg(long, value_name = "PATH")]
    pub(crate) old: Option<PathBuf>,
    /// Compare against no older `alp`
    #[arg(long)]
    pub(crate) no_old: bool,
}

impl Old {
    /// The older `alp` and how a report names it: none with `--no-old`; the binary at `--old` (its absolute path);
    /// else the `alp` of `--old-commit`, or of `default`, built now unless it was built before.
    pub(crate) fn binary(&self, default: &str) -> Result<Option<(PathBuf, String)>, String> {
        if self.no_old {
            return Ok(None);
        }
        if let Some(path) = &self.old {
            let binary =
                std::fs::canonicalize(path).map_err(|e| format!("--old `{}`: {e}", path.display()))?;
            return Ok(Some((binary, path.display().to_string())));
        }
        let rev = self.old_commit.as_deref().unwrap_or(default);
        Ok(Some((crate::setup::build_old(rev)?, rev.to_owned())))
    }
}

/// `--runs N`: the timed rounds, each bench with its own default.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct Runs {
    /// Timed rounds of every measurement
    #[arg(long, value_name = "N", value_parser = positive::<usize>)]
    pub(crate) runs: Option<usize>,
}

impl Runs {
    /// The rounds given, else `default`.
    pub(crate) fn or(self, default: usize) -> usize {
        self.runs.unwrap_or(default)
    }
}

/// `--seconds N`: how long each timed load lasts, each bench with its own default.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct Seconds {
    /// Seconds of each timed load
    #[arg(long, value_name = "N", value_parser = positive::<u64>)]
    pub(crate) seconds: Option<u64>,
}

impl Seconds {
    /// The seconds given, else `default`.
    pub(crate) fn or(self, default: u64) -> u64 {
        self.seconds.unwrap_or(default)
    }
}

/// A number above zero (surrounding spaces allowed, so that `--sizes "1000, 10000"` reads).
pub(crate) fn positive<T: FromStr + PartialOrd + Default>(text: &str) -> Result<T, String> {
    match text.trim().parse::<T>() {
        Ok(n) if n > T::default() => Ok(n),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// A percentage, 0 to 100.
pub(crate) fn percentage(text: &str) -> Result<u32, String> {
    match text.trim().parse() {
        Ok(rate) if rate <= 100 => Ok(rate),
        _ => Err(format!("`{text}` is not a percentage")),
    }
}

/// A frontmatter shape by name.
pub(crate) fn shape(text: &str) -> Result<Shape, String> {
    Shape::parse(text.trim())
}
