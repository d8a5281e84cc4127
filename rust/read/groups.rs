//! Independent merges read as one stream. A table's read merges the runs of each
//! (partition, bucket) on its own, since a key lives in exactly one of them; the groups'
//! outputs follow one another, in order.
//!
//! Up to `threads` groups are merged at once, each on its own thread, handing batches
//! over a [`Handoff`]; with fewer groups than threads, the spare ones decode the groups'
//! runs ahead of their merges ([`super::prefetch`]), and a group of files may be cut into
//! key ranges first ([`super::slices`]). A group merged ahead of its turn may buffer its
//! output up to a share of [`READ_AHEAD_BYTES`]: enough that its worker rarely waits for
//! the reader to finish the groups before it (which left a core idle), while memory
//! stays bounded.
//! A worker stops when its receiver is dropped (with the stream, or at its first error); it is
//! never joined, since it may be waiting to read a run that needs a lock (Python's GIL)
//! held by whoever drops the stream.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use super::prefetch::Prefetch;
use super::workers;
use crate::error::{invalid, MergeError, Result};
use crate::fold::Paths;
use crate::merge::plan::{MergeOptions, MergePlan};
use crate::merge::stream::{merge_group, BatchSource, MergeStream, SharedStats, UntilError};
use crate::runs::Run;

/// Options of [`merge_groups`].
#[derive(Debug, Clone)]
pub struct GroupOptions {
    /// How each group is merged (and which columns are output). Its runs may hold a key
    /// several times (a table's runs are folded only as far as is sound; see
    /// [`crate::MergeFunction::for_partial_run`]).
    pub merge: MergeOptions,
    /// Most groups merged at once (at least 1).
    pub threads: usize,
    /// Each run holds a key at most once (as [`crate::merge`] asks of runs it folds).
    pub strict: bool,
    /// Bytes of output each group may have ready (one batch at least); `None`: its
    /// share of `READ_AHEAD_BYTES` (`read_ahead_share`).
    pub read_ahead: Option<usize>,
    /// Each key is at most once among the rows of all runs (a read of compacted files
    /// only): a group of one run may pass its rows as stored
    /// ([`crate::merge::stream::merge_group`]).
    pub lone_runs_as_stored: bool,
}

/// Bytes of merged batches the workers merging ahead of the group being read may have
/// ready together (each worker may always have one batch ready, whatever its size).
pub(crate) const READ_AHEAD_BYTES: usize = 128 << 20;

/// Bytes each of `threads` workers may have ready: the budget is shared by the groups
/// merged ahead of the one being read, which hands its batches over as they come.
pub(crate) fn read_ahead_share(threads: usize) -> usize {
    READ_AHEAD_BYTES / threads.saturating_sub(1).max(1)
}

/// Merges each group of runs (of `schema`) on its own, streaming the outputs in order.
pub fn merge_groups(schema: SchemaRef, groups: Vec<Vec<Run>>, options: GroupOptions) -> Result<MergeStream> {
    let merge = &options.merge;
    let output = MergePlan::new(schema.clone(), merge, false, Paths::Fast)?.output.schema;
    let stats = Arc::new(SharedStats::default());
    let threads = options.threads.max(1);
    // Cores no group would use decode the groups' runs ahead of their merges instead.
    let spare = threads.saturating_sub(groups.len());
    let batches = Groups {
        prefetch: (spare > 0).then(|| Prefetch::new(spare)),
        pending: groups.into(),
        in_flight: VecDeque::new(),
        threads,
        read_ahead: options.read_ahead.unwrap_or_else(|| read_ahead_share(threads)),
        strict: options.strict,
        lone_runs_as_stored: options.lone_runs_as_stored,
        merge: options.merge,
        output: output.clone(),
        stats: stats.clone(),
    };
    Ok(MergeStream::from_parts(output, Box::new(UntilError(Some(batches))), stats))
}

struct Groups {
    pending: VecDeque<Vec<Run>>,
    /// Decodes the runs of a group ahead of its merge (only with fewer groups than threads).
    prefetch: Option<Prefetch>,
    /// The outputs of the groups being merged, oldest first.
    in_flight: VecDeque<Receiver>,
    threads: usize,
    /// Bytes of output each group may have ready.
    read_ahead: usize,
    strict: bool,
    lone_runs_as_stored: bool,
    merge: MergeOptions,
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
                Some(batch) => return batch.map(Some),
                None => _ = self.in_flight.pop_front(), // the group is done
            }
        }
    }
}

