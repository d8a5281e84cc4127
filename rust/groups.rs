//! Independent merges read as one stream. A table's read merges the runs of each
//! (partition, bucket) on its own, since a key lives in exactly one of them; the groups'
//! outputs follow one another, in order.
//!
//! Up to `threads` groups are merged at once, each on its own thread, handing batches
//! over a channel of [`CHANNEL_BATCHES`]: memory stays bounded by the groups in flight.
//! A worker stops when its receiver is dropped (with the stream, or at its first error); it is
//! never joined, since it may be waiting to read a run that needs a lock (Python's GIL)
//! held by whoever drops the stream.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use crate::error::{invalid, MergeError, Result};
use crate::fold::Folder;
use crate::run::{Layout, Run};
use crate::stream::{
    merge_runs_into, output_schema, BatchSource, MergeOptions, MergeStream, SharedStats, UntilError,
};

/// Options of [`merge_groups`].
#[derive(Debug, Clone)]
pub struct GroupOptions {
    /// How each group is merged. Its runs may hold a key several times (a table's runs
    /// are folded only as far as is sound; see [`crate::MergeFunction::for_partial_run`]).
    pub merge: MergeOptions,
    /// The output columns, in this order (all when `None`).
    pub columns: Option<Vec<String>>,
    /// The output is a run above older runs (a partial compaction): fold only as far as
    /// is sound and keep deletes.
    pub partial: bool,
    /// Most groups merged at once (at least 1).
    pub threads: usize,
}

/// Batches a group's worker may have ready before the reader takes them.
const CHANNEL_BATCHES: usize = 2;

/// Merges each group of runs (of `schema`) on its own, streaming the outputs in order.
pub fn merge_groups(
    schema: SchemaRef,
    groups: Vec<Vec<Run>>,
    mut options: GroupOptions,
) -> Result<MergeStream> {
    let merge = &mut options.merge;
    if options.partial {
        let plain_rows = merge.row_kind.is_none() && merge.sequence.is_empty();
        merge.merge = merge.merge.for_partial_run(plain_rows);
    }
    let layout = Layout::new(schema.clone(), &merge.key, &merge.sequence, merge.row_kind.as_deref(), false)?;
    let merged_schema = output_schema(&layout, &Folder::new(merge.merge.clone(), &layout)?);
    let projection = match &options.columns {
        None => (0..merged_schema.fields().len()).collect(),
        Some(names) => names
            .iter()
            .map(|name| merged_schema.index_of(name).map_err(|_| invalid!("no column '{name}' to read")))
            .collect::<Result<Vec<_>>>()?,
    };
    let output = Arc::new(merged_schema.project(&projection)?);
    let stats = Arc::new(SharedStats::default());
    let batches = Groups {
        pending: groups.into(),
        in_flight: VecDeque::new(),
        threads: options.threads.max(1),
        merge: options.merge,
        merged_schema,
        projection,
        output: output.clone(),
        stats: stats.clone(),
    };
    Ok(MergeStream::from_parts(output, Box::new(UntilError(Some(batches))), stats))
}

struct Groups {
    pending: VecDeque<Vec<Run>>,
    /// The outputs of the groups being merged, oldest first.
    in_flight: VecDeque<Receiver<Result<RecordBatch>>>,
    threads: usize,
    merge: MergeOptions,
    merged_schema: SchemaRef,
    projection: Vec<usize>,
    output: SchemaRef,
    stats: Arc<SharedStats>,
}

impl BatchSource for Groups {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            while self.in_flight.len() < self.threads {
                let Some(runs) = self.pending.pop_front() else { break };
                self.in_flight.push_back(self.start(runs));
            }
            let Some(front) = self.in_flight.front() else { return Ok(None) };
            match front.recv() {
                Ok(batch) => return self.project(batch?).map(Some),
                Err(_) => _ = self.in_flight.pop_front(), // the group is done
            }
        }
    }
}

impl Groups {
    /// Merges one group on a worker thread; its batches (or its error) come over the channel.
    fn start(&self, runs: Vec<Run>) -> Receiver<Result<RecordBatch>> {
        let (sender, receiver) = sync_channel(CHANNEL_BATCHES);
        let (merge, stats, declared) = (self.merge.clone(), self.stats.clone(), self.merged_schema.clone());
        std::thread::spawn(move || {
            let work = AssertUnwindSafe(|| -> Result<()> {
                let stream = merge_runs_into(runs, merge, false, stats)?;
                check_same_columns(&stream.schema(), &declared)?;
                for batch in stream {
                    if sender.send(Ok(batch?)).is_err() {
                        break; // nobody reads any more
                    }
                }
                Ok(())
            });
            // A panic must reach the reader as an error: a closed channel means "done".
            let result = catch_unwind(work).unwrap_or_else(|panic| Err(MergeError::from_panic(panic)));
            if let Err(e) = result {
                let _ = sender.send(Err(e));
            }
        });
        receiver
    }

    fn project(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let columns = self.projection.iter().map(|&i| batch.column(i).clone()).collect();
        Ok(RecordBatch::try_new(self.output.clone(), columns)?)
    }
}

/// A group's runs must have the columns (names and types) all groups were declared with.
fn check_same_columns(found: &Schema, declared: &Schema) -> Result<()> {
    let same = found.fields().len() == declared.fields().len()
        && found
            .fields()
            .iter()
            .zip(declared.fields())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
    if same || found.fields().is_empty() {
        return Ok(());
    }
    Err(invalid!("schema mismatch: a group's runs have schema {found:?}, but the read declared {declared:?}"))
}
