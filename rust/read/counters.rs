//! What a read took of its data files, counted as it goes: the bytes the Parquet decoder
//! read of them, and the files it left after decoding their key column alone
//! ([`super::keys_first`]). A read's stream reports them beside the merge's figures.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use parquet::file::reader::{ChunkReader, Length};

/// Figures of a read's data files so far (see [`ReadCounters`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    /// Bytes of data files read: footers, page indexes and pages, as the decoder asked for them.
    pub bytes_read: u64,
    /// Files (or parts of files) whose key column held no key of the read's range: none
    /// of their other columns was read.
    pub files_skipped: u64,
}

/// The counters behind [`ReadStats`], shared by the files of one read.
#[derive(Debug, Default)]
pub struct ReadCounters {
    bytes_read: AtomicU64,
    files_skipped: AtomicU64,
}

impl ReadCounters {
    /// Figures so far.
    pub fn get(&self) -> ReadStats {
        ReadStats {
            bytes_read: self.bytes_read.load(Relaxed),
            files_skipped: self.files_skipped.load(Relaxed),
        }
    }

    pub(crate) fn add_bytes(&self, bytes: u64) {
        self.bytes_read.fetch_add(bytes, Relaxed);
    }

    pub(crate) fn add_skipped_file(&self) {
        self.files_skipped.fetch_add(1, Relaxed);
    }
}

/// A file's bytes as the decoder reads them, counted into `counters` (if any). Cloning it
/// shares the source: a file decoded in two passes is opened once.
pub(crate) struct Counted<T> {
    source: Arc<T>,
    counters: Option<Arc<ReadCounters>>,
}

impl<T> Clone for Counted<T> {
    fn clone(&self) -> Self {
        Self { source: self.source.clone(), counters: self.counters.clone() }
    }
}

impl<T> Counted<T> {
    pub(crate) fn new(source: T, counters: Option<Arc<ReadCounters>>) -> Self {
        Self { source: Arc::new(source), counters }
    }

    fn count(&self, bytes: usize) {
        if let Some(counters) = &self.counters {
            counters.add_bytes(bytes as u64);
        }
    }
}

impl<T: Length> Length for Counted<T> {
    fn len(&self) -> u64 {
        self.source.len()
    }
}

impl<T: ChunkReader> ChunkReader for Counted<T> {
    type T = CountedRead<T::T>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(CountedRead { inner: self.source.get_read(start)?, counters: self.counters.clone() })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let bytes = self.source.get_bytes(start, length)?;
        self.count(bytes.len());
        Ok(bytes)
    }
}

/// A reader of a file from some offset on, counting what it returns.
pub(crate) struct CountedRead<R> {
    inner: R,
    counters: Option<Arc<ReadCounters>>,
}

impl<R: Read> Read for CountedRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        if let Some(counters) = &self.counters {
            counters.add_bytes(read as u64);
        }
        Ok(read)
    }
}
