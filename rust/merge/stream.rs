//! The public merge: check the runs, pick the key representation and the engine, and
//! stream output batches of `batch_size` rows (the last may be shorter).
//!
//! Data flows one way: run cursors -> engine (key groups) -> merge function -> builder.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};
use arrow_select::filter::filter_record_batch;

use super::plan::{MergeOptions, MergePlan};
use crate::engine::{Algorithm, Heap, LoserTree, MergeEngine, PaimonLoserTree};
use crate::error::{blame, invalid, MergeError, Result, RowLocation};
use crate::fold::builder::OutputBuilder;
use crate::fold::{Folder, Paths};
use crate::keys::{dispatch, KeyEncoder, KeyVisitor};
use crate::read::counters::{ReadCounters, ReadStats};
use crate::runs::version::{retracts, row_kind_array, RowKind};
use crate::runs::{check_batch_schema, BatchIter, Group, Layout, Run, Runs};

/// Figures of a merge so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MergeStats {
    /// Number of input runs.
    pub runs: u64,
    /// Rows read from the runs so far.
    pub rows_in: u64,
    /// Rows emitted so far.
    pub rows_out: u64,
    /// Key comparisons made by the engine (not counting the input checks).
    pub key_comparisons: u64,
    /// Figures of the sort, for the stream of a sort.
    pub sort: Option<SortStats>,
    /// Figures of the data files read, for the stream of a table's read.
    pub read: Option<ReadStats>,
}

/// Figures of a sort (see [`crate::SortBuffer`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SortStats {
    /// Sorted runs written to disk.
    pub spilled_runs: u64,
    /// Bytes written to spill files (intermediate merges included).
    pub spilled_bytes: u64,
    /// Intermediate merge passes over spilled runs (0 when one final merge sufficed).
    pub merge_passes: u64,
    /// Most memory the sort had accounted for at once.
    pub peak_memory_bytes: u64,
    /// Memory accounted for now.
    pub memory_bytes: u64,
}

/// Stats published by the merge as it goes, readable from another handle.
#[derive(Default)]
pub(crate) struct SharedStats {
    runs: AtomicU64,
    rows_in: AtomicU64,
    rows_out: AtomicU64,
    key_comparisons: AtomicU64,
}

/// Stats published by a sort as it goes.
#[derive(Default)]
pub(crate) struct SharedSortStats {
    pub rows_in: AtomicU64,
    pub spilled_runs: AtomicU64,
    pub spilled_bytes: AtomicU64,
    pub merge_passes: AtomicU64,
    pub peak_memory_bytes: AtomicU64,
    pub memory_bytes: AtomicU64,
}

impl SharedStats {
    pub(crate) fn add_rows_out(&self, rows: u64) {
        self.rows_out.fetch_add(rows, Relaxed);
    }
}

impl SharedSortStats {
    pub(crate) fn get(&self) -> SortStats {
        SortStats {
            spilled_runs: self.spilled_runs.load(Relaxed),
            spilled_bytes: self.spilled_bytes.load(Relaxed),
            merge_passes: self.merge_passes.load(Relaxed),
            peak_memory_bytes: self.peak_memory_bytes.load(Relaxed),
            memory_bytes: self.memory_bytes.load(Relaxed),
        }
    }

    /// Records `bytes` as the memory now accounted for.
    pub(crate) fn set_memory(&self, bytes: u64) {
        self.memory_bytes.store(bytes, Relaxed);
        self.peak_memory_bytes.fetch_max(bytes, Relaxed);
    }
}

/// The lazy result of [`merge`]: an iterator of output batches.
pub struct MergeStream {
    schema: SchemaRef,
    batches: Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
    stats: Arc<SharedStats>,
    sort: Option<Arc<SharedSortStats>>,
    read: Option<Arc<ReadCounters>>,
}

