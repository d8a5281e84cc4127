//! Spill files: sorted runs written to disk as Arrow IPC streams, in a private
//! directory that disappears with its last user.
//!
//! - The directory is created with owner-only permissions (0700, whatever the umask),
//!   holds a `pid` marker, and is removed when the last [`Arc<SpillDir>`] is dropped —
//!   on success, on error, and when a stream is dropped half read. Directories left by a
//!   process that was killed (no destructor ran) are swept by the next one.
//! - Each file records its row count, byte length and CRC32 when written; a reader
//!   verifies all three at the end, so a truncated or corrupted file is an error, never
//!   a silently shorter result (an IPC stream cut at a batch boundary reads as valid).
//! - Only the columns are written, never arrow row-format keys: those are recomputed
//!   after reading, since the row encoding may change between arrow releases.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_ipc::CompressionType;
use arrow_schema::{ArrowError, SchemaRef};

use crate::error::{invalid, MergeError, Result};

const PREFIX: &str = "merge-core-spill-";

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
}

impl SpillDir {
    /// Creates a fresh directory under `parent` (the system temporary directory if
    /// `None`), after sweeping directories left there by dead processes.
    pub(crate) fn create(
        parent: Option<&Path>,
        compression: Compression,
        max_bytes: Option<u64>,
    ) -> Result<Self> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        sweep_orphans(&parent);
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = parent.join(format!("{PREFIX}{}-{nanos:x}-{unique}", std::process::id()));
        fs::DirBuilder::new().mode(0o700).create(&path).map_err(|e| {
            MergeError::Io(std::io::Error::new(
                e.kind(),
                format!("cannot create spill directory in {}: {e}", parent.display()),
            ))
        })?;
        fs::write(path.join("pid"), std::process::id().to_string())?;
        Ok(Self { path, compression, max_bytes, bytes_on_disk: AtomicU64::new(0), next_file: Mutex::new(0) })
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
        let compression = match self.compression {
            Compression::None => None,
            Compression::Lz4 => Some(CompressionType::LZ4_FRAME),
            Compression::Zstd => Some(CompressionType::ZSTD),
        };
        let options = IpcWriteOptions::default().try_with_compression(compression)?;
        let file = BufWriter::with_capacity(1 << 20, File::create(path)?);
        let counting =
            Checksummed { inner: file, crc: crc32fast::Hasher::new(), bytes: 0, dir: self.clone() };
        let mut writer = StreamWriter::try_new_with_options(counting, schema, options)?;
        let mut rows = 0u64;
        for batch in batches {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            writer.write(&batch).map_err(unwrap_disk_full)?;
        }
        writer.finish().map_err(unwrap_disk_full)?;
        let mut counting = writer.into_inner()?;
        counting.inner.flush()?;
        Ok(SpillFile {
            path: path.to_path_buf(),
            schema: schema.clone(),
            rows,
            bytes: counting.bytes,
            crc: counting.crc.finalize(),
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
        ArrowError::IoError(_, io) if io.kind() == std::io::ErrorKind::StorageFull => {
            MergeError::DiskFull(io.to_string())
        }
        other => other.into(),
    }
}

/// Removes spill directories whose creating process no longer runs.
fn sweep_orphans(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let marker = fs::read_to_string(entry.path().join("pid")).ok();
        let alive = Path::new(&format!("/proc/{pid}")).exists();
        if !alive && marker.is_some_and(|m| m.trim() == pid.to_string()) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// A writer that counts, checksums and charges the disk budget for what passes.
struct Checksummed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
    dir: Arc<SpillDir>,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.dir.reserve(buf.len() as u64)?;
        let n = self.inner.write(buf)?;
        // Only what was written counts; give back the rest of the reservation.
        self.dir.bytes_on_disk.fetch_sub((buf.len() - n) as u64, Ordering::Relaxed);
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A finished spill file and what was recorded when it was written.
pub(crate) struct SpillFile {
    path: PathBuf,
    schema: SchemaRef,
    rows: u64,
    bytes: u64,
    crc: u32,
    dir: Arc<SpillDir>,
}

impl SpillFile {
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads the file back batch by batch; the file is deleted once read and verified.
    pub(crate) fn into_reader(self) -> Result<SpillReader> {
        let file = File::open(&self.path)?;
        let verifying = Verifying {
            inner: BufReader::with_capacity(1 << 16, file),
            crc: crc32fast::Hasher::new(),
            bytes: 0,
        };
        let reader = StreamReader::try_new(verifying, None)?;
        Ok(SpillReader { reader: Some(reader), file: self, rows: 0 })
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        if fs::remove_file(&self.path).is_ok() {
            self.dir.bytes_on_disk.fetch_sub(self.bytes, Ordering::Relaxed);
        }
    }
}

struct Verifying<R> {
    inner: R,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<R: Read> Read for Verifying<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Batches of a spill file; ends with an error if the file is not what was written.
pub(crate) struct SpillReader {
    reader: Option<StreamReader<Verifying<BufReader<File>>>>,
    file: SpillFile,
    rows: u64,
}

impl SpillReader {
    fn verify(&mut self) -> Result<(), ArrowError> {
        let Some(mut reader) = self.reader.take() else { return Ok(()) };
        // Read to the very end so the checksum covers every byte.
        let verifying = reader.get_mut();
        std::io::copy(verifying, &mut std::io::sink())?;
        let (bytes, crc) = (verifying.bytes, verifying.crc.clone().finalize());
        let f = &self.file;
        if self.rows != f.rows || bytes != f.bytes || crc != f.crc {
            return Err(ArrowError::ExternalError(Box::new(MergeError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "spill file {} is corrupt: read {} rows / {bytes} bytes (crc {crc:08x}), wrote {} rows / {} bytes (crc {:08x})",
                    f.path.display(),
                    self.rows,
                    f.rows,
                    f.bytes,
                    f.crc
                ),
            )))));
        }
        Ok(())
    }
}

