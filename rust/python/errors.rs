//! Errors and panics into `merge_core.errors` exceptions. The exception classes are
//! defined in Python (so one can subclass both `MergeCoreError` and `ValueError`) and
//! looked up here when an error is raised.

use std::panic::{catch_unwind, AssertUnwindSafe};

use arrow_schema::ArrowError;
use pyo3::prelude::*;

use crate::error::MergeError;

/// The exception class a merge error maps to.
fn class_name(e: &MergeError) -> &'static str {
    match e {
        MergeError::InvalidInput(_) => "InvalidInputError",
        MergeError::Io(_) | MergeError::DiskFull(_) => "SpillError",
        MergeError::Internal(_) => "InternalError",
        MergeError::CorruptTable(_) => "CorruptTableError",
        MergeError::Arrow(_) => "MergeCoreError",
    }
}

/// What an error that travelled inside `ArrowError`s (through C streams) really is: a
/// merge error, or an exception raised by the caller's own Python iterable.
enum Innermost {
    Merge(MergeError),
    Python(PyErr),
}

fn innermost(e: MergeError) -> Innermost {
    let MergeError::Arrow(ArrowError::ExternalError(inner)) = e else { return Innermost::Merge(e) };
    let inner = match inner.downcast::<MergeError>() {
        Ok(merge) => return innermost(*merge),
        Err(other) => other,
    };
    match inner.downcast::<PyErr>() {
        Ok(raised) => Innermost::Python(*raised),
        Err(other) => Innermost::Merge(MergeError::Arrow(ArrowError::ExternalError(other))),
    }
}

pub(crate) fn to_py_err(py: Python<'_>, e: MergeError) -> PyErr {
    let e = match innermost(e) {
        Innermost::Python(raised) => return raised,
        Innermost::Merge(e) => e,
    };
    let raise = || -> PyResult<PyErr> {
        let class = py.import("merge_core.errors")?.getattr(class_name(&e))?;
        Ok(PyErr::from_value(class.call1((e.to_string(),))?))
    };
    raise().unwrap_or_else(|import_error| import_error)
}

/// Runs `work` without the GIL, turning its error or panic into a Python exception.
pub(crate) fn guard<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, MergeError> + Send,
) -> PyResult<T> {
    let result = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    result.unwrap_or_else(|panic| Err(MergeError::from_panic(panic))).map_err(|e| to_py_err(py, e))
}
