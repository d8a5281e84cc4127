//! Spill files: sorted runs written to disk as Arrow IPC streams, in a private
//! directory that disappears with its last user.
//!
//! - The directory is created with owner-only permissions (0700, files 0600, whatever
//!   the umask), holds a `lock` file its owner keeps locked, and is removed when the last
//!   [`Arc<SpillDir>`] is dropped — on success, on error, and when a stream is dropped
//!   half read. Directories left by a process that was killed (no destructor ran) are
//!   swept by the next sort: their lock is free (see [`sweep_orphans`]). A directory
//!   takes its name only once its lock is held, so no sweep can find it unlocked.
//! - Each file records, when written, where each of its IPC messages (the schema, every
//!   batch, the end marker) ends and the CRC32 of the message's bytes. A reader checks a
//!   message before the IPC decoder sees any of it, so a damaged or cut file fails with a
//!   `SpillError` naming it before any row of the damaged batch is used; it never yields
//!   a wrong row or a silently shorter result.
//! - Only the columns are written, never arrow row-format keys: those are recomputed
//!   after reading, since the row encoding may change between arrow releases.
//! - Compression is ours, not the IPC format's: each message is compressed whole (an
//!   lz4 block, or zstd at level 1) behind its uncompressed length, and the CRC32 covers
//!   the stored bytes. A spilled batch is a few hundred rows, so IPC's own compression
//!   (one lz4 frame per Arrow buffer) spent more on setting up frames than on the data.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, SchemaRef};

use crate::error::{invalid, MergeError, Result};

const PREFIX: &str = "merge-core-spill-";
/// The file a spill directory's owner keeps locked while the directory is in use.
const LOCK: &str = "lock";

/// How spill files are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// No compression.
    None,
    /// LZ4 frames (fast; the default).
    #[default]
    Lz4,
    /// Zstandard (smaller, slower).
    Zstd,
}

impl std::str::FromStr for Compression {
    type Err = MergeError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" | "" => Ok(Self::None),
            "lz4" => Ok(Self::Lz4),
            "zstd" => Ok(Self::Zstd),
            other => Err(invalid!("unknown spill_compression '{other}' (expected 'lz4', 'zstd' or 'none')")),
        }
    }
}

/// A private directory of spill files and the disk budget they share.
pub(crate) struct SpillDir {
    path: PathBuf,
    compression: Compression,
    max_bytes: Option<u64>,
    /// Bytes of the files now on disk.
    bytes_on_disk: AtomicU64,
    next_file: Mutex<u64>,
    /// Held locked for the directory's life (see [`sweep_orphans`]).
    _lock: File,
}