impl Groups {
    /// Merges one group on a worker thread; its batches (or its error) come over the channel.
    fn start(&self, runs: Vec<Run>) -> Receiver {
        let runs = match &self.prefetch {
            Some(prefetch) => runs.into_iter().map(|run| prefetch.run(run)).collect(),
            None => runs,
        };
        let (sender, receiver) = handoff(self.read_ahead);
        let (merge, stats, declared) = (self.merge.clone(), self.stats.clone(), self.output.clone());
        let (strict, lone) = (self.strict, self.lone_runs_as_stored);
        let worker = move || {
            let work = AssertUnwindSafe(|| -> Result<()> {
                let stream = merge_group(runs, merge, strict, stats, lone)?;
                check_same_columns(&stream.schema(), &declared)?;
                for batch in stream {
                    if !sender.send(Ok(batch?)) {
                        break; // nobody reads any more
                    }
                }
                Ok(())
            });
            // A panic must reach the reader as an error: a finished handoff means "done".
            let result = catch_unwind(work).unwrap_or_else(|panic| Err(MergeError::from_panic(panic)));
            if let Err(e) = result {
                sender.send(Err(e));
            }
            sender // the group's end, said once its worker is free for the next group
        };
        match workers::run(worker) {
            Ok(()) => receiver,
            Err(e) => {
                let (sender, receiver) = handoff(0);
                sender
                    .send(Err(MergeError::Internal(format!("cannot start a thread to merge a group: {e}"))));
                receiver
            }
        }
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

/// One worker's batches on their way to the reader, in order. The worker waits while the
/// batches ready would pass `limit` bytes; the reader waits while none is ready. Dropping
/// the [`Sender`] marks the group done, dropping the [`Receiver`] tells the worker to stop.
struct Handoff {
    state: Mutex<HandoffState>,
    changed: Condvar,
    limit: usize,
}

#[derive(Default)]
struct HandoffState {
    ready: VecDeque<(Result<RecordBatch>, usize)>,
    bytes: usize,
    done: bool,
    closed: bool,
}

struct Sender(Arc<Handoff>);
struct Receiver(Arc<Handoff>);

fn handoff(limit: usize) -> (Sender, Receiver) {
    let shared = Arc::new(Handoff { state: Mutex::default(), changed: Condvar::new(), limit });
    (Sender(shared.clone()), Receiver(shared))
}

impl Handoff {
    /// The state, even if a thread panicked holding it (its fields are always consistent).
    fn lock(&self) -> MutexGuard<'_, HandoffState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(&self, state: MutexGuard<'a, HandoffState>) -> MutexGuard<'a, HandoffState> {
        self.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn update(&self, change: impl FnOnce(&mut HandoffState)) {
        change(&mut self.lock());
        self.changed.notify_all();
    }
}

impl Sender {
    /// Hands `item` over once there is room; false if nobody reads any more.
    fn send(&self, item: Result<RecordBatch>) -> bool {
        let size = item.as_ref().map_or(0, RecordBatch::get_array_memory_size);
        let handoff = &self.0;
        let mut state = handoff.lock();
        while !state.closed && !state.ready.is_empty() && state.bytes + size > handoff.limit {
            state = handoff.wait(state);
        }
        if state.closed {
            return false;
        }
        state.bytes += size;
        state.ready.push_back((item, size));
        drop(state);
        handoff.changed.notify_all();
        true
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.0.update(|state| state.done = true);
    }
}

impl Receiver {
    /// The next batch (or error), waiting for it; `None` once the group is done.
    fn recv(&self) -> Option<Result<RecordBatch>> {
        let handoff = &self.0;
        let mut state = handoff.lock();
        loop {
            if let Some((item, size)) = state.ready.pop_front() {
                state.bytes -= size;
                drop(state);
                handoff.changed.notify_all();
                return Some(item);
            }
            if state.done {
                return None;
            }
            state = handoff.wait(state);
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.0.update(|state| state.closed = true);
    }
}

#[cfg(test)]
mod tests {
    use std::thread;
    use std::time::Duration;

    use arrow_array::{ArrayRef, Int64Array};

    use super::*;

    fn batch(first: i64) -> RecordBatch {
        let values: ArrayRef = Arc::new(Int64Array::from_iter_values(first..first + 1000));
        RecordBatch::try_from_iter([("v", values)]).unwrap()
    }

    fn ready_bytes(receiver: &Receiver) -> usize {
        receiver.0.lock().bytes
    }

    #[test]
    fn hands_batches_over_in_order_within_the_limit() {
        let size = batch(0).get_array_memory_size();
        let (sender, receiver) = handoff(2 * size);
        let worker = thread::spawn(move || (0..10).all(|i| sender.send(Ok(batch(i * 1000)))));
        thread::sleep(Duration::from_millis(50)); // let the worker run ahead as far as it may
        assert_eq!(ready_bytes(&receiver), 2 * size);
        let mut firsts = vec![];
        while let Some(item) = receiver.recv() {
            assert!(ready_bytes(&receiver) <= 2 * size);
            let values = item.unwrap().column(0).as_any().downcast_ref::<Int64Array>().unwrap().clone();
            firsts.push(values.value(0));
        }
        assert!(worker.join().unwrap());
        assert_eq!(firsts, (0..10).map(|i| i * 1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_batch_above_the_limit_still_passes_alone() {
        let (sender, receiver) = handoff(1);
        let worker = thread::spawn(move || sender.send(Ok(batch(0))) && sender.send(Ok(batch(1000))));
        assert_eq!(receiver.recv().unwrap().unwrap().num_rows(), 1000);
        assert_eq!(receiver.recv().unwrap().unwrap().num_rows(), 1000);
        assert!(receiver.recv().is_none());
        assert!(worker.join().unwrap());
    }

    #[test]
    fn dropping_the_receiver_stops_a_waiting_worker() {
        let (sender, receiver) = handoff(1);
        let worker = thread::spawn(move || (0..10).take_while(|&i| sender.send(Ok(batch(i)))).count());
        thread::sleep(Duration::from_millis(50));
        drop(receiver);
        assert_eq!(worker.join().unwrap(), 1); // the first fitted; the second was refused
    }
}
