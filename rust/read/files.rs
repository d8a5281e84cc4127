//! Data files read as runs: each Parquet file decoded by arrow-rs on the thread that
//! consumes its run, only the columns the read needs, deleted rows skipped while
//! decoding, and each column mapped onto the read's schema (by the name the file's own
//! schema gives it; a column the file predates reads as nulls; a type the table has
//! widened since is cast). A file off the local filesystem (an object store's) comes
//! with a function that fetches its bytes, called when its run reaches it: only the
//! files being decoded are held in memory.
//!
//! A file may be read in part: the rows of one key range ([`super::slices`]), only its
//! pages that may hold keys of the range decoded, and each batch trimmed to the range.
//! Pages that two adjacent ranges both need (a cut falls inside them) are decoded once,
//! by whichever range's read starts first ([`SharedZones`]).

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use arrow_array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
    RowSelection, RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;

use super::counters::{Counted, ReadCounters};
use super::key_range::{first_not_below, KeyRange};
use super::keys_first::{chosen_rows_in_range, chosen_span, narrowed, within};
use super::lookup_cache::{FileId, LookupCache, WithDictionaries};
use crate::error::{MergeError, TABLE_FILE};
use crate::runs::Run;

/// Fetches the whole of a file that is not on the local filesystem.
#[derive(Clone)]
pub struct Fetch(pub Arc<dyn Fn() -> Result<Bytes, MergeError> + Send + Sync>);

impl fmt::Debug for Fetch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Fetch")
    }
}

/// One data file of a run, as the read takes it: all of it, or the rows of a key range.
#[derive(Debug, Clone, Default)]
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
    /// The file's footer (with its page index), when the planning read it already.
    pub metadata: Option<ArrowReaderMetadata>,
    /// Only these rows (positions before deletion) are decoded: whole pages.
    pub rows: Option<Range<u64>>,
    /// Only the rows whose key falls in this range are read.
    pub keys: Option<Arc<KeyRange>>,
    /// These rows are shared with the adjacent key range on the other side of a cut:
    /// decoded once, by the first of the two reads to start (`keys` then only
    /// names this side's range).
    pub shared: Option<(Arc<SharedZones>, Side)>,
    /// Decode the first key column first and the others only for the rows whose key is
    /// in `keys` ([`super::keys_first`]): set for a filter's narrow range, not for
    /// slices, whose rows are nearly all in their range.
    pub keys_first: bool,
    /// Where the read counts the bytes it reads and the files it skips.
    pub counters: Option<Arc<ReadCounters>>,
    /// Where a read keys first keeps the file's footer and key digests for the next
    /// lookup ([`super::lookup_cache`]; local files only).
    pub cache: Option<Arc<LookupCache>>,
    /// The file is a table's: rows that break the merge's contract (unsorted keys, a
    /// null key) mean the table is damaged, not that the caller's input is wrong; an
    /// error about them names the file (see [`crate::error::blame`]). A caller's file is named by the
    /// caller, who knows which run it gave.
    pub of_table: bool,
}

/// Which side of a cut a key range lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Keys below the cut.
    Below,
    /// Keys at or above the cut.
    Above,
}

/// Rows of one file that the key ranges on both sides of a cut need, because the cut
/// falls inside the pages (or row groups) that hold them: decoded once, by the first of
/// the two reads to reach them, which leaves the other its rows. Both reach them as they
/// start: the read below the cut decodes them before anything else and sets aside the
/// rows at or above the cut (though it needs its own rows of them only at its end); the
/// read above, if it starts first, decodes them as the start of its part and sets aside
/// the rows below the cut. A read waits only while the other one decodes; one that fails
/// to leaves them undecoded.
#[derive(Debug)]
pub struct SharedZones {
    /// The cut: a one-value array of the first key column's type.
    cut: ArrayRef,
    /// The first key column's index in the read's schema.
    column: usize,
    /// The zones' rows in their file (positions before deletion).
    rows: Range<u64>,
    state: Mutex<Shared>,
    changed: Condvar,
}

