//! The spillable external sort: [`SortBuffer`].
//!
//! # Algorithm
//!
//! 1. `write` buffers batches while their accounted memory (the Arrow buffers of the
//!    rows held, their keys in row format, and the sort's scratch of 16 bytes a row)
//!    stays within `memory_limit`. A batch that does not fit is sliced; only a single row
//!    larger than the whole budget is refused.
//! 2. A full buffer is sorted by (key, version), then folded key by key into batches
//!    (see [`sorted`]) and written as one spill file (see [`spill`]) in the
//!    background: a thread folds and gathers while another compresses and writes.
//!    Once a sort has spilled, buffers are half the budget, so one fills while the
//!    other is written; at most one spill is in flight and its memory
//!    still counts against the limit.
//! 3. `finish` returns the sorted buffer directly if nothing was spilled. Otherwise it
//!    spills the rest and merges the spilled runs with the loser tree. When there are
//!    more runs than `max_fan_in`, intermediate passes merge contiguous runs (keeping
//!    their version order), a partial round first so that every later round is a full
//!    `max_fan_in`-way merge; runs are never merged while data is written.
//!
//! # Folding while sorting
//!
//! With `merge`, the output has one row per key. Folding a spill run early is only
//! sound when folding is associative over contiguous stretches of versions:
//! deduplicate (keeping a newest retract as `-D` so that it still deletes older runs'
//! rows), first-row, and partial-update or aggregate when rows carry neither row kinds
//! nor sequence numbers (see [`MergeFunction::for_partial_run`]). Otherwise runs are
//! spilled sorted but unfolded, and the final merge folds every version at once. With
//! `partial`, the output itself is such a run (a table's new run lies above older ones).

mod sorted;
mod spill;

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_data::ArrayData;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::DataType;
use arrow_schema::SchemaRef;

use crate::engine::Algorithm;
use crate::error::{invalid, MergeError, Result};
use crate::fold::{Folder, MergeFunction};
use crate::keys::canonical_nans;
use crate::merge::plan::output_schema;
use crate::merge::plan::MergeOptions;
use crate::merge::stream::{merge_runs, MergeStream, SharedSortStats, SharedStats};
use crate::runs::store::{BatchStore, StoredBatch};
use crate::runs::value::ColumnView;
use crate::runs::version::{first_null, BatchVersions, VersionColumns};
use crate::runs::{Layout, Run};
use sorted::{Buffered, SortedBatches};
pub use spill::Compression;
use spill::{SpillDir, SpillFile};

/// Options of a [`SortBuffer`]; see the Python `merge_core.sort` for their meaning.
#[derive(Debug, Clone)]
pub struct SortOptions {
    /// Key columns.
    pub key: Vec<String>,
    /// The columns ordering and classifying the versions of a key (none: arrival order).
    pub versions: VersionColumns,
    /// Fold the versions of each key (`None`: keep every row).
    pub merge: Option<MergeFunction>,
    /// Memory budget in bytes.
    pub memory_limit: usize,
    /// Parent of the private spill directory (the system temporary directory if `None`).
    pub spill_dir: Option<PathBuf>,
    /// Compression of spill files.
    pub compression: Compression,
    /// Most spilled runs merged at once.
    pub max_fan_in: usize,
    /// Most bytes of spill files on disk at once.
    pub max_disk_size: Option<u64>,
    /// Rows per output batch, at most: batches of wide rows are cut smaller, to about
    /// a sixteenth of `memory_limit` in bytes.
    pub batch_size: usize,
    /// The output is not the final result but a run above older runs: fold it only as
    /// far as that is sound, keeping deletes (see [`MergeFunction::for_partial_run`]).
    pub partial: bool,
}

impl SortOptions {
    /// A plain sort on `key` within 256 MiB.
    pub fn new(key: &[&str]) -> Self {
        Self {
            key: key.iter().map(|k| k.to_string()).collect(),
            versions: VersionColumns::default(),
            merge: None,
            memory_limit: 256 << 20,
            spill_dir: None,
            compression: Compression::default(),
            max_fan_in: 128,
            max_disk_size: None,
            batch_size: 8192,
            partial: false,
        }
    }
}

