//! The native read of a Paimon table: the sections Python planned, as data files, read by
//! [`crate::read::read_sections`].

use std::path::PathBuf;
use std::sync::Arc;

use arrow_pyarrow::FromPyArrow;
use arrow_schema::{ArrowError, Schema};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::gil::guard;
use super::options::read_options;
use super::stream::PyStream;
use crate::error::MergeError;
use crate::read::lookup_cache::LookupCache;
use crate::read::{read_sections, DataFile, Fetch};

/// A data file as the plan reads it: its path, the file's column for each column read
/// (None: the column is not in the file, read as nulls), the positions a deletion vector
/// deletes, and for a file off the local filesystem a callable returning its bytes.
#[pyclass(frozen, module = "merge_core._native")]
pub(crate) struct PlannedFile {
    path: PathBuf,
    columns: Vec<Option<String>>,
    deleted: Vec<u64>,
    fetch: Option<Py<PyAny>>,
}

#[pymethods]
impl PlannedFile {
    /// `deleted`: the deleted positions as little-endian u64s.
    #[new]
    #[pyo3(signature = (path, columns, deleted = None, fetch = None))]
    fn new(
        path: PathBuf,
        columns: Vec<Option<String>>,
        deleted: Option<&[u8]>,
        fetch: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let deleted = deleted.unwrap_or_default();
        if !deleted.len().is_multiple_of(8) {
            return Err(PyValueError::new_err("deleted positions must be little-endian u64s"));
        }
        let deleted =
            deleted.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
        Ok(Self { path, columns, deleted, fetch })
    }
}

impl PlannedFile {
    fn data_file(&self, py: Python<'_>) -> DataFile {
        DataFile {
            path: self.path.clone(),
            fetch: self.fetch.as_ref().map(|f| fetcher(f.clone_ref(py))),
            columns: self.columns.clone(),
            deleted: self.deleted.clone(),
            of_table: true,
            ..DataFile::default()
        }
    }
}

/// Merges each section (a list of runs, each a list of files) of a Paimon read.
#[pyfunction]
pub(crate) fn read_paimon(
    py: Python<'_>,
    schema: &Bound<'_, PyAny>,
    sections: Vec<Vec<Vec<Py<PlannedFile>>>>,
    options: &Bound<'_, PyDict>,
) -> PyResult<PyStream> {
    let schema = Arc::new(Schema::from_pyarrow_bound(schema)?);
    let (options, stats) = read_options(options)?;
    let sections = sections
        .iter()
        .map(|runs| runs.iter().map(|files| files.iter().map(|f| f.get().data_file(py)).collect()).collect())
        .collect();
    let stream = guard(py, || read_sections(schema, sections, options))?;
    Ok(PyStream::new(stream).with_extra_stats(stats))
}

/// The process's lookup cache ([`LookupCache::global`]): its budget set to `max_bytes`
/// first if given (0 empties it and keeps nothing), then its figures.
#[pyfunction]
#[pyo3(signature = (max_bytes = None))]
pub(crate) fn lookup_cache<'py>(py: Python<'py>, max_bytes: Option<u64>) -> PyResult<Bound<'py, PyDict>> {
    let cache = LookupCache::global();
    if let Some(budget) = max_bytes {
        cache.set_budget(budget);
    }
    let stats = cache.stats();
    let figures = PyDict::new(py);
    for (name, value) in [
        ("budget", stats.budget),
        ("bytes", stats.bytes),
        ("entries", stats.entries),
        ("hits", stats.hits),
        ("misses", stats.misses),
        ("evictions", stats.evictions),
    ] {
        figures.set_item(name, value)?;
    }
    Ok(figures)
}

/// A Python callable returning a file's bytes, called with the GIL taken when the read
/// reaches the file; what it raises travels to the reader as itself.
fn fetcher(fetch: Py<PyAny>) -> Fetch {
    Fetch(Arc::new(move || {
        Python::attach(|py| {
            let data = fetch.bind(py).call0()?;
            Ok(bytes::Bytes::copy_from_slice(data.cast::<PyBytes>()?.as_bytes()))
        })
        .map_err(|e: PyErr| MergeError::Arrow(ArrowError::ExternalError(Box::new(e))))
    }))
}
