//! The native read of a Paimon table: the sections Python planned, as data files, read by
//! [`crate::read::read_sections`].

use std::path::PathBuf;
use std::sync::Arc;

use arrow_pyarrow::FromPyArrow;
use arrow_schema::{ArrowError, Schema};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::gil::guard;
use super::options::merge_function;
use super::stream::PyStream;
use crate::error::MergeError;
use crate::read::{read_sections, DataFile, Fetch, ReadOptions};

/// A file as planned: (path, the file's column for each read column, deleted positions
/// as little-endian u64 bytes, for a file off the local filesystem a callable returning
/// its bytes).
type PlannedFile = (PathBuf, Vec<Option<String>>, Option<Vec<u8>>, Option<Py<PyAny>>);

/// Merges each section (a list of runs, each a list of files) of a Paimon read.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // mirrors the Python call one to one
#[pyo3(signature = (schema, sections, key, sequence, descending, merge, batch_size, columns, threads, stats))]
pub(crate) fn read_paimon(
    py: Python<'_>,
    schema: &Bound<'_, PyAny>,
    sections: Vec<Vec<Vec<PlannedFile>>>,
    key: Vec<String>,
    sequence: Vec<String>,
    descending: bool,
    merge: &Bound<'_, PyAny>,
    batch_size: usize,
    columns: Vec<String>,
    threads: usize,
    stats: Vec<(String, u64)>,
) -> PyResult<PyStream> {
    let schema = Arc::new(Schema::from_pyarrow_bound(schema)?);
    let sections = sections
        .into_iter()
        .map(|runs| {
            runs.into_iter()
                .map(|files| {
                    let files = files.into_iter().map(|(path, columns, deleted, fetch)| DataFile {
                        path,
                        fetch: fetch.map(fetcher),
                        columns,
                        deleted: deleted.map_or_else(Vec::new, |bytes| {
                            bytes
                                .chunks_exact(8)
                                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                                .collect()
                        }),
                        of_table: true,
                        ..DataFile::default()
                    });
                    files.collect()
                })
                .collect()
        })
        .collect();
    let merge = merge_function(merge)?;
    let options =
        ReadOptions { key, sequence, descending, merge, batch_size, columns: Some(columns), threads };
    let stream = guard(py, || read_sections(schema, sections, options))?;
    Ok(PyStream::new(stream).with_extra_stats(stats))
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
