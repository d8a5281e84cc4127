//! Worker threads kept for the next job. Merges of a read's groups (or of a bucket's key
//! ranges) and runs decoded ahead each run on a worker; a worker that finishes waits for
//! the next job, and ends after [`IDLE_TIMEOUT`] without one.
//!
//! Why not a thread per job: glibc gives each thread the allocator arena that happens to
//! be free when the thread starts, so with a thread per range of a one-bucket read the
//! memory one read freed sat in arenas other than the ones the next read allocated from,
//! and was faulted in again (70-100k page faults a read on 2 threads against 20-25k with
//! workers kept; 2026-11-26, the bench's one-bucket table).
//!
//! A job never waits for a worker: with none idle a new one starts. Jobs may wait on each
//! other (a merge on a run decoded ahead, a merge ahead of its turn on the reader), so a
//! bounded set of threads could deadlock.

use std::any::Any;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long a worker waits for a job before it ends.
#[cfg(not(test))]
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
#[cfg(test)]
const IDLE_TIMEOUT: Duration = Duration::from_millis(200);

/// A job's result, dropped once its worker is idle again (see [`Workers::run`]).
type Rest = Box<dyn Any + Send>;
type Job = Box<dyn FnOnce() -> Rest + Send>;

/// A set of worker threads; [`run`] uses the process's own.
pub(crate) struct Workers {
    state: Mutex<State>,
}

struct State {
    /// The idle workers, the one idle last at the end (its caches are the warmest).
    idle: Vec<Idle>,
    next_id: u64,
    /// The process these workers belong to: a child made by `fork` has none of them.
    process: u32,
}

struct Idle {
    id: u64,
    jobs: Sender<Job>,
}

static WORKERS: Workers = Workers::new();

/// Runs `job` on a worker of the process (see [`Workers::run`]).
pub(crate) fn run<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> io::Result<()> {
    WORKERS.run(job)
}

impl Workers {
    pub(crate) const fn new() -> Self {
        Self { state: Mutex::new(State { idle: Vec::new(), next_id: 0, process: 0 }) }
    }

    /// Runs `job` on an idle worker, or on a new one if none is idle.
    /// What `job` returns is dropped after its worker is idle again: a job whose end
    /// someone waits for returns what signals it (a channel's sender), so that a job
    /// started on that signal finds this worker idle rather than starting another.
    pub(crate) fn run<T: Send + 'static>(
        &'static self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<()> {
        let mut job: Job = Box::new(move || Box::new(job()) as Rest);
        while let Some(idle) = self.lock().idle.pop() {
            match idle.jobs.send(job) {
                Ok(()) => return Ok(()),
                Err(returned) => job = returned.0, // cannot happen: a worker keeps its receiver
            }
        }
        let (sender, receiver) = channel();
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            state.next_id
        };
        sender.send(job).expect("the receiver is alive");
        let worker = move || self.work(id, sender, receiver);
        std::thread::Builder::new().name("merge-core-worker".into()).spawn(worker).map(drop)
    }

    /// A worker's life: jobs until none comes for [`IDLE_TIMEOUT`].
    fn work(&self, id: u64, me: Sender<Job>, jobs: Receiver<Job>) {
        loop {
            match jobs.recv_timeout(IDLE_TIMEOUT) {
                Ok(job) => {
                    // A job's panic is its caller's to report (the callers catch their
                    // own); what it held was dropped as it unwound.
                    let rest = catch_unwind(AssertUnwindSafe(job)).ok();
                    self.lock().idle.push(Idle { id, jobs: me.clone() });
                    drop(rest);
                }
                Err(RecvTimeoutError::Timeout) => {
                    let mut state = self.lock();
                    // Taken from the idle list meanwhile: a job is on its way.
                    if let Some(at) = state.idle.iter().position(|idle| idle.id == id) {
                        state.idle.remove(at);
                        return;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => unreachable!("a worker keeps a sender of its own"),
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let process = std::process::id();
        if state.process != process {
            // In a child made by `fork` the workers did not come along: their queues
            // are forgotten (never dropped: nothing of them may be touched here).
            std::mem::forget(std::mem::take(&mut state.idle));
            *state = State { idle: Vec::new(), next_id: state.next_id, process };
        }
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;
    use std::thread::{self, ThreadId};

    fn workers() -> &'static Workers {
        Box::leak(Box::new(Workers::new()))
    }

    /// Sends the thread it was dropped on.
    struct SaysWhere(Sender<ThreadId>);

    impl Drop for SaysWhere {
        fn drop(&mut self) {
            let _ = self.0.send(thread::current().id());
        }
    }

    #[test]
    fn a_job_started_when_the_last_one_ends_reuses_its_worker() {
        let workers = workers();
        let (said, where_) = channel();
        let mut threads = Vec::new();
        for _ in 0..5 {
            let said = said.clone();
            workers.run(move || SaysWhere(said)).unwrap();
            threads.push(where_.recv().unwrap()); // the job's end, as the next job's starter sees it
        }
        assert!(threads.iter().all(|&thread| thread == threads[0]), "{threads:?}");
    }

    #[test]
    fn jobs_that_wait_on_each_other_each_get_a_worker() {
        let workers = workers();
        let (sender, receiver) = sync_channel::<u32>(0);
        let (done, finished) = channel();
        workers.run(move || done.send(receiver.recv().unwrap() + 1).unwrap()).unwrap();
        workers.run(move || sender.send(41).unwrap()).unwrap();
        // The first ends only if the second runs beside it, on a worker of its own.
        assert_eq!(finished.recv_timeout(Duration::from_secs(10)), Ok(42));
    }

    #[test]
    fn a_panicking_job_leaves_its_worker_for_the_next() {
        let workers = workers();
        let (said, where_) = channel();
        let first = said.clone();
        workers
            .run(move || {
                let _says = SaysWhere(first);
                panic!("a job's panic");
            })
            .unwrap();
        let panicked_on = where_.recv().unwrap();
        while workers.lock().idle.is_empty() {
            thread::sleep(Duration::from_millis(1)); // the worker goes idle after the unwind
        }
        workers.run(move || SaysWhere(said)).unwrap();
        assert_eq!(where_.recv().unwrap(), panicked_on);
    }

    #[test]
    fn idle_workers_end() {
        let workers = workers();
        let (said, where_) = channel();
        for _ in 0..3 {
            let said = said.clone();
            let job = move || {
                thread::sleep(Duration::from_millis(50)); // all three at once
                SaysWhere(said)
            };
            workers.run(job).unwrap();
        }
        (0..3).for_each(|_| _ = where_.recv().unwrap()); // each said once its worker is idle
        assert_eq!(workers.lock().idle.len(), 3);
        thread::sleep(IDLE_TIMEOUT * 3);
        // A worker leaves the idle list only to end (or to take a job: none came).
        assert!(workers.lock().idle.is_empty());
    }
}