impl MergeStream {
    /// The output schema (the runs' schema; a field is nullable if it is in any run).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// A reader of the stats that stays valid after the stream is handed on.
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle(self.stats.clone(), self.sort.clone(), self.read.clone())
    }

    /// A stream over already computed batches, with the stats of a sort.
    pub(crate) fn of_sort(
        schema: SchemaRef,
        batches: Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
        stats: Arc<SharedStats>,
        sort: Arc<SharedSortStats>,
    ) -> Self {
        Self { schema, batches, stats, sort: Some(sort), read: None }
    }

    /// A stream over `batches` whose figures are published into `stats`.
    pub(crate) fn from_parts(
        schema: SchemaRef,
        batches: Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
        stats: Arc<SharedStats>,
    ) -> Self {
        Self { schema, batches, stats, sort: None, read: None }
    }

    /// Attaches sort stats to a merge stream (the final merge of a sort).
    pub(crate) fn with_sort_stats(mut self, sort: Arc<SharedSortStats>) -> Self {
        self.sort = Some(sort);
        self
    }

    /// Attaches the counters of the data files a table's read takes its runs from.
    pub(crate) fn with_read_counters(mut self, read: Arc<ReadCounters>) -> Self {
        self.read = Some(read);
        self
    }

    /// Figures so far.
    pub fn stats(&self) -> MergeStats {
        self.stats_handle().get()
    }
}

/// See [`MergeStream::stats_handle`].
#[derive(Clone)]
pub struct StatsHandle(Arc<SharedStats>, Option<Arc<SharedSortStats>>, Option<Arc<ReadCounters>>);

impl StatsHandle {
    /// Figures so far.
    pub fn get(&self) -> MergeStats {
        let s = &self.0;
        let sort = self.1.as_ref();
        MergeStats {
            runs: s.runs.load(Relaxed),
            // A sort reads its input through `write`, not through the merge.
            rows_in: sort.map_or(&s.rows_in, |sort| &sort.rows_in).load(Relaxed),
            rows_out: s.rows_out.load(Relaxed),
            key_comparisons: s.key_comparisons.load(Relaxed),
            sort: sort.map(|sort| sort.get()),
            read: self.2.as_ref().map(|read| read.get()),
        }
    }
}

impl Iterator for MergeStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.batches.next()
    }
}

/// An arrow reader over a [`MergeStream`], for handing it on through the C stream
/// interface; merge errors become `ArrowError::ExternalError`.
pub struct MergeReader(pub MergeStream);

impl Iterator for MergeReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for MergeReader {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }
}

/// Merges sorted `runs` key by key, folding the versions of each key with
/// `options.merge`. Runs are read lazily as the returned stream is consumed.
pub fn merge(runs: Vec<Run>, options: MergeOptions) -> Result<MergeStream> {
    let strict = options.merge.folds();
    merge_runs(runs, options, strict)
}

/// [`merge`], where `strict: false` lets a run hold a key several times even when
/// folding (the sort's spilled runs, which are sorted but not always folded).
pub(crate) fn merge_runs(runs: Vec<Run>, options: MergeOptions, strict: bool) -> Result<MergeStream> {
    merge_runs_into(runs, options, strict, Arc::new(SharedStats::default()))
}

/// [`merge_runs`], adding its figures to `stats` (shared by merges read as one stream).
pub(crate) fn merge_runs_into(
    runs: Vec<Run>,
    options: MergeOptions,
    strict: bool,
    stats: Arc<SharedStats>,
) -> Result<MergeStream> {
    merge_with_paths(runs, options, strict, stats, Paths::Fast)
}

/// One group of a table's read: [`merge_runs_into`], or, for a group of one run whose
/// keys are each once among its rows (`lone_as_stored`: a read of compacted files only)
/// and a merge function that outputs a key's lone version as stored
/// ([`Folder::passes_lone_rows_as_stored`]), the run's rows as stored: what the fold
/// would output, without cursors, engine or builder. The keys' order is not checked
/// there (Paimon's reader of such files does not check it either).
pub(crate) fn merge_group(
    runs: Vec<Run>,
    options: MergeOptions,
    strict: bool,
    stats: Arc<SharedStats>,
    lone_as_stored: bool,
) -> Result<MergeStream> {
    if lone_as_stored && runs.len() == 1 && options.batch_size > 0 {
        let plan = MergePlan::new(runs[0].schema.clone(), &options, strict, Paths::Fast)?;
        if plan.folder.passes_lone_rows_as_stored() {
            stats.runs.fetch_add(1, Relaxed);
            let input = runs.into_iter().next().expect("one run").batches;
            let schema = plan.output.schema.clone();
            let batch_size = options.batch_size;
            let rows = AsStored {
                input,
                plan,
                batch_size,
                stats: stats.clone(),
                ready: VecDeque::new(),
                batches: 0,
                next_row: 0,
            };
            return Ok(MergeStream::from_parts(schema, Box::new(rows), stats));
        }
    }
    merge_runs_into(runs, options, strict, stats)
}