impl SpillDir {
    /// Creates a fresh directory under `parent` (the system temporary directory if
    /// `None`).
    pub(crate) fn create(
        parent: Option<&Path>,
        compression: Compression,
        max_bytes: Option<u64>,
    ) -> Result<Self> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let name = format!("{PREFIX}{}-{nanos:x}-{unique}", std::process::id());
        // Made under a name no sweep looks at, and renamed once its lock is held: a sweep
        // in another thread or process must never find it unlocked (it would remove it).
        let staging = parent.join(format!(".{name}"));
        fs::DirBuilder::new().mode(0o700).create(&staging).map_err(|e| {
            MergeError::Io(std::io::Error::new(
                e.kind(),
                format!("cannot create spill directory in {}: {e}", parent.display()),
            ))
        })?;
        let path = parent.join(name);
        let locked = File::create(staging.join(LOCK)).and_then(|lock| {
            lock.lock()?; // released when `lock` closes: on drop, or when the process dies
            fs::rename(&staging, &path)?;
            Ok(lock)
        });
        let lock = locked.inspect_err(|_| {
            let _ = fs::remove_dir_all(&staging);
        })?;
        Ok(Self {
            path,
            compression,
            max_bytes,
            bytes_on_disk: AtomicU64::new(0),
            next_file: Mutex::new(0),
            _lock: lock,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `batches` as one spill file.
    pub(crate) fn write(
        self: &Arc<Self>,
        schema: &SchemaRef,
        batches: impl Iterator<Item = Result<RecordBatch>>,
    ) -> Result<SpillFile> {
        let path = {
            let mut next = self.next_file.lock().expect("spill counter lock");
            *next += 1;
            self.path.join(format!("run-{next:06}.arrow"))
        };
        let result = self.write_file(&path, schema, batches);
        if result.is_err() {
            let _ = fs::remove_file(&path);
        }
        result
    }

    fn write_file(
        self: &Arc<Self>,
        path: &Path,
        schema: &SchemaRef,
        batches: impl Iterator<Item = Result<RecordBatch>>,
    ) -> Result<SpillFile> {
        let file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
        let file = BufWriter::with_capacity(1 << 20, file);
        let counting = Checksummed {
            inner: file,
            crc: crc32fast::Hasher::new(),
            bytes: 0,
            segments: Vec::new(),
            dir: self.clone(),
            message: Vec::new(),
            packed: Vec::new(),
        };
        let mut writer = StreamWriter::try_new(counting, schema)?;
        writer.get_mut().cut().map_err(disk_error)?;
        let mut rows = 0u64;
        for batch in batches {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            writer.write(&batch).map_err(unwrap_disk_full)?;
            writer.get_mut().cut().map_err(disk_error)?;
        }
        writer.finish().map_err(unwrap_disk_full)?;
        let mut counting = writer.into_inner()?;
        counting.cut().map_err(disk_error)?;
        counting.inner.flush()?;
        Ok(SpillFile {
            path: path.to_path_buf(),
            schema: schema.clone(),
            rows,
            bytes: counting.bytes,
            segments: counting.segments,
            dir: self.clone(),
        })
    }

    fn reserve(&self, bytes: u64) -> std::io::Result<()> {
        let total = self.bytes_on_disk.fetch_add(bytes, Ordering::Relaxed) + bytes;
        match self.max_bytes {
            Some(max) if total > max => {
                Err(std::io::Error::new(std::io::ErrorKind::StorageFull, DiskCap(max)))
            }
            _ => Ok(()),
        }
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// The disk cap was reached (carried inside an `io::Error` through the IPC writer).
#[derive(Debug)]
struct DiskCap(u64);

impl std::fmt::Display for DiskCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "spill files would exceed max_disk_size ({} bytes); raise max_disk_size or memory_limit",
            self.0
        )
    }
}

impl std::error::Error for DiskCap {}

fn unwrap_disk_full(e: ArrowError) -> MergeError {
    match e {
        ArrowError::IoError(_, io) => disk_error(io),
        other => other.into(),
    }
}

/// A write error, as `DiskFull` when the disk cap (or the disk) is full.
fn disk_error(e: std::io::Error) -> MergeError {
    match e.kind() {
        std::io::ErrorKind::StorageFull => MergeError::DiskFull(e.to_string()),
        _ => MergeError::Io(e),
    }
}

/// Removes the spill directories under `parent` that nobody uses: each holds a `lock`
/// file its sort keeps locked (`flock`) for the directory's life, so a directory whose
/// lock can be taken belongs to a process that is gone, whatever PID namespace it ran
/// in. Cheap (one listing); runs when a sort or table write starts.
pub(crate) fn sweep_orphans(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(|n| n.starts_with(PREFIX)) {
            continue;
        }
        let Ok(lock) = File::open(entry.path().join(LOCK)) else { continue };
        if lock.try_lock().is_ok() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Where one message of a spill file ends, and the CRC32 of its bytes.
#[derive(Debug, Clone, Copy)]
struct Segment {
    end: u64,
    crc: u32,
}

/// A writer that counts, checksums and charges the disk budget for what passes, and
/// cuts the bytes into segments (one per IPC message) at the writer's word. With a
/// codec, each message is compressed whole when it is cut: one block per message rather
/// than one frame per Arrow buffer (a batch of a few hundred rows has a dozen buffers of
/// a few KiB, and a frame's setup cost more than compressing them).
struct Checksummed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
    segments: Vec<Segment>,
    dir: Arc<SpillDir>,
    /// The message being written, when it is compressed at its end.
    message: Vec<u8>,
    /// Its compressed bytes.
    packed: Vec<u8>,
}

impl<W: Write> Checksummed<W> {
    /// Ends the current segment (nothing if no byte was written since the last).
    fn cut(&mut self) -> std::io::Result<()> {
        if !self.message.is_empty() {
            let mut packed = std::mem::take(&mut self.packed);
            let n = compress(self.dir.compression, &self.message, &mut packed)?;
            self.put(&packed[..n])?;
            self.packed = packed;
            self.message.clear();
        }
        if self.segments.last().map_or(0, |s| s.end) < self.bytes {
            let crc = std::mem::replace(&mut self.crc, crc32fast::Hasher::new()).finalize();
            self.segments.push(Segment { end: self.bytes, crc });
        }
        Ok(())
    }

