//! Runs decoded ahead. A merge pulls one batch at a time from whichever run it needs
//! next; when that run is a Parquet file, the pull decodes pages on the merging thread
//! and the merge waits. Here each run gets a worker thread that pulls its batches into a
//! small bounded queue, so decoding runs beside the merge (and beside the other runs'
//! decoding, at most `threads` at once). Batches come out of each run in order, and so do
//! its errors; a worker stops when its run ends, fails, or its queue is dropped.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use arrow_schema::ArrowError;

use super::workers;
use crate::error::MergeError;
use crate::runs::Run;

/// Batches each worker may have decoded before the merge takes them.
const QUEUE_BATCHES: usize = 2;

/// Decodes runs ahead, each on its own worker, at most `threads` of them at once.
pub struct Prefetch {
    permits: Arc<Permits>,
}

impl Prefetch {
    /// Workers of this prefetch decode at most `threads` batches at once (at least 1).
    pub fn new(threads: usize) -> Self {
        Self { permits: Arc::new(Permits::new(threads.max(1))) }
    }

    /// The run, its batches decoded ahead by a worker of its own.
    pub fn run(&self, run: Run) -> Run {
        ahead(run, self.permits.clone())
    }
}

fn ahead(run: Run, permits: Arc<Permits>) -> Run {
    Run { schema: run.schema, batches: computed_ahead(run.batches, permits, external) }
}

/// `items` computed on a thread of their own, up to [`QUEUE_BATCHES`] ahead of the
/// consumer: a two-stage pipeline, e.g. a spill's sorted batches built while the batch
/// before is compressed and written. Items and their errors come out in order.
pub(crate) fn on_own_thread<T: Send + 'static>(
    items: impl Iterator<Item = Result<T, MergeError>> + Send + 'static,
) -> Box<dyn Iterator<Item = Result<T, MergeError>> + Send> {
    computed_ahead(items, Arc::new(Permits::new(1)), |e| e)
}

/// The worker behind [`ahead`] and [`on_own_thread`]: it computes `items` into a
/// bounded queue while holding a permit; `error` turns a panic or a failed start into
/// the stream's error type.
fn computed_ahead<T: Send + 'static, E: Send + 'static>(
    mut items: impl Iterator<Item = Result<T, E>> + Send + 'static,
    permits: Arc<Permits>,
    error: fn(MergeError) -> E,
) -> Box<dyn Iterator<Item = Result<T, E>> + Send> {
    let (sender, receiver) = sync_channel(QUEUE_BATCHES);
    let worker = move || {
        let ended = loop {
            let next = {
                let _permit = permits.take();
                catch_unwind(AssertUnwindSafe(|| items.next()))
                    .unwrap_or_else(|panic| Some(Err(error(MergeError::from_panic(panic)))))
            };
            let Some(item) = next else { break true };
            let failed = item.is_err();
            if sender.send(Some(item)).is_err() || failed {
                break false; // the consumer is gone, or the stream ends at its error
            }
        };
        drop(items); // what the stream holds is freed before its end is said
        if ended {
            let _ = sender.send(None); // the end, said (a queue cut short is an error)
        }
    };
    match workers::run(worker) {
        Ok(_) => Box::new(Queue { receiver: Some(receiver), error }),
        Err(e) => {
            let e = MergeError::Internal(format!("cannot start a thread to read a run: {e}"));
            Box::new(std::iter::once(Err(error(e))))
        }
    }
}

fn external(e: MergeError) -> ArrowError {
    ArrowError::ExternalError(Box::new(e))
}

/// A worker's queue, read by the consumer: `None` marks the stream's end, so a worker
/// that vanished without it is an error, never a stream silently cut short.
struct Queue<T, E> {
    receiver: Option<Receiver<Option<Result<T, E>>>>,
    error: fn(MergeError) -> E,
}