/// Bytes of sort scratch a buffered row costs: its 16-byte sort entry, and as much again
/// for the stable sort's buffer (which takes up to one entry per row).
const SCRATCH_PER_ROW: usize = 32;

/// An output batch holds about `memory_limit / OUTPUT_SHARE` bytes at most: its reader
/// holds one or two beside the sort's memory (a sort that never spilled still holds its
/// whole buffer while it hands the rows out).
const OUTPUT_SHARE: usize = 16;

/// A batch that must be cut is copied out in pieces of at most `memory_limit /
/// PIECE_SHARE` bytes. A piece as large as the room left made allocations of up to half
/// the budget, and once glibc's malloc frees a block that large it keeps up to twice its
/// size free in its heaps rather than handing it back.
const PIECE_SHARE: usize = 16;

/// Sorts any amount of data within a memory budget, spilling sorted runs to disk.
pub struct SortBuffer {
    schema: SchemaRef,
    options: SortOptions,
    layout: Arc<Layout>,
    /// The merge function applied when a run is spilled.
    spill_function: MergeFunction,
    converter: RowConverter,
    buffered: Buffered,
    memory: usize,
    arrival: u64,
    /// Bytes accounted for every row buffered so far (for the size of output batches).
    bytes_in: u64,
    /// Batches written so far, for messages.
    batches_written: u64,
    /// Key bytes a row took in the last piece measured (an estimate for the next).
    key_row_bytes: usize,
    spill: Option<Arc<SpillDir>>,
    runs: Vec<SpillFile>,
    /// A spill being written by a background thread (at most one).
    in_flight: Option<InFlight>,
    stats: Arc<SharedSortStats>,
    failed: bool,
}

/// A buffer being sorted and written to disk by another thread; its memory still counts.
struct InFlight {
    bytes: usize,
    writer: std::thread::JoinHandle<Result<SpillFile>>,
}

impl SortBuffer {
    /// A buffer for batches of `schema`.
    pub fn new(schema: SchemaRef, mut options: SortOptions) -> Result<Self> {
        if options.batch_size == 0 {
            return Err(invalid!("batch_size must be at least 1"));
        }
        if options.max_fan_in < 2 {
            return Err(invalid!("max_fan_in must be at least 2"));
        }
        let mut layout = Layout::new(schema.clone(), &options.key, &options.versions, false)?;
        // Spill directories of sorts that died: swept at every start, spilling or not.
        spill::sweep_orphans(&options.spill_dir.clone().unwrap_or_else(std::env::temp_dir));
        let plain_rows = options.versions.plain();
        let mut function = options.merge.clone().unwrap_or(MergeFunction::None);
        if options.partial {
            function = function.for_partial_run(plain_rows);
            options.merge = Some(function.clone());
        }
        layout.view_columns = Folder::new(function.clone(), &layout)?.view_columns();
        let fields =
            layout.key.iter().map(|&k| SortField::new(schema.field(k).data_type().clone())).collect();
        let converter = RowConverter::new(fields)?;
        let spill_function = function.for_partial_run(plain_rows);
        Ok(Self {
            schema,
            layout: Arc::new(layout),
            spill_function,
            converter,
            buffered: Buffered { store: BatchStore::default(), keys: Vec::new() },
            memory: 0,
            arrival: 0,
            bytes_in: 0,
            batches_written: 0,
            key_row_bytes: 0,
            spill: None,
            runs: Vec::new(),
            in_flight: None,
            stats: Arc::new(SharedSortStats::default()),
            failed: false,
            options,
        })
    }

    /// The stats so far (memory now and at peak, spilled runs and bytes).
    pub fn stats(&self) -> crate::merge::stream::SortStats {
        self.stats.get()
    }

    /// The private directory of this buffer's spill files, once one was created.
    pub fn spill_path(&self) -> Option<PathBuf> {
        self.spill.as_ref().map(|dir| dir.path().to_path_buf())
    }

    /// Rows written so far.
    pub fn rows_written(&self) -> u64 {
        self.arrival
    }

