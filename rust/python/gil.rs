//! Rust work done without the GIL, so that Python's other threads run meanwhile and a
//! Rust thread that needs the GIL (to free a buffer pyarrow owns, to pull from a Python
//! iterable) is never blocked by a thread that holds it while waiting on Rust.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

use super::errors::to_py_err;
use crate::error::MergeError;

/// Runs `work` without the GIL, turning its error or panic into a Python exception.
pub(crate) fn guard<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, MergeError> + Send,
) -> PyResult<T> {
    let result = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    result.unwrap_or_else(|panic| Err(MergeError::from_panic(panic))).map_err(|e| to_py_err(py, e))
}

/// Drops `value` without the GIL: dropping a sort or a merge joins its worker threads,
/// and a worker that frees a buffer pyarrow owns needs the GIL to do so (holding it
/// while joining deadlocked an interrupted table write).
pub(crate) fn release<T: Send>(py: Python<'_>, value: T) {
    py.detach(move || drop(value));
}