impl<T, E> Iterator for Queue<T, E> {
    type Item = Result<T, E>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = match self.receiver.as_ref()?.recv() {
            Ok(Some(Ok(value))) => return Some(Ok(value)),
            Ok(Some(Err(e))) => Some(Err(e)), // the stream's last item
            Ok(None) => None,
            Err(_) => Some(Err((self.error)(MergeError::Internal("a reader thread stopped early".into())))),
        };
        self.receiver = None;
        item
    }
}

/// A counting semaphore: how many workers may decode at once.
struct Permits {
    free: Mutex<usize>,
    freed: Condvar,
}

/// Held while decoding; gives its permit back when dropped (a panic included).
struct Permit<'a>(&'a Permits);

impl Permits {
    fn new(count: usize) -> Self {
        Self { free: Mutex::new(count), freed: Condvar::new() }
    }

    fn take(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(PoisonError::into_inner);
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::atomic::{AtomicUsize, Ordering};

    type Item = Result<RecordBatch, ArrowError>;

    fn batch(values: Vec<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values))]).unwrap()
    }

    fn prefetch(runs: Vec<Run>, threads: usize) -> Vec<Run> {
        let prefetch = Prefetch::new(threads);
        runs.into_iter().map(|run| prefetch.run(run)).collect()
    }

    fn values(run: Run) -> Vec<Result<Vec<i64>, String>> {
        run.batches
            .map(|b| {
                b.map(|b| b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec())
                    .map_err(|e| e.to_string())
            })
            .collect()
    }

    #[test]
    fn batches_and_errors_come_out_in_order() {
        let schema = batch(vec![]).schema();
        let items: Vec<Item> = vec![
            Ok(batch(vec![1, 2])),
            Ok(batch(vec![3])),
            Err(ArrowError::ComputeError("bad page".into())),
            Ok(batch(vec![4])), // never read: a run ends at its error
        ];
        let runs = vec![
            Run { schema: schema.clone(), batches: Box::new(items.into_iter()) },
            Run::from_batches(schema.clone(), (0..50).map(|i| batch(vec![i])).collect()),
            Run::from_batches(schema, vec![]),
        ];
        let mut out = prefetch(runs, 2).into_iter();
        let first = values(out.next().unwrap());
        assert_eq!(first[..2], [Ok(vec![1, 2]), Ok(vec![3])]);
        assert!(first[2].as_ref().unwrap_err().contains("bad page"));
        assert_eq!(first.len(), 3);
        let second: Vec<i64> = values(out.next().unwrap()).into_iter().flat_map(Result::unwrap).collect();
        assert_eq!(second, (0..50).collect::<Vec<_>>());
        assert!(values(out.next().unwrap()).is_empty());
    }

    #[test]
    fn a_panic_while_decoding_is_an_error_of_the_run() {
        let schema = batch(vec![]).schema();
        let mut calls = 0;
        let batches = std::iter::from_fn(move || {
            calls += 1;
            assert!(calls < 2, "decoder broke");
            Some(Ok(batch(vec![calls])))
        });
        let out = values(prefetch(vec![Run { schema, batches: Box::new(batches) }], 1).remove(0));
        assert_eq!(out[0], Ok(vec![1]));
        assert!(out[1].as_ref().unwrap_err().contains("decoder broke"));
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn at_most_threads_runs_decode_at_once() {
        let schema = batch(vec![]).schema();
        let busy = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let runs = (0..8)
            .map(|_| {
                let (busy, most) = (busy.clone(), most.clone());
                let batches = (0..20).map(move |i| {
                    let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    busy.fetch_sub(1, Ordering::SeqCst);
                    Ok(batch(vec![i]))
                });
                Run { schema: schema.clone(), batches: Box::new(batches) }
            })
            .collect();
        let total: usize = prefetch(runs, 3).into_iter().map(|r| r.batches.count()).sum();
        assert_eq!(total, 160);
        assert!(most.load(Ordering::SeqCst) <= 3);
    }
}