#[derive(Debug)]
enum Shared {
    Undecoded,
    Decoding,
    /// The rows set aside for the side that has not taken them yet.
    Decoded(Vec<RecordBatch>),
    Taken,
}

impl SharedZones {
    /// The zones at file rows `rows`, cut at `cut` (a one-value array) of column `column`.
    pub fn new(cut: ArrayRef, column: usize, rows: Range<u64>) -> Self {
        Self { cut, column, rows, state: Mutex::new(Shared::Undecoded), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The rows the other side set aside, once it is done decoding; or, if nobody decoded
    /// the zones yet, the claim to decode them.
    fn take_or_claim(self: &Arc<Self>) -> Result<Vec<RecordBatch>, Claim> {
        let mut state = self.lock();
        while matches!(*state, Shared::Decoding) {
            state = self.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        match std::mem::replace(&mut *state, Shared::Decoding) {
            Shared::Undecoded => Err(Claim(Some(self.clone()))),
            Shared::Decoded(rows) => {
                *state = Shared::Taken;
                Ok(rows)
            }
            Shared::Decoding | Shared::Taken => unreachable!("each side reads its shared zones once"),
        }
    }

    /// Whether one side decoded them and set the other side's rows aside.
    #[cfg(test)]
    pub(crate) fn is_set_aside(&self) -> bool {
        matches!(*self.lock(), Shared::Decoded(_))
    }

    /// The rows (sorted by key) below the cut, and those at or above it.
    fn split(&self, batches: Vec<RecordBatch>) -> Result<(Vec<RecordBatch>, Vec<RecordBatch>), ArrowError> {
        let (mut below, mut above) = (Vec::new(), Vec::new());
        for batch in batches {
            let at = first_not_below(batch.column(self.column), &self.cut).map_err(external)?;
            below.extend((at > 0).then(|| batch.slice(0, at)));
            above.extend((at < batch.num_rows()).then(|| batch.slice(at, batch.num_rows() - at)));
        }
        Ok((below, above))
    }
}

/// The right to decode shared zones: given up (the zones left undecoded, the other side
/// woken) when dropped before [`Claim::set_aside`].
struct Claim(Option<Arc<SharedZones>>);

impl Claim {
    /// The zones are decoded: `rows` are the other side's.
    fn set_aside(mut self, rows: Vec<RecordBatch>) {
        let zones = self.0.take().expect("a claim is used once");
        *zones.lock() = Shared::Decoded(rows);
        zones.changed.notify_all();
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(zones) = self.0.take() {
            *zones.lock() = Shared::Undecoded;
            zones.changed.notify_all();
        }
    }
}

/// A run of `files` (in key order, none overlapping the next) read as batches of `schema`.
pub fn run_of_files(schema: SchemaRef, files: Vec<DataFile>, batch_size: usize) -> Run {
    let batches = FileBatches {
        schema: schema.clone(),
        files: files.into(),
        current: None,
        ready: VecDeque::new(),
        setting_aside: None,
        upper_zones: None,
        started: false,
        batch_size,
    };
    Run { schema, batches: Box::new(batches) }
}

/// A run of one Parquet file (sorted by the merge's key), every column as the file's
/// Arrow schema gives it.
pub fn run_of_parquet(path: PathBuf, batch_size: usize) -> Result<Run, MergeError> {
    let file = parquet_file(path)?;
    let schema = file.metadata.as_ref().expect("read above").schema().clone();
    Ok(run_of_files(schema, vec![file], batch_size))
}

/// A Parquet file (sorted by the merge's key) as a whole [`DataFile`], every column as
/// the file's Arrow schema gives it; its footer and page index are read here, once.
pub fn parquet_file(path: PathBuf) -> Result<DataFile, MergeError> {
    let unreadable = |what: String| MergeError::InvalidInput(format!("{}: {what}", path.display()));
    let handle = File::open(&path).map_err(|e| unreadable(format!("cannot open it ({e})")))?;
    let metadata = ArrowReaderMetadata::load(&handle, with_page_index())
        .map_err(|e| unreadable(format!("not a readable Parquet file ({e})")))?;
    let columns = metadata.schema().fields().iter().map(|f| Some(f.name().clone())).collect();
    Ok(DataFile { path, columns, metadata: Some(metadata), ..DataFile::default() })
}

/// Reads a footer with its page index, if the file has one: the key range of each page
/// (see [`super::slices`]) and where each page starts, so unselected pages are skipped.
pub(crate) fn with_page_index() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional)
}

struct FileBatches {
    schema: SchemaRef,
    files: VecDeque<DataFile>,
    current: Option<(DataFile, ParquetRecordBatchReader)>,
    /// Rows of shared zones (decoded by either side), read before `current`.
    ready: VecDeque<RecordBatch>,
    /// While `current` decodes shared zones from their start: the rows below the cut
    /// met so far, set aside for the read below it.
    setting_aside: Option<(Claim, Vec<RecordBatch>)>,
    /// The run's rows of the zones it shares with the range above, read after `files`.
    upper_zones: Option<Vec<RecordBatch>>,
    /// Whether `next` was called (the upper zones are taken on the first call).
    started: bool,
    batch_size: usize,
}

impl Iterator for FileBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if !std::mem::replace(&mut self.started, true) {
            if let Err(e) = self.take_upper_zones() {
                return Some(Err(e));
            }
        }
        loop {
            if let Some(batch) = self.ready.pop_front() {
                return Some(Ok(batch));
            }
            let step = if self.current.is_some() {
                self.next_in_range()
            } else if let Some(file) = self.files.pop_front() {
                self.open_next(file).map(|()| None)
            } else {
                self.ready.extend(self.upper_zones.take()?);
                continue;
            };
            match step {
                Ok(None) => continue,
                result => return result.transpose(),
            }
        }
    }
}