/// A run's rows as stored (see [`merge_group`]): retracts left out, every kind `+I`,
/// the output's columns, in batches of at most `batch_size` rows.
struct AsStored {
    input: BatchIter,
    plan: MergePlan,
    batch_size: usize,
    stats: Arc<SharedStats>,
    ready: VecDeque<RecordBatch>,
    /// The run's batches and rows read so far, for messages.
    batches: u64,
    next_row: u64,
}

impl Iterator for AsStored {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                self.stats.add_rows_out(batch.num_rows() as u64);
                return Some(Ok(batch));
            }
            let batch = match self.input.next()? {
                Ok(batch) => batch,
                Err(e) => return Some(Err(e.into())),
            };
            let schema = batch.schema();
            if let Err(e) = self.take(batch) {
                return Some(Err(blame(&schema, e)));
            }
        }
    }
}

impl AsStored {
    /// Makes the output of one input batch ready.
    fn take(&mut self, batch: RecordBatch) -> Result<()> {
        let (layout, output) = (&self.plan.layout, &self.plan.output);
        let first_row = self.next_row;
        self.next_row += batch.num_rows() as u64;
        self.batches += 1;
        self.stats.rows_in.fetch_add(batch.num_rows() as u64, Relaxed);
        check_batch_schema(&layout.schema, 0, self.batches - 1, &batch)?;
        let batch = match layout.row_kind {
            None => batch,
            Some(k) => {
                let at = |row: usize| RowLocation { run: 0, row: first_row + row as u64 };
                match retracts(layout.name(k), batch.column(k).as_ref(), &at)? {
                    None => batch,
                    Some(retract) => {
                        let adds: BooleanArray = retract.iter().map(|&r| Some(!r)).collect();
                        filter_record_batch(&batch, &adds)?
                    }
                }
            }
        };
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let columns = (output.projection.iter())
            .map(|&c| match layout.row_kind == Some(c) {
                true => row_kind_array(batch.column(c).data_type(), &vec![RowKind::Insert; n]),
                false => batch.column(c).clone(),
            })
            .collect();
        let out = RecordBatch::try_new(output.schema.clone(), columns)?;
        for start in (0..n).step_by(self.batch_size) {
            self.ready.push_back(out.slice(start, self.batch_size.min(n - start)));
        }
        Ok(())
    }
}

/// [`merge`] with every fold on its general path (no shortcut), for tests that prove
/// the shortcuts give the same result.
#[cfg(test)]
pub(crate) fn merge_general_path(runs: Vec<Run>, options: MergeOptions) -> Result<MergeStream> {
    let strict = options.merge.folds();
    merge_with_paths(runs, options, strict, Arc::new(SharedStats::default()), Paths::General)
}

fn merge_with_paths(
    runs: Vec<Run>,
    options: MergeOptions,
    strict: bool,
    stats: Arc<SharedStats>,
    paths: Paths,
) -> Result<MergeStream> {
    if options.batch_size == 0 {
        return Err(invalid!("batch_size must be at least 1"));
    }
    stats.runs.fetch_add(runs.len() as u64, Relaxed);
    let Some(schema) = common_schema(&runs)? else {
        let empty = Arc::new(Schema::empty());
        return Ok(MergeStream {
            schema: empty,
            batches: Box::new(std::iter::empty()),
            stats,
            sort: None,
            read: None,
        });
    };
    let plan = MergePlan::new(schema, &options, strict, paths)?;
    let (stream_schema, key_types) = (plan.output.schema.clone(), plan.key_types());
    let inputs = runs.into_iter().map(|r| r.batches).collect();
    let (algorithm, batch_size) = (options.algorithm, options.batch_size);
    let visitor = BuildMerge { inputs, plan, algorithm, batch_size, stats: stats.clone() };
    let batches = dispatch(&key_types, visitor)?;
    Ok(MergeStream { schema: stream_schema, batches, stats, sort: None, read: None })
}