    /// Writes `bytes` to the file, charged to the disk budget and checksummed.
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.dir.reserve(bytes.len() as u64)?;
        self.inner.write_all(bytes)?;
        self.crc.update(bytes);
        self.bytes += bytes.len() as u64;
        Ok(())
    }
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.dir.compression {
            Compression::None => self.put(buf)?,
            _ => self.message.extend_from_slice(buf),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `message` compressed into the start of `out`: its length as 4 bytes, then the block;
/// returns how many bytes of `out` that is. `out` keeps its length between messages, so
/// it is zeroed only when it grows.
fn compress(codec: Compression, message: &[u8], out: &mut Vec<u8>) -> std::io::Result<usize> {
    let bound = match codec {
        Compression::None => return Err(std::io::Error::other("plain messages are written as they come")),
        Compression::Lz4 => lz4_flex::block::get_maximum_output_size(message.len()),
        Compression::Zstd => zstd::compress_bound(message.len()),
    };
    if out.len() < 4 + bound {
        out.resize(4 + bound, 0);
    }
    out[..4].copy_from_slice(&(message.len() as u32).to_le_bytes());
    let block = &mut out[4..4 + bound];
    let n = match codec {
        Compression::Lz4 => lz4_flex::block::compress_into(message, block).map_err(std::io::Error::other)?,
        _ => zstd::bulk::compress_to_buffer(message, block, 1)?,
    };
    Ok(4 + n)
}

/// The message a compressed segment holds, into `out`.
fn decompress(codec: Compression, segment: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    let corrupt = || std::io::Error::new(std::io::ErrorKind::InvalidData, "a message does not decompress");
    let (size, block) = segment.split_first_chunk::<4>().ok_or_else(corrupt)?;
    let size = u32::from_le_bytes(*size) as usize;
    out.resize(size, 0);
    let n = match codec {
        Compression::None => return Err(std::io::Error::other("plain messages are read as they are")),
        Compression::Lz4 => lz4_flex::block::decompress_into(block, out).map_err(|_| corrupt())?,
        Compression::Zstd => {
            zstd::bulk::decompress_to_buffer(block, out.as_mut_slice()).map_err(|_| corrupt())?
        }
    };
    if n != size {
        return Err(corrupt());
    }
    Ok(())
}

/// A finished spill file and what was recorded when it was written.
pub(crate) struct SpillFile {
    path: PathBuf,
    schema: SchemaRef,
    rows: u64,
    bytes: u64,
    segments: Vec<Segment>,
    dir: Arc<SpillDir>,
}

impl SpillFile {
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads the file back batch by batch, each checked before it is decoded; the file
    /// is deleted once read.
    pub(crate) fn into_reader(self) -> Result<SpillReader> {
        let damaged = |e: ArrowError| self.damaged(&e.to_string());
        let file = File::open(&self.path).map_err(|e| self.damaged(&format!("cannot open it ({e})")))?;
        let verified = Verified {
            inner: BufReader::with_capacity(1 << 16, file),
            segments: self.segments.clone().into(),
            codec: self.dir.compression,
            stored: Vec::new(),
            message: Vec::new(),
            served: 0,
            read: 0,
        };
        let reader = StreamReader::try_new(verified, None).map_err(damaged)?;
        // SAFETY: the decoder sees only messages whose bytes match, length and CRC32,
        // those this process wrote from valid arrays into its private (0700) directory;
        // validating them again (UTF-8, offsets) would only find what the CRC found.
        let reader = unsafe { reader.with_skip_validation(true) };
        Ok(SpillReader { reader: Some(reader), file: self, rows: 0 })
    }

    /// A read failure of this file, as the `SpillError` that names it.
    fn damaged(&self, what: &str) -> MergeError {
        let what = what.strip_prefix("Io error: ").unwrap_or(what);
        let message = format!("spill file {} is unreadable: {what}", self.path.display());
        MergeError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, message))
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        if fs::remove_file(&self.path).is_ok() {
            self.dir.bytes_on_disk.fetch_sub(self.bytes, Ordering::Relaxed);
        }
    }
}