impl FileBatches {
    /// The current file's next batch, trimmed to its key range (`None`: nothing of it
    /// was in the range, or the file is done).
    fn next_in_range(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        let (file, reader) = self.current.as_mut().expect("a file is open");
        let Some(batch) = reader.next() else {
            self.current = None;
            self.finish_setting_aside();
            return Ok(None);
        };
        let batch = conform_decoded(&self.schema, file, batch)?;
        let Some(keys) = file.keys.clone() else { return Ok(Some(batch)) };
        let (rows, past) = keys.rows_within(&batch).map_err(external)?;
        if past {
            self.current = None; // the file's later rows are all past the range
        }
        if let Some((_, below)) = &mut self.setting_aside {
            below.extend((rows.start > 0).then(|| batch.slice(0, rows.start)));
            if rows.start < batch.num_rows() {
                self.finish_setting_aside(); // every later row is at or above the cut
            }
        }
        Ok((!rows.is_empty()).then(|| batch.slice(rows.start, rows.len())))
    }

    fn finish_setting_aside(&mut self) {
        if let Some((claim, below)) = self.setting_aside.take() {
            claim.set_aside(below);
        }
    }

    /// Starts reading `file`: opens it, or takes the rows of its shared zones.
    fn open_next(&mut self, file: DataFile) -> Result<(), ArrowError> {
        let open = |file: DataFile| -> Result<_, ArrowError> {
            let reader = open(&file, &self.schema, self.batch_size).map_err(external)?;
            Ok(reader.map(|reader| (file, reader)))
        };
        let Some((zones, side)) = file.shared.clone() else {
            self.current = open(file)?;
            return Ok(());
        };
        if side == Side::Below {
            let rows = self.shared_rows_below(&file, &zones)?;
            self.ready.extend(rows);
            return Ok(());
        }
        match zones.take_or_claim() {
            // The part starts with the zones: decoded by the read below, or here.
            Ok(rows) => {
                self.ready.extend(rows);
                let end = file.rows.as_ref().expect("a part with shared zones has its rows").end;
                if zones.rows.end < end {
                    let rest = DataFile { rows: Some(zones.rows.end..end), shared: None, ..file };
                    self.current = open(rest)?;
                }
            }
            Err(claim) => {
                self.setting_aside = Some((claim, Vec::new()));
                self.current = open(file)?;
            }
        }
        Ok(())
    }