    /// Adds a batch; spills when the buffer is full.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.failed {
            return Err(invalid!("the sort buffer failed earlier and cannot take more data"));
        }
        let result = self.write_checked(batch);
        self.batches_written += 1;
        if result.is_err() {
            self.fail();
        }
        result
    }

    fn write_checked(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_batch(batch)?;
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(());
        }
        let limit = self.options.memory_limit;
        // An estimate first (keys as long as the last piece's), so that a batch that will
        // be cut is never converted whole; then what each measured piece says.
        let mut per_row =
            (data_bytes(batch) + self.key_row_bytes * rows).div_ceil(rows) + self.fixed_row_bytes();
        let mut offset = 0;
        while offset < rows {
            let capacity = self.capacity();
            let room = capacity.saturating_sub(self.memory) / per_row;
            let take = if offset == 0 && room >= rows {
                rows // kept whole, uncopied
            } else {
                room.min(limit / PIECE_SHARE / per_row).clamp(1, rows - offset)
            };
            let part = if take == rows { batch.clone() } else { batch.slice(offset, take) };
            let piece = Piece::measure(self, part)?;
            self.key_row_bytes = piece.keys.size().div_ceil(take);
            per_row = per_row.max(piece.bytes.div_ceil(take));
            let alone = self.buffered.keys.is_empty() && self.in_flight.is_none();
            if self.memory + piece.bytes <= capacity || (alone && piece.bytes <= limit) {
                self.buffer(if take < rows { piece.compacted(self)? } else { piece })?;
                offset += take;
            } else if !self.buffered.keys.is_empty() {
                self.spill_buffer()?;
            } else if self.in_flight.is_some() {
                self.wait_for_spill()?;
            } else if take > 1 {
                // Over the whole budget alone: retry smaller slices.
                per_row += 1;
            } else {
                return Err(invalid!(
                    "input row {}: a single row needs {} bytes of sort memory, more than memory_limit \
                     ({limit} bytes); raise memory_limit",
                    self.arrival,
                    piece.bytes
                ));
            }
        }
        Ok(())
    }

    fn check_batch(&self, batch: &RecordBatch) -> Result<()> {
        let expected = self.schema.fields();
        let got = batch.schema();
        let same = got.fields().len() == expected.len()
            && expected
                .iter()
                .zip(got.fields())
                .all(|(e, g)| e.name() == g.name() && e.data_type() == g.data_type());
        if !same {
            return Err(invalid!(
                "written batch {} (from input row {}): its schema ({got}) differs from the buffer's ({})",
                self.batches_written,
                self.arrival,
                self.schema
            ));
        }
        for &k in &self.layout.key {
            if let Some(row) = first_null(batch.column(k).as_ref()) {
                let at = self.arrival + row as u64;
                return Err(invalid!("input row {at}: null in key column '{}'", self.schema.field(k).name()));
            }
        }
        Ok(())
    }

    fn key_columns(&self, batch: &RecordBatch) -> Vec<ArrayRef> {
        self.layout.key.iter().map(|&k| batch.column(k).clone()).collect()
    }

    fn buffer(&mut self, piece: Piece) -> Result<()> {
        let Piece { batch, keys, versions, bytes } = piece;
        let layout = &self.layout;
        let rows = batch.num_rows();
        self.memory += bytes;
        let in_flight = self.in_flight.as_ref().map_or(0, |f| f.bytes);
        let views = layout.view_columns.iter().map(|&c| ColumnView::new(batch.column(c))).collect();
        self.buffered.store.push(StoredBatch { batch, versions, run: 0, first_row: self.arrival, views });
        self.buffered.keys.push(keys);
        self.arrival += rows as u64;
        self.bytes_in += bytes as u64;
        self.stats.rows_in.store(self.arrival, std::sync::atomic::Ordering::Relaxed);
        self.stats.set_memory((self.memory + in_flight) as u64);
        Ok(())
    }

    /// Bytes a buffered row costs besides its data and key: its versions and its sort
    /// scratch.
    fn fixed_row_bytes(&self) -> usize {
        8 * self.layout.sequence.len() + usize::from(self.layout.row_kind.is_some()) + SCRATCH_PER_ROW
    }

    /// Bytes the buffer being filled may hold. Once the data has proved larger than
    /// memory, buffers are half the budget, so that one can fill while the other is
    /// sorted and written by a background thread.
    fn capacity(&self) -> usize {
        let limit = self.options.memory_limit;
        let in_flight = self.in_flight.as_ref().map_or(0, |f| f.bytes);
        let spilled = in_flight > 0 || !self.runs.is_empty();
        let cap = if spilled { limit / 2 } else { limit };
        cap.min(limit - in_flight)
    }

    /// Takes the buffer out as sorted, folded batches of `rows` rows.
    fn take_sorted(&mut self, function: MergeFunction, rows: usize) -> Result<(SchemaRef, SortedBatches)> {
        let buffered = std::mem::replace(
            &mut self.buffered,
            Buffered { store: BatchStore::default(), keys: Vec::new() },
        );
        let folder = Folder::new(function, &self.layout)?;
        let schema = output_schema(&self.layout, &folder);
        Ok((schema.clone(), SortedBatches::new(buffered, &self.layout, folder, schema, rows)))
    }

    /// Sorts and writes the buffer on a background thread (after the previous spill ends).
    fn spill_buffer(&mut self) -> Result<()> {
        self.wait_for_spill()?;
        let rows = self.spill_batch_rows();
        let (schema, sorted) = self.take_sorted(self.spill_function.clone(), rows)?;
        let dir = self.spill_dir()?;
        let writer = std::thread::Builder::new()
            .name("merge-core-spill".into())
            .spawn(move || dir.write(&schema, crate::read::prefetch::on_own_thread(sorted)))?;
        self.in_flight = Some(InFlight { bytes: self.memory, writer });
        self.memory = 0;
        Ok(())
    }

    /// Waits for the spill in flight, if any, and takes its file.
    fn wait_for_spill(&mut self) -> Result<()> {
        let Some(in_flight) = self.in_flight.take() else { return Ok(()) };
        let file = in_flight
            .writer
            .join()
            .unwrap_or_else(|_| Err(MergeError::Internal("the spill thread panicked".into())))?;
        self.stats.set_memory(self.memory as u64);
        self.record_spill(&file);
        self.runs.push(file);
        Ok(())
    }

    fn record_spill(&self, file: &SpillFile) {
        use std::sync::atomic::Ordering::Relaxed;
        self.stats.spilled_runs.fetch_add(1, Relaxed);
        self.stats.spilled_bytes.fetch_add(file.bytes(), Relaxed);
    }

    /// Rows per spilled batch, so that `max_fan_in` runs being merged, each holding a
    /// few batches, use about a quarter of the budget between them.
    fn spill_batch_rows(&self) -> usize {
        let rows = self.buffered.keys.iter().map(Rows::num_rows).sum::<usize>().max(1);
        let row_bytes = (self.memory / rows).max(1);
        let per_run = self.options.memory_limit / (4 * self.options.max_fan_in);
        (per_run / row_bytes).clamp(1, self.options.batch_size)
    }

    /// Rows per output batch: `batch_size`, or fewer when rows as large as the average
    /// row buffered (its data, key and scratch) would pass `memory_limit / OUTPUT_SHARE`.
    /// Counted in rows alone, a table write's 65,536-row batches of 1 KiB strings were
    /// 64 MiB each, a whole 64 MiB limit.
    fn output_batch_rows(&self) -> usize {
        let row_bytes = (self.bytes_in / self.arrival.max(1)).max(1) as usize;
        (self.options.memory_limit / OUTPUT_SHARE / row_bytes).clamp(1, self.options.batch_size)
    }

    fn spill_dir(&mut self) -> Result<Arc<SpillDir>> {
        if self.spill.is_none() {
            let o = &self.options;
            self.spill =
                Some(Arc::new(SpillDir::create(o.spill_dir.as_deref(), o.compression, o.max_disk_size)?));
        }
        Ok(self.spill.clone().expect("just created"))
    }

    /// After an error: nothing more is accepted and every spill file is deleted now.
    fn fail(&mut self) {
        self.failed = true;
        let _ = self.wait_for_spill();
        self.runs.clear();
        self.buffered = Buffered { store: BatchStore::default(), keys: Vec::new() };
        self.memory = 0;
        self.stats.set_memory(0);
        // The last reference: the directory goes now, not when the buffer is dropped.
        self.spill = None;
    }

    /// Ends writing and returns the sorted (and folded) data as a stream.
    pub fn finish(mut self) -> Result<MergeStream> {
        if self.failed {
            return Err(invalid!("the sort buffer failed earlier"));
        }
        let result = self.finish_inner();
        if result.is_err() {
            self.fail();
        }
        result
    }

    fn finish_inner(&mut self) -> Result<MergeStream> {
        let function = self.options.merge.clone().unwrap_or(MergeFunction::None);
        let batch_rows = self.output_batch_rows();
        if self.runs.is_empty() && self.in_flight.is_none() {
            let (schema, sorted) = self.take_sorted(function, batch_rows)?;
            let stats = Arc::new(SharedStats::default());
            let counted = CountRows { inner: sorted, stats: stats.clone() };
            return Ok(MergeStream::of_sort(schema, Box::new(counted), stats, self.stats.clone()));
        }
        if !self.buffered.keys.is_empty() {
            self.spill_buffer()?;
        }
        self.wait_for_spill()?;
        self.memory = 0;
        self.stats.set_memory(0);
        while self.runs.len() > self.options.max_fan_in {
            self.merge_round()?;
        }
        let runs = std::mem::take(&mut self.runs);
        let stream = merge_runs(self.readers(runs)?, self.merge_options(function, batch_rows), false)?;
        Ok(stream.with_sort_stats(self.stats.clone()))
    }

    /// One round of intermediate merges: the first round only merges as many runs as
    /// leave a power of the fan-in, so that later rounds are full.
    fn merge_round(&mut self) -> Result<()> {
        let plan = plan_round(self.runs.len(), self.options.max_fan_in);
        let mut runs = std::mem::take(&mut self.runs).into_iter();
        let mut merged = Vec::new();
        for size in plan {
            let group: Vec<SpillFile> = runs.by_ref().take(size).collect();
            if size == 1 {
                merged.extend(group);
                continue;
            }
            let rows = self.options.batch_size.min(self.spill_rows_of(&group));
            let options = self.merge_options(self.spill_function.clone(), rows);
            let stream = merge_runs(self.readers(group)?, options, false)?;
            let schema = stream.schema();
            let file = self.spill_dir()?.write(&schema, stream)?;
            self.record_spill(&file);
            merged.push(file);
        }
        merged.extend(runs);
        self.runs = merged;
        self.stats.merge_passes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Rows per batch when merging `group`, sized like [`Self::spill_batch_rows`].
    fn spill_rows_of(&self, group: &[SpillFile]) -> usize {
        let rows: u64 = group.iter().map(SpillFile::rows).sum();
        let bytes: u64 = group.iter().map(SpillFile::bytes).sum();
        let row_bytes = (bytes / rows.max(1)).max(1) as usize;
        (self.options.memory_limit / (4 * self.options.max_fan_in) / row_bytes).max(1)
    }

    fn readers(&self, runs: Vec<SpillFile>) -> Result<Vec<Run>> {
        runs.into_iter()
            .map(|file| {
                let reader = file.into_reader()?;
                Ok(Run { schema: arrow_array::RecordBatchReader::schema(&reader), batches: Box::new(reader) })
            })
            .collect()
    }

    fn merge_options(&self, merge: MergeFunction, batch_size: usize) -> MergeOptions {
        MergeOptions {
            key: self.options.key.clone(),
            versions: self.options.versions.clone(),
            merge,
            algorithm: Algorithm::LoserTree,
            batch_size,
            columns: None,
        }
    }
}