/// Hands the IPC decoder a spill file's bytes one whole message at a time, each only
/// after its length and CRC32 match what was written (and decompressed after that).
struct Verified<R> {
    inner: R,
    segments: std::collections::VecDeque<Segment>,
    codec: Compression,
    /// The current segment as stored, when it is compressed.
    stored: Vec<u8>,
    /// The current message, verified.
    message: Vec<u8>,
    /// How much of `message` was handed out.
    served: usize,
    /// Bytes of the file read so far.
    read: u64,
}

impl<R: Read> Verified<R> {
    fn next_message(&mut self) -> std::io::Result<bool> {
        let Some(segment) = self.segments.pop_front() else { return Ok(false) };
        let size = (segment.end - self.read) as usize;
        self.served = 0;
        let stored = match self.codec {
            Compression::None => &mut self.message,
            _ => &mut self.stored,
        };
        stored.resize(size, 0);
        let corrupt = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        self.inner
            .read_exact(stored)
            .map_err(|_| corrupt(format!("it is cut short at byte {}", self.read)))?;
        if crc32fast::hash(stored) != segment.crc {
            return Err(corrupt(format!("bytes {}..{} fail their checksum", self.read, segment.end)));
        }
        if self.codec != Compression::None {
            decompress(self.codec, &self.stored, &mut self.message)?;
        }
        self.read = segment.end;
        Ok(true)
    }
}

impl<R: Read> Read for Verified<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.served == self.message.len() && !self.next_message()? {
            return Ok(0);
        }
        let n = buf.len().min(self.message.len() - self.served);
        buf[..n].copy_from_slice(&self.message[self.served..self.served + n]);
        self.served += n;
        Ok(n)
    }
}

/// Batches of a spill file; ends with a `SpillError` naming the file if it is not what
/// was written.
pub(crate) struct SpillReader {
    reader: Option<StreamReader<Verified<BufReader<File>>>>,
    file: SpillFile,
    rows: u64,
}

impl Iterator for SpillReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let failed = |reader: &mut Option<_>, file: &SpillFile, what: String| {
            *reader = None;
            Some(Err(ArrowError::ExternalError(Box::new(file.damaged(&what)))))
        };
        match self.reader.as_mut()?.next() {
            Some(Ok(batch)) => {
                self.rows += batch.num_rows() as u64;
                Some(Ok(batch))
            }
            Some(Err(e)) => failed(&mut self.reader, &self.file, e.to_string()),
            None if self.rows != self.file.rows => {
                let what = format!("read {} rows of the {} written", self.rows, self.file.rows);
                failed(&mut self.reader, &self.file, what)
            }
            None => {
                self.reader = None;
                None
            }
        }
    }
}

impl RecordBatchReader for SpillReader {
    fn schema(&self) -> SchemaRef {
        self.file.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn batches(n: usize) -> (SchemaRef, Vec<RecordBatch>) {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let batches = (0..n)
            .map(|b| {
                let values = Int64Array::from_iter_values((0..1000).map(|i| (b * 1000 + i) as i64));
                RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).unwrap()
            })
            .collect();
        (schema, batches)
    }

    fn written(compression: Compression) -> (Arc<SpillDir>, SpillFile) {
        let dir = Arc::new(SpillDir::create(None, compression, None).unwrap());
        let (schema, batches) = batches(3);
        let file = dir.write(&schema, batches.into_iter().map(Ok)).unwrap();
        (dir, file)
    }

    fn read_all(file: SpillFile) -> Result<usize, ArrowError> {
        file.into_reader().unwrap().map(|b| b.map(|b| b.num_rows())).sum()
    }