    /// Takes the run's rows of the zones it shares with the range above (its last part,
    /// if any: with exact statistics a later file of the run holds no keys of this range,
    /// and if one did, its rows would still come out in order, the zones then read at
    /// the end) as the read starts, not when the merge gets to them. The read above may
    /// start at any time and then needs its rows of them at once; taken early, each read
    /// usually decodes the zones at its upper cut (the read above can win them when both
    /// start together), and the reads of a round of slices, which start and end about
    /// together, do about as much work each. Left for the end, they went to whichever read got
    /// there first, and a read that started as its neighbour ended decoded both its
    /// cuts' zones while that neighbour decoded neither.
    fn take_upper_zones(&mut self) -> Result<(), ArrowError> {
        let Some(part @ DataFile { shared: Some((zones, Side::Below)), .. }) = self.files.back() else {
            return Ok(());
        };
        let rows = self.shared_rows_below(part, zones)?;
        self.files.pop_back(); // once taken: an error leaves the part where it was
        self.upper_zones = Some(rows);
        Ok(())
    }

    /// The rows below the cut of shared zones: set aside by the read above, or decoded
    /// here (the rows at or above the cut set aside for it).
    fn shared_rows_below(
        &self,
        file: &DataFile,
        zones: &Arc<SharedZones>,
    ) -> Result<Vec<RecordBatch>, ArrowError> {
        match zones.take_or_claim() {
            Ok(rows) => Ok(rows),
            Err(claim) => {
                let (below, above) = zones.split(self.decode_all(file)?)?;
                claim.set_aside(above);
                Ok(below)
            }
        }
    }

    /// Every batch of `file`'s rows, whatever its key range.
    fn decode_all(&self, file: &DataFile) -> Result<Vec<RecordBatch>, ArrowError> {
        let reader = open(file, &self.schema, self.batch_size).map_err(external)?;
        let reader = reader.expect("a shared part is read whole, never keys first");
        reader.map(|batch| conform_decoded(&self.schema, file, batch)).collect()
    }
}

/// A batch as the reader of `file` decoded it, as a batch of the read's schema.
fn conform_decoded(
    schema: &SchemaRef,
    file: &DataFile,
    batch: Result<RecordBatch, ArrowError>,
) -> Result<RecordBatch, ArrowError> {
    let batch = batch.map_err(|e| damaged(file, &e.to_string()));
    batch.and_then(|batch| conform(schema, file, batch)).map_err(external)
}

fn external(e: MergeError) -> ArrowError {
    ArrowError::ExternalError(Box::new(e))
}

fn damaged(file: &DataFile, what: &str) -> MergeError {
    MergeError::CorruptTable(format!("data file {}: {what}", file.path.display()))
}

/// A reader of the file's needed columns that skips its deleted rows (`None`: its key
/// column, decoded first, holds no key of its range).
fn open(
    file: &DataFile,
    schema: &SchemaRef,
    batch_size: usize,
) -> Result<Option<ParquetRecordBatchReader>, MergeError> {
    let counters = file.counters.clone();
    match &file.fetch {
        Some(fetch) => decode(Counted::new((fetch.0)()?, counters), None, file, schema, batch_size),
        None => {
            let handle =
                File::open(&file.path).map_err(|e| damaged(file, &format!("cannot open it ({e})")))?;
            let id = file.cache.as_ref().and_then(|_| FileId::of(&file.path, &handle));
            decode(Counted::new(handle, counters), id, file, schema, batch_size)
        }
    }
}