impl Drop for SortBuffer {
    fn drop(&mut self) {
        // Let a spill in flight finish, so that its file is deleted with the buffer.
        let _ = self.wait_for_spill();
    }
}

/// Sizes of contiguous groups to merge in one round over `runs` runs (a size of 1
/// leaves the run as it is), with `runs > fan_in`.
fn plan_round(runs: usize, fan_in: usize) -> Vec<usize> {
    // After this round, `target` runs remain: a power of the fan-in, so later rounds are full.
    let mut target = 1;
    while target * fan_in < runs {
        target *= fan_in;
    }
    let mut plan = Vec::new();
    let mut remaining = runs;
    while remaining > target - plan.len() {
        let left_after = target - plan.len() - 1; // outputs still to place after this one
        let size = (remaining - left_after).min(fan_in);
        plan.push(size);
        remaining -= size;
    }
    plan.extend(std::iter::repeat_n(1, remaining));
    plan
}

/// A slice of a written batch with its keys and versions, and the bytes it costs once
/// buffered.
struct Piece {
    batch: RecordBatch,
    keys: Rows,
    versions: BatchVersions,
    bytes: usize,
}

impl Piece {
    fn measure(buffer: &SortBuffer, batch: RecordBatch) -> Result<Self> {
        // Keys in Java's order: a float key's NaNs made one (see `crate::keys`).
        let keys = buffer.converter.convert_columns(&canonical_nans(&buffer.key_columns(&batch)))?;
        let versions = buffer.layout.versions_of(&batch, 0, buffer.arrival)?;
        let bytes = data_bytes(&batch)
            + keys.size()
            + versions.encoded_bytes()
            + batch.num_rows() * buffer.fixed_row_bytes();
        Ok(Self { batch, keys, versions, bytes })
    }

