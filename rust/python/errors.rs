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
        MergeError::Arrow(_) => "MergeCoreError",
    }
}

/// Unwraps merge errors that travelled inside an `ArrowError` (through a C stream).
fn innermost(e: MergeError) -> MergeError {
    match e {
        MergeError::Arrow(ArrowError::ExternalError(inner)) => match inner.downcast::<MergeError>() {
            Ok(inner) => innermost(*inner),
            Err(other) => MergeError::Arrow(ArrowError::ExternalError(other)),
        },
        other => other,
    }
}

pub(crate) fn to_py_err(py: Python<'_>, e: MergeError) -> PyErr {
    let e = innermost(e);
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