/// `id`: the file's identity in its cache, if it has one.
fn decode<T: ChunkReader + 'static>(
    source: Counted<T>,
    id: Option<FileId>,
    file: &DataFile,
    schema: &SchemaRef,
    batch_size: usize,
) -> Result<Option<ParquetRecordBatchReader>, MergeError> {
    let metadata = match &file.metadata {
        Some(metadata) => metadata.clone(),
        None => ArrowReaderMetadata::load(&source, ArrowReaderOptions::new())
            .map_err(|e| damaged(file, &e.to_string()))?,
    };
    let arrow = metadata.schema().clone();
    let root = |name: &str, field: &str| {
        arrow.index_of(name).map_err(|_| damaged(file, &format!("it has no column '{name}' (for '{field}')")))
    };
    let mut roots = Vec::new();
    for (field, source) in schema.fields().iter().zip(&file.columns) {
        if let Some(name) = source {
            roots.push(root(name, field.name())?);
        }
    }
    let rows = metadata.metadata().file_metadata().num_rows() as u64;
    let mut chosen = None;
    // A file whose key digests are kept: its dictionary pages are kept too.
    let mut dictionaries = None;
    if !file.deleted.is_empty() || file.rows.is_some() {
        let wanted = file.rows.clone().unwrap_or(0..rows);
        chosen = Some(selection(&file.deleted, wanted, rows).map_err(|e| damaged(file, &e))?);
    }
    if let Some((range, name)) = keys_first(file, roots.len()) {
        let all = chosen.unwrap_or_else(|| vec![RowSelector::select(rows as usize)].into());
        let key_root = root(name, schema.field(range.column).name())?;
        let key_type = schema.field(range.column).data_type();
        let decode_keys = |chosen: Option<RowSelection>| {
            let keys = reader(source.clone(), &metadata, vec![key_root], chosen, batch_size)
                .map_err(|e| damaged(file, &e.to_string()))?;
            Ok::<_, MergeError>(keys.map(move |batch| -> crate::error::Result<ArrayRef> {
                let column = batch.map_err(|e| damaged(file, &e.to_string()))?.column(0).clone();
                match column.data_type() == key_type {
                    true => Ok(column),
                    false => arrow_cast::cast(&column, key_type).map_err(|e| damaged(file, &e.to_string())),
                }
            }))
        };
        let cached = match (&file.cache, &id) {
            (Some(cache), Some(id)) => cache_candidates(cache, id, name, key_type, range, || {
                let columns = decode_keys(None)?.collect::<crate::error::Result<Vec<_>>>()?;
                let columns: Vec<&dyn arrow_array::Array> = columns.iter().map(|c| c.as_ref()).collect();
                match columns.is_empty() {
                    true => Ok(arrow_array::new_empty_array(key_type)),
                    false => Ok(arrow_select::concat::concat(&columns)?),
                }
            })?,
            _ => None,
        };
        let found = match cached {
            Some(candidates) => {
                dictionaries = file.cache.clone().zip(id);
                within(&all, candidates, rows)
            }
            None => narrowed(&all, chosen_rows_in_range(decode_keys(Some(all.clone()))?, range)?),
        };
        match found {
            Some(narrowed) => chosen = Some(narrowed),
            None => {
                if let Some(counters) = &file.counters {
                    counters.add_skipped_file();
                }
                return Ok(None);
            }
        }
    }
    let reader = match dictionaries {
        Some((cache, id)) => {
            let source = WithDictionaries::new(source, cache, id, metadata.metadata());
            reader(source, &metadata, roots, chosen, batch_size)
        }
        None => reader(source, &metadata, roots, chosen, batch_size),
    };
    reader.map(Some).map_err(|e| damaged(file, &e.to_string()))
}