    /// The piece in buffers of its own, its versions read again from them. A slice would
    /// keep its whole batch alive while the buffer counts only its share: a batch cut
    /// between two buffers would be held twice, once by the one being spilled and once
    /// by the next (the versions point into the batch's buffers too).
    fn compacted(self, buffer: &SortBuffer) -> Result<Self> {
        let rows = arrow_array::UInt32Array::from_iter_values(0..self.batch.num_rows() as u32);
        let batch = arrow_select::take::take_record_batch(&self.batch, &rows)?;
        let versions = buffer.layout.versions_of(&batch, 0, buffer.arrival)?;
        Ok(Self { batch, versions, ..self })
    }
}

/// Bytes of the buffers of `batch`'s rows (a slice counts only its share).
fn data_bytes(batch: &RecordBatch) -> usize {
    batch.columns().iter().map(|c| slice_bytes(&c.to_data())).sum()
}

/// Bytes of an array's own share of its buffers. Like arrow's `get_slice_memory_size`,
/// except that a list's child counts only the elements the list's rows use: a slice of
/// one row of a list column keeps the whole child array, which arrow counts whole.
fn slice_bytes(data: &ArrayData) -> usize {
    let own = |offset_width: usize| {
        (data.len() + 1) * offset_width + data.nulls().map_or(0, |_| data.len().div_ceil(8))
    };
    match data.data_type() {
        DataType::List(_) | DataType::Map(_, _) => {
            let offsets = &data.buffer::<i32>(0)[..=data.len()]; // `buffer` starts at the offset
            let (start, end) = (offsets[0] as usize, offsets[data.len()] as usize);
            own(4) + slice_bytes(&data.child_data()[0].slice(start, end - start))
        }
        DataType::LargeList(_) => {
            let offsets = &data.buffer::<i64>(0)[..=data.len()];
            let (start, end) = (offsets[0] as usize, offsets[data.len()] as usize);
            own(8) + slice_bytes(&data.child_data()[0].slice(start, end - start))
        }
        DataType::FixedSizeList(_, size) => {
            let size = *size as usize;
            let child = data.child_data()[0].slice(data.offset() * size, data.len() * size);
            data.nulls().map_or(0, |_| data.len().div_ceil(8)) + slice_bytes(&child)
        }
        DataType::Struct(_) => {
            data.nulls().map_or(0, |_| data.len().div_ceil(8))
                + data.child_data().iter().map(slice_bytes).sum::<usize>()
        }
        _ => data.get_slice_memory_size().unwrap_or_else(|_| data.get_array_memory_size()),
    }
}

