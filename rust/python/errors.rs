//! Errors (and panics, which [`super::gil::guard`] turns into errors) into
//! `merge_core.errors` exceptions. The exception classes are defined in Python (so one
//! can subclass both `MergeCoreError` and `ValueError`) and looked up here when an error
//! is raised.

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