/// The runs' shared schema (a field is nullable if it is in any run), or `None` for no runs.
fn common_schema(runs: &[Run]) -> Result<Option<SchemaRef>> {
    let Some(first) = runs.first() else { return Ok(None) };
    let mut fields: Vec<Field> = first.schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for (i, run) in runs.iter().enumerate().skip(1) {
        let other = run.schema.fields();
        let names = |s: &Schema| s.fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>().join(", ");
        if other.len() != fields.len() || fields.iter().zip(other).any(|(a, b)| a.name() != b.name()) {
            return Err(invalid!(
                "schema mismatch: run {i} has columns [{}] but run 0 has [{}]",
                names(&run.schema),
                names(&first.schema)
            ));
        }
        for (field, theirs) in fields.iter_mut().zip(other) {
            if field.data_type() != theirs.data_type() {
                return Err(invalid!(
                    "schema mismatch: column '{}' is {} in run {i} but {} in run 0",
                    field.name(),
                    theirs.data_type(),
                    field.data_type()
                ));
            }
            if theirs.is_nullable() {
                field.set_nullable(true);
            }
        }
    }
    Ok(Some(Arc::new(Schema::new_with_metadata(fields, first.schema.metadata().clone()))))
}

struct BuildMerge {
    inputs: Vec<BatchIter>,
    plan: MergePlan,
    algorithm: Algorithm,
    batch_size: usize,
    stats: Arc<SharedStats>,
}

type BoxedBatches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

impl KeyVisitor for BuildMerge {
    type Output = BoxedBatches;

    fn visit<E: KeyEncoder>(self, encoder: E) -> BoxedBatches {
        match self.algorithm {
            Algorithm::LoserTree => self.with_engine(encoder, LoserTree::default()),
            Algorithm::PaimonLoserTree => self.with_engine(encoder, PaimonLoserTree::default()),
            Algorithm::Heap => self.with_engine(encoder, Heap::default()),
        }
    }
}

impl BuildMerge {
    fn with_engine<E: KeyEncoder, M: MergeEngine<E> + 'static>(self, encoder: E, engine: M) -> BoxedBatches {
        let MergePlan { layout, folder, output } = self.plan;
        let builder = OutputBuilder::new(output, folder.sinks(&layout));
        let mut runs = Runs::new(self.inputs, encoder, layout.clone());
        if folder.may_add_nulls() {
            runs.store.add_null_row(&layout.schema);
        }
        Box::new(UntilError(Some(Merger {
            runs,
            engine,
            folder,
            builder,
            group: Group::default(),
            batch_size: self.batch_size,
            exhausted: false,
            stats: self.stats,
            published: Default::default(),
        })))
    }
}

/// The merge loop for one key representation `E` and one engine `M`.
struct Merger<E: KeyEncoder, M> {
    runs: Runs<E>,
    engine: M,
    folder: Folder,
    builder: OutputBuilder,
    group: Group,
    batch_size: usize,
    exhausted: bool,
    stats: Arc<SharedStats>,
    /// Rows read and comparisons made already added to `stats`.
    published: (u64, u64),
}

impl<E: KeyEncoder, M: MergeEngine<E>> BatchSource for Merger<E, M> {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        while !self.exhausted && self.builder.len() < self.batch_size {
            self.group.clear();
            if self.engine.next_group(&mut self.runs, &mut self.group)? {
                self.folder.fold(&self.group.rows, &self.runs.store, &mut self.builder)?;
            } else {
                self.exhausted = true;
            }
        }
        let n = self.builder.rows_that_fit(self.builder.len().min(self.batch_size), &self.runs.store);
        let n = n.min(self.builder.len());
        let batch = if n == 0 { None } else { Some(self.builder.build(n, &self.runs.store)?) };
        self.release_batches();
        self.publish_stats(n);
        Ok(batch)
    }
}