/// Counts the output rows of an in-memory sort into the stream's stats.
struct CountRows {
    inner: SortedBatches,
    stats: Arc<SharedStats>,
}

impl Iterator for CountRows {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        if let Some(Ok(batch)) = &item {
            self.stats.add_rows_out(batch.num_rows() as u64);
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;
    use arrow_array::{Array, Float64Array, Int64Array, ListArray, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::{plan_round, slice_bytes, SortBuffer, SortOptions};
    use crate::fold::MergeFunction;

    /// Float keys sort as Java's `Double.compare` orders them, in memory and through
    /// spilled runs: every NaN one key, above `+inf`, and `-0.0` below `0.0`.
    #[test]
    fn float_keys_sort_in_javas_order() {
        let weird_nan = f64::from_bits(0x7ff0_0000_0000_0001);
        let keys = vec![f64::NAN, 1.0, -f64::NAN, f64::NEG_INFINITY, 0.0, -0.0, weird_nan, f64::INFINITY];
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Float64, false)]));
        for memory_limit in [1 << 20, 256] {
            let mut options = SortOptions::new(&["k"]);
            options.merge = Some(MergeFunction::Deduplicate { ignore_delete: false, drop_deletes: true });
            options.memory_limit = memory_limit; // 256 bytes: a spill every few rows
            let mut buffer = SortBuffer::new(schema.clone(), options).unwrap();
            for &k in &keys {
                let column = Arc::new(Float64Array::from(vec![k]));
                buffer.write(&RecordBatch::try_new(schema.clone(), vec![column]).unwrap()).unwrap();
            }
            let out: Vec<f64> = buffer
                .finish()
                .unwrap()
                .flat_map(|batch| batch.unwrap().column(0).as_primitive::<Float64Type>().values().to_vec())
                .collect();
            let bits: Vec<u64> = out.iter().map(|v| v.to_bits()).collect();
            let expected = [f64::NEG_INFINITY, -0.0, 0.0, 1.0, f64::INFINITY];
            assert_eq!(bits[..5], expected.map(f64::to_bits), "limit {memory_limit}: {out:?}");
            assert!(out.len() == 6 && out[5].is_nan(), "limit {memory_limit}: {out:?}");
        }
    }

    #[test]
    fn a_slice_of_nested_lists_counts_its_own_elements() {
        // 100 rows of [[i]], sliced: the outer slice has an offset, and so does the
        // inner list handed to the recursion.
        let values = Int64Array::from((0..100).collect::<Vec<i64>>());
        let inner_field = Arc::new(Field::new("item", values.data_type().clone(), true));
        let inner = ListArray::new(
            inner_field.clone(),
            arrow_buffer::OffsetBuffer::from_lengths(vec![1; 100]),
            Arc::new(values),
            None,
        );
        let outer_field = Arc::new(Field::new("item", inner.data_type().clone(), true));
        let outer = ListArray::new(
            outer_field,
            arrow_buffer::OffsetBuffer::from_lengths(vec![1; 100]),
            Arc::new(inner),
            None,
        );
        let whole = slice_bytes(&outer.to_data());
        let tail = slice_bytes(&outer.slice(90, 10).to_data());
        // Each row: an outer and an inner offset (4 bytes each) and one 8-byte value.
        assert_eq!(tail, 2 * 4 + 10 * (4 + 4 + 8));
        assert!(whole > 9 * tail);
    }

    #[test]
    fn plans_a_partial_round_first() {
        // 19 runs at fan-in 4: the partial round merges 4 of them, leaving 16 for full rounds.
        let plan = plan_round(19, 4);
        assert_eq!(plan.iter().sum::<usize>(), 19);
        assert_eq!(plan.len(), 16);
        assert_eq!(plan.iter().filter(|&&s| s > 1).count(), 1);
        for (runs, fan_in) in [(5, 2), (9, 3), (129, 128), (1000, 128), (17, 4), (16, 4), (3, 2)] {
            let plan = plan_round(runs, fan_in);
            assert_eq!(plan.iter().sum::<usize>(), runs, "{runs} {fan_in}");
            assert!(plan.iter().all(|&s| (1..=fan_in).contains(&s)));
            let after = plan.len();
            assert!(after.is_power_of_two() || fan_in != 2 || after == 1);
            // What is left is a power of the fan-in (or fits one final merge).
            let mut p = 1;
            while p < after {
                p *= fan_in;
            }
            assert_eq!(p, after, "{runs} runs, fan-in {fan_in}: {plan:?}");
        }
    }
}