/// The file rows that may hold keys of `range`, from the digests of the file's key column
/// `column` in `cache` (computed from the whole column, decoded by `decode`, on a miss of
/// a file met before); `None` when its keys have no digests, or none yet.
fn cache_candidates(
    cache: &LookupCache,
    id: &FileId,
    column: &str,
    key_type: &arrow_schema::DataType,
    range: &KeyRange,
    decode: impl FnOnce() -> crate::error::Result<ArrayRef>,
) -> crate::error::Result<Option<Range<u64>>> {
    let digests = cache.key_digests_once_met(id, column, key_type, decode)?;
    Ok(digests.and_then(|digests| digests.candidates(range)))
}

/// The key range and the file's name of the first key column, when `file` is read keys
/// first: its part is not shared with another range (whose rows it would then have to
/// decode too), and it reads more columns than the key.
fn keys_first(file: &DataFile, roots: usize) -> Option<(&KeyRange, &str)> {
    let range = file.keys.as_deref().filter(|_| file.keys_first && file.shared.is_none() && roots > 1)?;
    Some((range, file.columns.get(range.column)?.as_deref()?))
}

/// A reader of the `roots` columns of a file (of footer `metadata`), of the `chosen`
/// rows (all when `None`).
fn reader<T: ChunkReader + 'static>(
    source: T,
    metadata: &ArrowReaderMetadata,
    roots: Vec<usize>,
    chosen: Option<RowSelection>,
    batch_size: usize,
) -> parquet::errors::Result<ParquetRecordBatchReader> {
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(source, metadata.clone());
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let mut builder = builder.with_projection(mask).with_batch_size(batch_size);
    if let Some(mut chosen) = chosen {
        // Only the row groups holding chosen rows: the reader opens every listed group's
        // column chunks (a codec each), even those its selection skips whole.
        let group_rows = builder.metadata().row_groups().iter().map(|g| g.num_rows() as u64);
        let (groups, span) = row_groups_holding(group_rows, &chosen_span(&chosen));
        chosen.split_off(span.start as usize);
        builder = builder
            .with_row_groups(groups)
            .with_row_selection(chosen.split_off((span.end - span.start) as usize));
    }
    builder.build()
}

/// The row groups (of these sizes, in order) holding any of the `wanted` rows, and the
/// rows they span.
fn row_groups_holding(
    group_rows: impl Iterator<Item = u64>,
    wanted: &Range<u64>,
) -> (Vec<usize>, Range<u64>) {
    let mut groups = Vec::new();
    let mut span: Option<Range<u64>> = None;
    let mut start = 0;
    for (i, rows) in group_rows.enumerate() {
        let end = start + rows;
        if start.max(wanted.start) < end.min(wanted.end) {
            groups.push(i);
            span = Some(span.map_or(start, |s| s.start)..end);
        }
        start = end;
    }
    (groups, span.unwrap_or(0..0))
}

/// The rows to read of a file of `rows` rows: those in `wanted` but the `deleted` positions.
fn selection(deleted: &[u64], wanted: Range<u64>, rows: u64) -> Result<RowSelection, String> {
    if wanted.start > wanted.end || wanted.end > rows {
        return Err(format!("rows {wanted:?} were planned, but it holds {rows} rows"));
    }
    let mut selectors = vec![RowSelector::skip(wanted.start as usize)];
    let mut next = wanted.start;
    for (i, &d) in deleted.iter().enumerate() {
        if (i > 0 && d <= deleted[i - 1]) || d >= rows {
            return Err(format!(
                "its deletion vector holds position {d}, outside its {rows} rows or out of order"
            ));
        }
        if d < next || d >= wanted.end {
            continue;
        }
        selectors.push(RowSelector::select((d - next) as usize));
        selectors.push(RowSelector::skip(1));
        next = d + 1;
    }
    selectors.push(RowSelector::select((wanted.end - next) as usize));
    selectors.push(RowSelector::skip((rows - wanted.end) as usize));
    selectors.retain(|s| s.row_count > 0);
    Ok(selectors.into())
}