impl Iterator for SpillReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.reader.as_mut()?.next() {
            Some(Ok(batch)) => {
                self.rows += batch.num_rows() as u64;
                Some(Ok(batch))
            }
            Some(Err(e)) => {
                self.reader = None;
                Some(Err(e))
            }
            None => self.verify().err().map(Err),
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

    #[test]
    fn a_file_cut_at_a_batch_boundary_is_an_error_not_fewer_rows() {
        let (_dir, file) = written(Compression::None);
        // Keep the schema and the first batch only: a valid-looking IPC stream.
        let bytes = fs::read(&file.path).unwrap();
        let mut reader = StreamReader::try_new(std::io::Cursor::new(bytes.clone()), None).unwrap();
        reader.next().unwrap().unwrap();
        let first_batch_end = reader.get_ref().position() as usize;
        fs::write(&file.path, &bytes[..first_batch_end]).unwrap();
        let error = read_all(file).unwrap_err().to_string();
        assert!(error.contains("corrupt") && error.contains("1000 rows"), "{error}");
    }

    #[test]
    fn a_flipped_byte_is_an_error() {
        let (_dir, file) = written(Compression::None);
        let mut bytes = fs::read(&file.path).unwrap();
        let last = bytes.len() - 20; // inside the last batch's values
        bytes[last] ^= 0x40;
        fs::write(&file.path, &bytes).unwrap();
        assert!(read_all(file).unwrap_err().to_string().contains("corrupt"));
    }

    #[test]
    fn the_disk_cap_is_enforced() {
        let dir = Arc::new(SpillDir::create(None, Compression::None, Some(10_000)).unwrap());
        let (schema, batches) = batches(3);
        let error = dir.write(&schema, batches.into_iter().map(Ok)).err().unwrap();
        assert!(matches!(error, MergeError::DiskFull(_)), "{error}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "only the pid marker is left");
    }
}
