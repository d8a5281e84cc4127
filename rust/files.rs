//! Data files read as runs: each Parquet file decoded by arrow-rs on the thread that
//! consumes its run, only the columns the read needs, deleted rows skipped while
//! decoding, and each column mapped onto the read's schema (by the name the file's own
//! schema gives it; a column the file predates reads as nulls; a type the table has
//! widened since is cast). A file off the local filesystem (an object store's) comes
//! with a function that fetches its bytes, called when its run reaches it: only the
//! files being decoded are held in memory.

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;

use crate::error::MergeError;
use crate::run::Run;

/// Fetches the whole of a file that is not on the local filesystem.
#[derive(Clone)]
pub struct Fetch(pub Arc<dyn Fn() -> Result<Bytes, MergeError> + Send + Sync>);

impl fmt::Debug for Fetch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Fetch")
    }
}

/// One data file of a run, as the read takes it.
#[derive(Debug, Clone)]
pub struct DataFile {
    /// Where the file is (named in messages; opened unless `fetch` is given).
    pub path: PathBuf,
    /// How to get the file's bytes when it is not a local file.
    pub fetch: Option<Fetch>,
    /// For each column of the read's schema, the file's column holding it (`None`: the
    /// file predates the column, which reads as nulls).
    pub columns: Vec<Option<String>>,
    /// Positions of the file's deleted rows, ascending (its deletion vector).
    pub deleted: Vec<u64>,
}

/// A run of `files` (in key order, none overlapping the next) read as batches of `schema`.
pub fn run_of_files(schema: SchemaRef, files: Vec<DataFile>, batch_size: usize) -> Run {
    let batches = FileBatches { schema: schema.clone(), files: files.into(), current: None, batch_size };
    Run { schema, batches: Box::new(batches) }
}

/// A run of one Parquet file (sorted by the merge's key), every column as the file's
/// Arrow schema gives it.
pub fn run_of_parquet(path: PathBuf, batch_size: usize) -> Result<Run, MergeError> {
    let unreadable = |what: String| MergeError::InvalidInput(format!("{}: {what}", path.display()));
    let handle = File::open(&path).map_err(|e| unreadable(format!("cannot open it ({e})")))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(handle)
        .map_err(|e| unreadable(format!("not a readable Parquet file ({e})")))?;
    let schema = builder.schema().clone();
    let columns = schema.fields().iter().map(|f| Some(f.name().clone())).collect();
    Ok(run_of_files(schema, vec![DataFile { path, fetch: None, columns, deleted: Vec::new() }], batch_size))
}

struct FileBatches {
    schema: SchemaRef,
    files: VecDeque<DataFile>,
    current: Option<(DataFile, ParquetRecordBatchReader)>,
    batch_size: usize,
}

impl Iterator for FileBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((file, reader)) = &mut self.current {
                match reader.next() {
                    Some(Ok(batch)) => return Some(conform(&self.schema, file, batch).map_err(external)),
                    Some(Err(e)) => return Some(Err(external(damaged(file, &e.to_string())))),
                    None => self.current = None,
                }
            }
            let file = self.files.pop_front()?;
            match open(&file, &self.schema, self.batch_size) {
                Ok(reader) => self.current = Some((file, reader)),
                Err(e) => return Some(Err(external(e))),
            }
        }
    }
}

fn external(e: MergeError) -> ArrowError {
    ArrowError::ExternalError(Box::new(e))
}

fn damaged(file: &DataFile, what: &str) -> MergeError {
    MergeError::CorruptTable(format!("data file {}: {what}", file.path.display()))
}

/// A reader of the file's needed columns that skips its deleted rows.
fn open(
    file: &DataFile,
    schema: &SchemaRef,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader, MergeError> {
    match &file.fetch {
        Some(fetch) => decode((fetch.0)()?, file, schema, batch_size),
        None => {
            let handle =
                File::open(&file.path).map_err(|e| damaged(file, &format!("cannot open it ({e})")))?;
            decode(handle, file, schema, batch_size)
        }
    }
}

fn decode<T: ChunkReader + 'static>(
    source: T,
    file: &DataFile,
    schema: &SchemaRef,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader, MergeError> {
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(source).map_err(|e| damaged(file, &e.to_string()))?;
    let arrow = builder.schema().clone();
    let mut roots = Vec::new();
    for (field, source) in schema.fields().iter().zip(&file.columns) {
        let Some(name) = source else { continue };
        let index = arrow
            .index_of(name)
            .map_err(|_| damaged(file, &format!("it has no column '{name}' (for '{}')", field.name())))?;
        roots.push(index);
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let rows = builder.metadata().file_metadata().num_rows() as u64;
    let mut builder = builder.with_projection(mask).with_batch_size(batch_size);
    if !file.deleted.is_empty() {
        builder = builder.with_row_selection(selection(&file.deleted, rows).map_err(|e| damaged(file, &e))?);
    }
    builder.build().map_err(|e| damaged(file, &e.to_string()))
}

/// The rows to read of a file of `rows` rows, all but the `deleted` positions.
fn selection(deleted: &[u64], rows: u64) -> Result<RowSelection, String> {
    let mut selectors = Vec::new();
    let mut next = 0u64;
    for &d in deleted {
        if d < next || d >= rows {
            return Err(format!(
                "its deletion vector holds position {d}, outside its {rows} rows or out of order"
            ));
        }
        if d > next {
            selectors.push(RowSelector::select((d - next) as usize));
        }
        selectors.push(RowSelector::skip(1));
        next = d + 1;
    }
    if next < rows {
        selectors.push(RowSelector::select((rows - next) as usize));
    }
    Ok(selectors.into())
}

/// A decoded batch as a batch of the read's schema.
fn conform(schema: &SchemaRef, file: &DataFile, batch: RecordBatch) -> Result<RecordBatch, MergeError> {
    let rows = batch.num_rows();
    let columns = (schema.fields().iter().zip(&file.columns))
        .map(|(field, source)| -> Result<ArrayRef, MergeError> {
            let Some(name) = source else { return Ok(new_null_array(field.data_type(), rows)) };
            let column = batch.column_by_name(name).expect("projected above");
            if column.data_type() == field.data_type() {
                return Ok(column.clone());
            }
            arrow_cast::cast(column, field.data_type()).map_err(|e| {
                damaged(
                    file,
                    &format!(
                        "its column '{name}' ({}) does not read as {}: {e}",
                        column.data_type(),
                        field.data_type()
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::clone(schema), columns, &options)
        .map_err(|e| damaged(file, &e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_skips_the_deleted_positions() {
        let s = selection(&[0, 2, 3, 9], 10).unwrap();
        let kept: Vec<usize> = {
            let mut pos = 0;
            let mut kept = Vec::new();
            for sel in Vec::<RowSelector>::from(s) {
                if !sel.skip {
                    kept.extend(pos..pos + sel.row_count);
                }
                pos += sel.row_count;
            }
            kept
        };
        assert_eq!(kept, vec![1, 4, 5, 6, 7, 8]);
        assert!(selection(&[3, 3], 10).is_err());
        assert!(selection(&[10], 10).is_err());
    }
}