    #[test]
    fn a_file_reads_back_whole_and_is_deleted_after() {
        for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let (dir, file) = written(compression);
            let path = file.path.clone();
            assert_eq!(read_all(file).unwrap(), 3000);
            assert!(!path.exists());
            let dir_path = dir.path().to_path_buf();
            drop(dir);
            assert!(!dir_path.exists(), "the directory goes with its last user");
        }
    }

    /// Reads `file` after `damage` changed its bytes: the batches it yields before its
    /// error, each of which must be the one written there.
    fn read_damaged(compression: Compression, damage: impl Fn(&mut Vec<u8>)) {
        let (_dir, file) = written(compression);
        let (_, originals) = batches(3);
        let mut bytes = fs::read(&file.path).unwrap();
        damage(&mut bytes);
        fs::write(&file.path, &bytes).unwrap();
        let path = file.path.display().to_string();
        let is_spill_error = |e: &MergeError| {
            assert!(matches!(e, MergeError::Io(_)), "a spill error: {e}");
            assert!(e.to_string().contains(&path), "{e} names the file");
        };
        let reader = match file.into_reader() {
            Ok(reader) => reader,
            Err(e) => return is_spill_error(&e),
        };
        let mut yielded = 0;
        for item in reader {
            match item {
                Ok(batch) => {
                    assert_eq!(batch, originals[yielded], "a batch read back differs from the one written");
                    yielded += 1;
                }
                Err(ArrowError::ExternalError(e)) => {
                    return is_spill_error(&e.downcast::<MergeError>().expect("a merge error"));
                }
                Err(other) => panic!("{other}"),
            }
        }
        panic!("damage went unnoticed ({yielded} batches read)");
    }

    #[test]
    fn every_flipped_bit_is_an_error_before_any_row_of_its_batch() {
        for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let size = fs::read(&written(compression).1.path).unwrap().len();
            for at in (0..size).step_by(29) {
                read_damaged(compression, |b| b[at] ^= 1 << (at % 8));
            }
        }
    }

    #[test]
    fn a_cut_file_is_an_error_not_fewer_rows() {
        let (_dir, file) = written(Compression::None);
        let ends: Vec<usize> = file.segments.iter().map(|s| s.end as usize).collect();
        drop(file);
        for end in ends[..ends.len() - 1].iter().flat_map(|&e| [e, e - 1, e + 1]) {
            read_damaged(Compression::None, |b| b.truncate(end));
        }
    }

    #[test]
    fn a_sweep_removes_only_directories_nobody_holds() {
        let parent = std::env::temp_dir().join(format!("merge-core-sweep-test-{}", std::process::id()));
        fs::create_dir_all(&parent).unwrap();
        let held = SpillDir::create(Some(&parent), Compression::None, None).unwrap();
        let dropped_lock = SpillDir::create(Some(&parent), Compression::None, None).unwrap();
        let abandoned = dropped_lock.path().to_path_buf();
        // A killed process: its directory stays (no destructor), its lock goes with it.
        dropped_lock._lock.unlock().unwrap();
        std::mem::forget(dropped_lock);
        let unrelated = parent.join("someone-else");
        fs::create_dir_all(&unrelated).unwrap();
        sweep_orphans(&parent);
        assert!(held.path().exists(), "a directory in use survives the sweep");
        assert!(!abandoned.exists(), "an abandoned directory is swept");
        assert!(unrelated.exists(), "other directories are not touched");
        drop(held);
        fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn a_sweep_never_takes_a_directory_being_created() {
        let parent = std::env::temp_dir().join(format!("merge-core-sweep-race-{}", std::process::id()));
        fs::create_dir_all(&parent).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        let created = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    sweep_orphans(&parent);
                }
            });
            let created = (0..2000).all(|_| {
                SpillDir::create(Some(&parent), Compression::None, None)
                    .is_ok_and(|dir| dir.path().join(LOCK).exists())
            });
            done.store(true, Ordering::Relaxed);
            created
        });
        fs::remove_dir_all(&parent).unwrap();
        assert!(created, "a sweep removed a directory in use");
    }

    #[test]
    fn the_disk_cap_is_enforced() {
        let dir = Arc::new(SpillDir::create(None, Compression::None, Some(10_000)).unwrap());
        let (schema, batches) = batches(3);
        let error = dir.write(&schema, batches.into_iter().map(Ok)).err().unwrap();
        assert!(matches!(error, MergeError::DiskFull(_)), "{error}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "only the lock file is left");
    }
}