impl<E: KeyEncoder, M: MergeEngine<E>> Merger<E, M> {
    /// Drops the stored batches that neither a cursor nor a pending row needs.
    fn release_batches(&mut self) {
        let builder = &self.builder;
        self.runs.release_unused(|live| builder.mark_live(live));
    }

    fn publish_stats(&mut self, rows_out: usize) {
        let counters = self.runs.counters;
        let (rows_in, comparisons) =
            std::mem::replace(&mut self.published, (counters.rows_in, counters.key_comparisons));
        self.stats.rows_in.fetch_add(counters.rows_in - rows_in, Relaxed);
        self.stats.key_comparisons.fetch_add(counters.key_comparisons - comparisons, Relaxed);
        self.stats.rows_out.fetch_add(rows_out as u64, Relaxed);
    }
}

/// Something that produces output batches one call at a time.
pub(crate) trait BatchSource {
    /// The next batch, `None` at the end.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>>;
}

/// The batches of a source until its end or first error. The source is dropped then:
/// after an error its state may be half updated, and dropping it releases its inputs now.
pub(crate) struct UntilError<S>(pub Option<S>);

impl<S: BatchSource> Iterator for UntilError<S> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let result = self.0.as_mut()?.next_batch();
        if !matches!(result, Ok(Some(_))) {
            self.0 = None;
        }
        result.transpose()
    }
}

impl From<MergeError> for ArrowError {
    fn from(e: MergeError) -> Self {
        ArrowError::ExternalError(Box::new(e))
    }
}

/// Runs only the merge order: the engine produces every key group, nothing is folded or
/// built. For benchmarks that separate the engines' cost from output assembly.
#[doc(hidden)]
pub fn merge_order_only(runs: Vec<Run>, options: MergeOptions) -> Result<MergeStats> {
    let Some(schema) = common_schema(&runs)? else { return Ok(MergeStats::default()) };
    let plan = MergePlan::new(schema, &options, options.merge.folds(), Paths::Fast)?;
    let key_types = plan.key_types();
    let k = runs.len() as u64;
    let inputs = runs.into_iter().map(|r| r.batches).collect();
    let visitor = OrderOnly { inputs, layout: plan.layout, algorithm: options.algorithm };
    let mut stats = dispatch(&key_types, visitor)??;
    stats.runs = k;
    Ok(stats)
}

struct OrderOnly {
    inputs: Vec<BatchIter>,
    layout: Arc<Layout>,
    algorithm: Algorithm,
}

impl KeyVisitor for OrderOnly {
    type Output = Result<MergeStats>;

    fn visit<E: KeyEncoder>(self, encoder: E) -> Result<MergeStats> {
        fn drive<E: KeyEncoder>(mut runs: Runs<E>, mut engine: impl MergeEngine<E>) -> Result<MergeStats> {
            let mut group = Group::default();
            let mut groups = 0;
            loop {
                group.clear();
                if !engine.next_group(&mut runs, &mut group)? {
                    break;
                }
                groups += 1;
                // Keep memory flat: drop batches once no cursor stands in them.
                if runs.store.stored() > 4 * runs.len() + 16 {
                    runs.release_unused(|_| {});
                }
            }
            let c = runs.counters;
            Ok(MergeStats {
                runs: 0,
                rows_in: c.rows_in,
                rows_out: groups,
                key_comparisons: c.key_comparisons,
                sort: None,
                read: None,
            })
        }
        let runs = Runs::new(self.inputs, encoder, self.layout);
        match self.algorithm {
            Algorithm::LoserTree => drive(runs, LoserTree::default()),
            Algorithm::PaimonLoserTree => drive(runs, PaimonLoserTree::default()),
            Algorithm::Heap => drive(runs, Heap::default()),
        }
    }
}