/// The read's schema; a table's file is named in its metadata (see [`crate::error::blame`]).
fn marked(schema: &SchemaRef, file: &DataFile) -> SchemaRef {
    if !file.of_table {
        return Arc::clone(schema);
    }
    let mut metadata = schema.metadata().clone();
    metadata.insert(TABLE_FILE, file.path.display().to_string());
    Arc::new(Schema::new_with_metadata(schema.fields().clone(), metadata))
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
    RecordBatch::try_new_with_options(marked(schema, file), columns, &options)
        .map_err(|e| damaged(file, &e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones() -> Arc<SharedZones> {
        let cut: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![5]));
        Arc::new(SharedZones::new(cut, 0, 0..10))
    }

    /// The other side of the cut, on a thread of its own: how many batches it takes,
    /// or `Err` if it gets the claim to decode the zones.
    fn other_side(zones: &Arc<SharedZones>) -> std::thread::JoinHandle<Result<usize, ()>> {
        let zones = zones.clone();
        std::thread::spawn(move || zones.take_or_claim().map(|rows| rows.len()).map_err(drop))
    }

    #[test]
    fn shared_zones_wait_for_the_decoding_side() {
        let zones = zones();
        let Err(claim) = zones.take_or_claim() else { panic!("nobody decoded them yet") };
        let other = other_side(&zones);
        std::thread::sleep(std::time::Duration::from_millis(50)); // the other side waits meanwhile
        let batch =
            RecordBatch::try_from_iter([("k", Arc::new(arrow_array::Int64Array::from(vec![6])) as ArrayRef)]);
        claim.set_aside(vec![batch.unwrap()]);
        assert_eq!(other.join().unwrap(), Ok(1));
    }

    #[test]
    fn a_dropped_claim_lets_the_other_side_decode() {
        let zones = zones();
        let Err(claim) = zones.take_or_claim() else { panic!("nobody decoded them yet") };
        let other = other_side(&zones);
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(claim); // as when decoding fails
        assert_eq!(other.join().unwrap(), Err(()), "the waiting side must get the claim");
    }

    #[test]
    fn row_groups_holding_keeps_those_overlapping_the_wanted_rows() {
        let holding = |wanted: Range<u64>| row_groups_holding([4u64, 0, 3, 5].into_iter(), &wanted);
        assert_eq!(holding(0..12), (vec![0, 2, 3], 0..12));
        assert_eq!(holding(4..7), (vec![2], 4..7));
        assert_eq!(holding(3..5), (vec![0, 2], 0..7));
        assert_eq!(holding(6..8), (vec![2, 3], 4..12));
        assert_eq!(holding(5..5), (vec![], 0..0));
    }

    #[test]
    fn selection_skips_the_deleted_positions() {
        let kept = |deleted: &[u64], wanted: Range<u64>| {
            let mut pos = 0;
            let mut kept = Vec::new();
            for sel in Vec::<RowSelector>::from(selection(deleted, wanted, 10).unwrap()) {
                if !sel.skip {
                    kept.extend(pos..pos + sel.row_count);
                }
                pos += sel.row_count;
            }
            assert_eq!(pos, 10);
            kept
        };
        assert_eq!(kept(&[0, 2, 3, 9], 0..10), vec![1, 4, 5, 6, 7, 8]);
        assert_eq!(kept(&[0, 2, 3, 9], 2..9), vec![4, 5, 6, 7, 8]);
        assert_eq!(kept(&[], 3..5), vec![3, 4]);
        assert_eq!(kept(&[4], 4..5), Vec::<usize>::new());
        assert!(selection(&[3, 3], 0..10, 10).is_err());
        assert!(selection(&[10], 0..10, 10).is_err());
        assert!(selection(&[], 0..11, 10).is_err());
    }
}
