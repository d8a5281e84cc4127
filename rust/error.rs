//! One error type for the crate, and the `Result` alias every module returns.
//!
//! Variants say *whose fault* an error is, because the Python layer maps them onto
//! exception classes by that: bad input is a `ValueError`, disk trouble an `OSError`.

use arrow_schema::{ArrowError, Schema};

/// Everything that can go wrong inside merge-core.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The caller's data or options break the contract (unsorted run, null key, ...).
    #[error("{0}")]
    InvalidInput(String),
    /// An error reported by arrow, or by the stream a run is read from.
    #[error("arrow error: {0}")]
    Arrow(#[from] ArrowError),
    /// Reading or writing the file system failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Spill files would exceed the disk budget.
    #[error("{0}")]
    DiskFull(String),
    /// A table's data file is missing or damaged (the message names it).
    #[error("{0}")]
    CorruptTable(String),
    /// A broken invariant inside merge-core: a bug, never the caller's fault.
    #[error("internal error (please report): {0}")]
    Internal(String),
}

impl MergeError {
    /// A caught panic, as an internal error naming its message.
    pub(crate) fn from_panic(panic: Box<dyn std::any::Any + Send>) -> Self {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        MergeError::Internal(format!("panic: {what}"))
    }
}

/// Schema metadata of a batch decoded from a table's data file: the file's path. The read
/// marks the batches it decodes; the merge, which knows nothing of files, blames them.
pub(crate) const TABLE_FILE: &str = "merge_core:table_file";

/// `error`, about a batch of `schema`: for a batch of a table's data file, the table's
/// damage, naming the file; any other error as it is.
pub(crate) fn blame(schema: &Schema, error: MergeError) -> MergeError {
    match (error, schema.metadata().get(TABLE_FILE)) {
        (MergeError::InvalidInput(what), Some(path)) => {
            MergeError::CorruptTable(format!("data file {path}: {what}"))
        }
        (error, _) => error,
    }
}

/// The crate's result type.
pub type Result<T, E = MergeError> = std::result::Result<T, E>;

/// Where in the input a row sits, for error messages a user can act on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowLocation {
    pub run: usize,
    pub row: u64,
}

impl std::fmt::Display for RowLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run {}, row {}", self.run, self.row)
    }
}

/// Shorthand for an [`MergeError::InvalidInput`] built with `format!` arguments.
macro_rules! invalid {
    ($($arg:tt)*) => { $crate::error::MergeError::InvalidInput(format!($($arg)*)) };
}
pub(crate) use invalid;
