//! A per-process cache for point lookups: of each data file a lookup met, its footer
//! (with the page index) and an order-preserving 64-bit digest of every row's first key
//! column, and of a file with digests its dictionary pages ([`WithDictionaries`]), kept
//! within a byte budget and evicted least recently used first.
//!
//! A lookup reading keys first ([`super::keys_first`]) decodes the key column's pages
//! that may hold the key, and with them the column's dictionary page, in every file of
//! the key's bucket; a random key's pages differ from the last one's, but the dictionary
//! (often most of the bytes) is the same every time. With a file's digests at hand, a
//! lookup finds the rows whose digest may be the key's by a binary search, and reads
//! nothing of a file that has none; of one that has, it reads every column of those rows
//! only, and the exact key comparison that trims each decoded batch drops a row whose
//! digest merely ties.
//!
//! Building a file's digests reads its whole key column, which pays only if the file is
//! looked up again: its first lookup leaves a mark and reads the key pages it needs, its
//! second builds the digests ([`LookupCache::key_digests_once_met`]).
//!
//! # Digests
//!
//! The file is sorted by key, so its digests ascend, and for every key `a < b` implies
//! `digest(a) <= digest(b)` (integers, dates, times and timestamps: the value itself,
//! exact; strings and binaries: [`digest_past`] the file's shared head, the bytes its
//! first and last key share, then 7 bytes of what follows). The rows of a key range
//! `[lower, upper)` are then among the rows with `digest(lower) <= digest <= digest(upper)`
//! (`< digest(upper)` when digests are exact). Eight bytes a row: a 6M-row table's keys
//! take 48 MB, where its key column decoded would take its strings' length each.
//!
//! # Staleness
//!
//! Paimon never rewrites a data file under the same name, but a file at a path may be
//! replaced by other means (a test's temporary folder, a restore). An entry is keyed by
//! the path and what the opened file's `stat` says of it: size, inode, and the times of
//! its last modification and last status change (the latter no utility can set back), so
//! a replaced file is a miss and never served from the entry of its predecessor.
//!
//! Paimon's Java lookup (`LookupLevels`) differs: it keeps a local lookup file per data
//! file (a hash or sorted key-value file on disk, built by reading the whole file once)
//! and caches those files' blocks. This cache keeps no file on disk and holds no value
//! column: of a hit it still reads the rows' pages of the data file itself.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int64Array};
use arrow_schema::DataType;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, Length};

use super::key_range::KeyRange;
use super::stored_pages::with_raw_zstd_body;
use crate::error::Result;
use crate::keys::{common_prefix_len, digest_past, MAX_HEAD};

/// The budget of the process's cache unless set otherwise (see [`LookupCache::global`]).
pub const DEFAULT_BUDGET: u64 = 128 << 20;

/// Bytes counted for an entry beyond its data: its key, path and bookkeeping.
const ENTRY_OVERHEAD: u64 = 256;

/// A data file as it is on disk now: a replaced file differs in one of these.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileId {
    path: PathBuf,
    len: u64,
    inode: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl FileId {
    /// The identity of `file`, open at `path` (`None`: its status is unknown).
    pub fn of(path: &Path, file: &File) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let stat = file.metadata().ok()?;
        Some(Self {
            path: path.to_path_buf(),
            len: stat.len(),
            inode: stat.ino(),
            modified: (stat.mtime(), stat.mtime_nsec()),
            changed: (stat.ctime(), stat.ctime_nsec()),
        })
    }
}

/// What is kept of a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    Footer,
    /// The digests of the named column read as the given type.
    Keys(String, DataType),
    /// A mark that a lookup met the file's column of that type, before its digests.
    Met(String, DataType),
    /// The stored bytes of a dictionary page, by its offset in the file.
    Page(u64),
}

#[derive(Clone)]
enum Cached {
    Footer(ArrowReaderMetadata),
    Keys(Arc<KeyDigests>),
    Met,
    Page(Bytes),
}

struct Slot {
    value: Cached,
    bytes: u64,
    last_used: u64,
}

/// A cache's figures (see [`LookupCache::stats`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// The most bytes its entries may hold.
    pub budget: u64,
    /// Bytes its entries hold now.
    pub bytes: u64,
    /// Entries held now.
    pub entries: u64,
    /// Lookups of an entry that found it.
    pub hits: u64,
    /// Lookups of an entry that did not.
    pub misses: u64,
    /// Entries dropped to stay within the budget.
    pub evictions: u64,
}

#[derive(Default)]
struct State {
    slots: HashMap<(FileId, Part), Slot>,
    clock: u64,
    stats: CacheStats,
}

/// Footers and key digests of data files, within a byte budget, least recently used
/// evicted first. Shared by the reads that are given it; entries are computed outside
/// its lock (two reads missing the same file at once both compute it).
pub struct LookupCache {
    state: Mutex<State>,
}

impl std::fmt::Debug for LookupCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LookupCache").field(&self.stats()).finish()
    }
}

impl LookupCache {
    /// An empty cache of `budget` bytes (0: it keeps nothing).
    pub fn new(budget: u64) -> Self {
        let stats = CacheStats { budget, ..CacheStats::default() };
        Self { state: Mutex::new(State { stats, ..State::default() }) }
    }

    /// The process's cache, [`DEFAULT_BUDGET`] bytes until [`Self::set_budget`] says otherwise.
    pub fn global() -> &'static Arc<LookupCache> {
        static GLOBAL: OnceLock<Arc<LookupCache>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(LookupCache::new(DEFAULT_BUDGET)))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Figures so far.
    pub fn stats(&self) -> CacheStats {
        let state = self.lock();
        CacheStats { entries: state.slots.len() as u64, ..state.stats }
    }

    /// A new budget; entries past it are evicted now.
    pub fn set_budget(&self, budget: u64) {
        let mut state = self.lock();
        state.stats.budget = budget;
        state.evict_to(budget);
    }

    /// The footer of `file`, loaded by `load` unless kept.
    pub fn footer(
        &self,
        file: &FileId,
        load: impl FnOnce() -> Result<ArrowReaderMetadata>,
    ) -> Result<ArrowReaderMetadata> {
        let key = (file.clone(), Part::Footer);
        if let Some(Cached::Footer(footer)) = self.get(&key) {
            return Ok(footer);
        }
        let footer = load()?;
        let bytes = footer.metadata().memory_size() as u64;
        self.insert(key, Cached::Footer(footer.clone()), bytes);
        Ok(footer)
    }

    /// The stored bytes of `file`'s dictionary page at `offset`, read by `load` unless kept.
    pub fn dictionary_page<E>(
        &self,
        file: &FileId,
        offset: u64,
        load: impl FnOnce() -> std::result::Result<Bytes, E>,
    ) -> std::result::Result<Bytes, E> {
        let key = (file.clone(), Part::Page(offset));
        if let Some(Cached::Page(bytes)) = self.get(&key) {
            return Ok(bytes);
        }
        let bytes = load()?;
        self.insert(key, Cached::Page(bytes.clone()), bytes.len() as u64);
        Ok(bytes)
    }

    /// The digests of `file`'s column `column` read as `key_type`, built by `build`
    /// from the whole decoded column unless kept (`None`: it cannot be digested).
    pub fn key_digests(
        &self,
        file: &FileId,
        column: &str,
        key_type: &DataType,
        build: impl FnOnce() -> Result<ArrayRef>,
    ) -> Result<Option<Arc<KeyDigests>>> {
        self.digests_or(file, column, key_type, |cache, key| cache.build_digests(key, build))
    }

    /// As [`Self::key_digests`], but a file's digests are built on its second lookup only:
    /// the first (`None`) leaves a mark of a few bytes, and its caller reads just the key
    /// pages it needs, as without a cache. A file looked up once, as by a cold lookup of a
    /// large table, so reads no more than an uncached lookup does; one looked up again
    /// pays for the whole key column once, and its later lookups read no key column.
    pub fn key_digests_once_met(
        &self,
        file: &FileId,
        column: &str,
        key_type: &DataType,
        build: impl FnOnce() -> Result<ArrayRef>,
    ) -> Result<Option<Arc<KeyDigests>>> {
        self.digests_or(file, column, key_type, |cache, key| {
            let mark = (file.clone(), Part::Met(column.to_string(), key_type.clone()));
            if !cache.take_mark(&mark) {
                cache.insert(mark, Cached::Met, 0);
                return Ok(None);
            }
            cache.build_digests(key, build)
        })
    }

    /// The kept digests of `file`'s column `column` read as `key_type`, or what `missing`
    /// makes of their key when none are kept.
    fn digests_or(
        &self,
        file: &FileId,
        column: &str,
        key_type: &DataType,
        missing: impl FnOnce(&Self, (FileId, Part)) -> Result<Option<Arc<KeyDigests>>>,
    ) -> Result<Option<Arc<KeyDigests>>> {
        let key = (file.clone(), Part::Keys(column.to_string(), key_type.clone()));
        if let Some(Cached::Keys(digests)) = self.get(&key) {
            return Ok(Some(digests));
        }
        missing(self, key)
    }

    fn build_digests(
        &self,
        key: (FileId, Part),
        build: impl FnOnce() -> Result<ArrayRef>,
    ) -> Result<Option<Arc<KeyDigests>>> {
        let Some(digests) = KeyDigests::of(build()?.as_ref()) else { return Ok(None) };
        let digests = Arc::new(digests);
        self.insert(key, Cached::Keys(digests.clone()), digests.bytes());
        Ok(Some(digests))
    }

    /// Whether `mark` was kept (it is dropped: the digests it stood for replace it).
    /// Marks count in neither hits nor misses.
    fn take_mark(&self, mark: &(FileId, Part)) -> bool {
        let mut state = self.lock();
        match state.slots.remove(mark) {
            Some(slot) => {
                state.stats.bytes -= slot.bytes;
                true
            }
            None => false,
        }
    }

    fn get(&self, key: &(FileId, Part)) -> Option<Cached> {
        let mut state = self.lock();
        state.clock += 1;
        let now = state.clock;
        match state.slots.get_mut(key) {
            Some(slot) => {
                slot.last_used = now;
                let value = slot.value.clone();
                state.stats.hits += 1;
                Some(value)
            }
            None => {
                state.stats.misses += 1;
                None
            }
        }
    }

    /// Keeps `value` if it fits the budget, evicting the least recently used entries
    /// as needed; one larger than the whole budget is not kept.
    fn insert(&self, key: (FileId, Part), value: Cached, bytes: u64) {
        let bytes = bytes + ENTRY_OVERHEAD;
        let mut state = self.lock();
        if bytes > state.stats.budget {
            return;
        }
        if let Some(old) = state.slots.remove(&key) {
            state.stats.bytes -= old.bytes;
        }
        let budget = state.stats.budget;
        state.evict_to(budget - bytes);
        state.clock += 1;
        let last_used = state.clock;
        state.slots.insert(key, Slot { value, bytes, last_used });
        state.stats.bytes += bytes;
    }
}

impl State {
    /// Evicts least recently used entries until they hold at most `bytes`.
    fn evict_to(&mut self, bytes: u64) {
        while self.stats.bytes > bytes {
            let oldest = self.slots.iter().min_by_key(|(_, slot)| slot.last_used).map(|(key, _)| key.clone());
            let Some(oldest) = oldest else { break };
            let slot = self.slots.remove(&oldest).expect("found above");
            self.stats.bytes -= slot.bytes;
            self.stats.evictions += 1;
        }
    }
}

/// A file's bytes as a lookup's decoder asks for them, its dictionary pages taken from the
/// cache (read and kept on a miss). A hit reads every column's dictionary page beside the
/// few data pages holding its rows, and a file looked up again and again (one whose key
/// digests are kept) has the same dictionary pages each time; they are most of what a
/// warm hit reads (a key column of unique strings has a dictionary page as large as a
/// data page). The pages are kept as stored, compressed: decoding them stays the reader's.
///
/// Only files with a page index are served so: its reader asks for a dictionary page as
/// one range, from the column chunk's start to its first data page, which the page index
/// gives; without it the reader streams the column chunk from its start.
pub(crate) struct WithDictionaries<T> {
    source: T,
    cache: Arc<LookupCache>,
    file: FileId,
    /// Each dictionary page's length and codec, by its offset in the file.
    pages: HashMap<u64, (usize, Compression)>,
}

impl<T> WithDictionaries<T> {
    /// `source`, the file `file` of footer `metadata`, its dictionary pages kept in `cache`.
    pub(crate) fn new(source: T, cache: Arc<LookupCache>, file: FileId, metadata: &ParquetMetaData) -> Self {
        Self { source, cache, file, pages: dictionary_pages(metadata) }
    }
}

impl<T: Length> Length for WithDictionaries<T> {
    fn len(&self) -> u64 {
        self.source.len()
    }
}

impl<T: ChunkReader> ChunkReader for WithDictionaries<T> {
    type T = T::T;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.source.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self.pages.get(&start) {
            Some(&(page, codec)) if page == length => self.cache.dictionary_page(&self.file, start, || {
                let stored = self.source.get_bytes(start, length)?;
                // Kept as raw zstd blocks: each later use copies it instead of decompressing.
                let raw = match codec {
                    Compression::ZSTD(_) => with_raw_zstd_body(&stored),
                    _ => None,
                };
                Ok(raw.unwrap_or(stored))
            }),
            _ => self.source.get_bytes(start, length),
        }
    }
}

/// Where each dictionary page of a file with a page index lies: its column chunk's start,
/// and its length up to the chunk's first data page; with the chunk's codec.
fn dictionary_pages(metadata: &ParquetMetaData) -> HashMap<u64, (usize, Compression)> {
    let mut pages = HashMap::new();
    for (g, group) in metadata.row_groups().iter().enumerate() {
        let index = metadata.page_index_for_row_group(g);
        for (c, column) in group.columns().iter().enumerate() {
            let start = column.byte_range().0;
            let first =
                index.offset_index(c).and_then(|o| o.page_locations().first()).map(|p| p.offset as u64);
            match first {
                Some(first) if column.dictionary_page_offset().is_some() && first > start => {
                    pages.insert(start, ((first - start) as usize, column.compression()));
                }
                _ => {}
            }
        }
    }
    pages
}

/// How a column's values become digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The value as a signed 64-bit integer, its sign bit flipped: exact.
    Integer,
    /// [`digest_past`] the file's shared head: ties may be different keys.
    Bytes,
}

/// The digests of a file's first key column, one per row of the file (deleted rows too),
/// ascending as the file's keys do.
#[derive(Debug)]
pub struct KeyDigests {
    form: Form,
    /// The bytes every key of the file starts with ([`Form::Bytes`]).
    head: Box<[u8]>,
    digests: Vec<u64>,
}

impl KeyDigests {
    /// The digests of `keys` (a file's first key column, in file order), or `None` if
    /// its type has no digest here or it holds a null.
    pub fn of(keys: &dyn Array) -> Option<Self> {
        if keys.null_count() > 0 {
            return None;
        }
        match Form::of(keys.data_type())? {
            Form::Integer => {
                let digests = integers(keys)?.values().iter().map(|&v| integer_digest(v)).collect();
                Some(Self { form: Form::Integer, head: Box::default(), digests })
            }
            Form::Bytes => {
                let values = byte_values(keys)?;
                let head = match (values.first(), values.last()) {
                    (Some(first), Some(last)) => &first[..common_prefix_len(first, last).min(MAX_HEAD)],
                    _ => &[][..],
                };
                let digests = values.iter().map(|v| digest_past(head, v)).collect();
                Some(Self { form: Form::Bytes, head: head.into(), digests })
            }
        }
    }

    /// Bytes the digests hold.
    pub fn bytes(&self) -> u64 {
        (self.digests.len() * size_of::<u64>() + self.head.len()) as u64
    }

    /// The file rows that may hold keys of `range` (a superset: the read compares the
    /// keys of those rows exactly), or `None` if a bound has no digest of this form.
    pub fn candidates(&self, range: &KeyRange) -> Option<Range<u64>> {
        let start = match &range.lower {
            Some(lower) => {
                let lower = self.digest_of(lower)?;
                self.digests.partition_point(|&d| d < lower)
            }
            None => 0,
        };
        let end = match &range.upper {
            Some(upper) => {
                let upper = self.digest_of(upper)?;
                match self.form {
                    Form::Integer => self.digests.partition_point(|&d| d < upper),
                    Form::Bytes => self.digests.partition_point(|&d| d <= upper),
                }
            }
            None => self.digests.len(),
        };
        Some(start as u64..end.max(start) as u64)
    }

    /// The digest of a bound (a one-value array of the key's type).
    fn digest_of(&self, bound: &ArrayRef) -> Option<u64> {
        if bound.len() != 1 || bound.null_count() > 0 || Form::of(bound.data_type())? != self.form {
            return None;
        }
        match self.form {
            Form::Integer => Some(integer_digest(integers(bound.as_ref())?.value(0))),
            Form::Bytes => Some(digest_past(&self.head, byte_values(bound.as_ref())?.first()?)),
        }
    }
}

impl Form {
    fn of(data_type: &DataType) -> Option<Self> {
        use DataType::*;
        match data_type {
            Int8 | Int16 | Int32 | Int64 | Date32 | Date64 | Time32(_) | Time64(_) | Timestamp(_, _) => {
                Some(Self::Integer)
            }
            Utf8 | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView => Some(Self::Bytes),
            _ => None,
        }
    }
}

fn integer_digest(value: i64) -> u64 {
    value as u64 ^ (1 << 63)
}

/// Values of an integer-like column as 64-bit integers (dates, times, timestamps as
/// their stored counts).
fn integers(values: &dyn Array) -> Option<Int64Array> {
    let values = arrow_cast::cast(&arrow_array::make_array(values.to_data()), &DataType::Int64).ok()?;
    Some(values.as_primitive::<arrow_array::types::Int64Type>().clone())
}

/// Each value's bytes, of a string or binary column (`None`: another type, or a null).
fn byte_values(values: &dyn Array) -> Option<Vec<&[u8]>> {
    fn all<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> Option<Vec<&'a [u8]>> {
        values.collect()
    }
    match values.data_type() {
        DataType::Utf8 => all(values.as_string::<i32>().iter().map(|v| v.map(str::as_bytes))),
        DataType::LargeUtf8 => all(values.as_string::<i64>().iter().map(|v| v.map(str::as_bytes))),
        DataType::Utf8View => all(values.as_string_view().iter().map(|v| v.map(str::as_bytes))),
        DataType::Binary => all(values.as_binary::<i32>().iter()),
        DataType::LargeBinary => all(values.as_binary::<i64>().iter()),
        DataType::BinaryView => all(values.as_binary_view().iter()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{
        BinaryArray, Date32Array, Int32Array, StringArray, StringViewArray, TimestampMicrosecondArray,
    };

    use super::*;

    fn range(lower: Option<ArrayRef>, upper: Option<ArrayRef>) -> KeyRange {
        KeyRange { column: 0, lower, upper }
    }

    fn one<A: Array + 'static>(array: A) -> Option<ArrayRef> {
        Some(Arc::new(array))
    }

    /// The rows of sorted `keys` in `[lower, upper)`, by plain comparison.
    fn exact<T: PartialOrd>(keys: &[T], lower: &T, upper: &T) -> Range<u64> {
        let start = keys.iter().position(|k| k >= lower).unwrap_or(keys.len());
        let end = keys.iter().position(|k| k >= upper).unwrap_or(keys.len());
        start as u64..end.max(start) as u64
    }

    fn covers(candidates: &Range<u64>, exact: &Range<u64>) -> bool {
        exact.is_empty() || (candidates.start <= exact.start && exact.end <= candidates.end)
    }

    #[test]
    fn integer_candidates_are_exactly_the_rows_of_the_range() {
        let keys = [-5i32, -1, 0, 0, 3, 7, 7, 7, 100];
        let digests = KeyDigests::of(&Int32Array::from(keys.to_vec())).unwrap();
        for lower in -6..102 {
            for upper in lower..103 {
                let got = digests.candidates(&range(
                    one(Int32Array::from(vec![lower])),
                    one(Int32Array::from(vec![upper])),
                ));
                let want = exact(&keys, &lower, &upper);
                if want.is_empty() {
                    assert!(got.unwrap().is_empty(), "{lower}..{upper}");
                } else {
                    assert_eq!(got.unwrap(), want, "{lower}..{upper}");
                }
            }
        }
        assert_eq!(digests.candidates(&range(None, None)), Some(0..9));
    }

    #[test]
    fn dates_and_timestamps_digest_as_integers() {
        let dates = KeyDigests::of(&Date32Array::from(vec![1, 5, 9])).unwrap();
        let got = dates.candidates(&range(one(Date32Array::from(vec![5])), one(Date32Array::from(vec![6]))));
        assert_eq!(got, Some(1..2));
        let times = KeyDigests::of(&TimestampMicrosecondArray::from(vec![-10, 0, 10])).unwrap();
        let bound = |v| one(TimestampMicrosecondArray::from(vec![v]));
        assert_eq!(times.candidates(&range(bound(-10), bound(1))), Some(0..2));
    }

    #[test]
    fn string_candidates_hold_every_row_of_the_range() {
        // A long shared head, keys that leave it, ties past 7 bytes of tail, empty keys.
        let mut keys: Vec<String> = vec!["".into(), "a".into(), "user-".into()];
        keys.extend((0..200).map(|i| format!("user-{:05}-{}", i / 3, "x".repeat(i % 4))));
        keys.extend(["user-99999999999a".to_string(), "user-99999999999b".to_string(), "zz".to_string()]);
        keys.sort();
        let digests = KeyDigests::of(&StringArray::from(keys.clone())).unwrap();
        let mut probes = keys.clone();
        probes.extend(["user-00010".into(), "user-000100".into(), "b".into(), "\u{10ffff}".into()]);
        for lower in &probes {
            for upper in [format!("{lower}\0"), format!("{lower}x"), "user-00020".into()] {
                let bound = |s: &str| one(StringArray::from(vec![s]));
                let got = digests.candidates(&range(bound(lower), bound(&upper))).unwrap();
                let want = exact(&keys, lower, &upper);
                assert!(covers(&got, &want), "{lower:?}..{upper:?}: {got:?} misses {want:?}");
            }
        }
        // Past the head every key of a file shares, a short key's digest is exact: a
        // point lookup's candidates are its own rows.
        let users: Vec<String> = (0..50).map(|i| format!("user-{i:05}-x")).collect();
        let digests = KeyDigests::of(&StringArray::from(users)).unwrap();
        let bound = |s: &str| one(StringArray::from(vec![s]));
        assert_eq!(digests.candidates(&range(bound("user-00012-x"), bound("user-00012-x\0"))), Some(12..13));
    }

    #[test]
    fn views_and_binaries_digest_their_bytes() {
        let keys = vec!["ab", "abc", "abd", "b"];
        let views = KeyDigests::of(&StringViewArray::from(keys.clone())).unwrap();
        let bound = |s: &str| one(StringViewArray::from(vec![s]));
        assert!(covers(&views.candidates(&range(bound("abc"), bound("abc\0"))).unwrap(), &(1..2)));
        let binaries =
            KeyDigests::of(&BinaryArray::from_vec(keys.iter().map(|k| k.as_bytes()).collect())).unwrap();
        let bound = |s: &[u8]| one(BinaryArray::from_vec(vec![s]));
        assert!(covers(&binaries.candidates(&range(bound(b"abd"), bound(b"b"))).unwrap(), &(2..3)));
    }

    #[test]
    fn a_bound_of_another_form_has_no_candidates() {
        let digests = KeyDigests::of(&Int32Array::from(vec![1, 2])).unwrap();
        assert_eq!(digests.candidates(&range(one(StringArray::from(vec!["1"])), None)), None);
        assert!(KeyDigests::of(&Int32Array::from(vec![Some(1), None])).is_none(), "a null key");
        assert!(KeyDigests::of(&arrow_array::Float64Array::from(vec![1.0])).is_none());
    }

    fn file_id(name: &str) -> FileId {
        FileId { path: name.into(), len: 1, inode: 1, modified: (0, 0), changed: (0, 0) }
    }

    fn keys_of(rows: usize) -> ArrayRef {
        Arc::new(arrow_array::Int64Array::from_iter_values(0..rows as i64))
    }

    fn cache_keys(cache: &LookupCache, name: &str, rows: usize) -> Arc<KeyDigests> {
        cache.key_digests(&file_id(name), "k", &DataType::Int64, || Ok(keys_of(rows))).unwrap().unwrap()
    }

    #[test]
    fn the_cache_stays_within_its_budget_evicting_the_least_recently_used() {
        let entry = 1000 * 8 + ENTRY_OVERHEAD;
        let cache = LookupCache::new(3 * entry + 10);
        for name in ["a", "b", "c"] {
            cache_keys(&cache, name, 1000);
        }
        assert_eq!(cache.stats().entries, 3);
        cache_keys(&cache, "a", 1000); // a hit: "b" is now the least recently used
        assert_eq!(cache.stats().hits, 1);
        cache_keys(&cache, "d", 1000);
        let stats = cache.stats();
        assert!(stats.bytes <= stats.budget, "{stats:?}");
        assert_eq!((stats.entries, stats.evictions), (3, 1));
        let misses = stats.misses;
        cache_keys(&cache, "a", 1000);
        assert_eq!(cache.stats().misses, misses, "a kept");
        cache_keys(&cache, "b", 1000);
        assert_eq!(cache.stats().misses, misses + 1, "b evicted");
        for rows in [10, 5000, 100, 2000, 1] {
            cache_keys(&cache, &format!("f{rows}"), rows);
            let stats = cache.stats();
            assert!(stats.bytes <= stats.budget, "{stats:?}");
        }
    }

    #[test]
    fn an_entry_larger_than_the_budget_is_not_kept_and_a_smaller_budget_evicts() {
        let cache = LookupCache::new(4096);
        let digests = cache_keys(&cache, "big", 1000);
        assert_eq!(digests.candidates(&range(None, None)), Some(0..1000), "still answered");
        assert_eq!(cache.stats().bytes, 0);
        cache_keys(&cache, "small", 10);
        assert_eq!(cache.stats().entries, 1);
        cache.set_budget(0);
        assert_eq!((cache.stats().entries, cache.stats().bytes), (0, 0));
    }

    #[test]
    fn digests_are_built_on_a_files_second_lookup_and_never_without_a_budget() {
        let cache = LookupCache::new(1 << 20);
        let once_met = |cache: &LookupCache, name: &str, builds: &mut u32| {
            let build = || {
                *builds += 1;
                Ok(keys_of(10))
            };
            cache.key_digests_once_met(&file_id(name), "k", &DataType::Int64, build).unwrap()
        };
        let mut builds = 0;
        assert!(once_met(&cache, "f", &mut builds).is_none(), "first lookup: a mark only");
        assert_eq!((builds, cache.stats().entries), (0, 1));
        assert!(once_met(&cache, "f", &mut builds).is_some(), "second: built");
        assert!(once_met(&cache, "f", &mut builds).is_some(), "third: kept");
        assert_eq!((builds, cache.stats().entries, cache.stats().hits), (1, 1, 1), "the mark gone");
        assert!(once_met(&cache, "g", &mut builds).is_none(), "another file is met anew");
        let off = LookupCache::new(0);
        for _ in 0..3 {
            assert!(once_met(&off, "f", &mut builds).is_none());
        }
        assert_eq!((builds, off.stats().bytes), (1, 0), "no mark kept, nothing built");
    }

    #[test]
    fn a_replaced_file_is_a_miss() {
        let cache = LookupCache::new(1 << 20);
        let old = file_id("f");
        cache.key_digests(&old, "k", &DataType::Int64, || Ok(keys_of(5))).unwrap();
        let replaced = FileId { changed: (1, 0), ..old.clone() };
        let digests =
            cache.key_digests(&replaced, "k", &DataType::Int64, || Ok(keys_of(7))).unwrap().unwrap();
        assert_eq!(digests.candidates(&range(None, None)), Some(0..7));
        let other_type = cache.key_digests(&old, "k", &DataType::Int32, || Ok(keys_of(3))).unwrap().unwrap();
        assert_eq!(other_type.candidates(&range(None, None)), Some(0..3));
    }

    /// A Parquet file in memory: a key, a column of few values and one of many, in row
    /// groups of 400 rows and pages of 100, dictionary-encoded, with a page index.
    fn dictionary_encoded() -> (bytes::Bytes, ArrowReaderMetadata) {
        dictionary_encoded_with(Compression::UNCOMPRESSED)
    }

    fn dictionary_encoded_with(compression: Compression) -> (bytes::Bytes, ArrowReaderMetadata) {
        use parquet::arrow::arrow_reader::ArrowReaderOptions;
        let rows = 1000i64;
        let batch = arrow_array::RecordBatch::try_from_iter([
            ("k", Arc::new(Int64Array::from_iter_values(0..rows)) as ArrayRef),
            ("few", Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i % 7))) as ArrayRef),
            ("many", Arc::new(StringArray::from_iter_values((0..rows).map(|i| format!("{:030}", i / 2))))),
        ])
        .unwrap();
        let properties = parquet::file::properties::WriterProperties::builder()
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(100)
            .set_max_row_group_row_count(Some(400))
            .set_compression(compression)
            .build();
        let mut bytes = Vec::new();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), Some(properties)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let bytes = bytes::Bytes::from(bytes);
        let options = ArrowReaderOptions::new()
            .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required);
        let metadata = ArrowReaderMetadata::load(&bytes, options).unwrap();
        (bytes, metadata)
    }

    /// The bytes a read of rows `rows` of every column takes of the file, through `cache`.
    fn bytes_read(file: &FileId, cache: &Arc<LookupCache>, rows: Range<usize>) -> (u64, Vec<i64>) {
        let (read, batches) = rows_read(dictionary_encoded(), file, Some(cache), rows);
        let few = batches
            .iter()
            .flat_map(|b| b.column(1).as_primitive::<arrow_array::types::Int64Type>().values().to_vec());
        (read, few.collect())
    }

    /// Rows `rows` of every column of the file, through `cache` if given, and the bytes
    /// the read took of the file.
    fn rows_read(
        (bytes, metadata): (bytes::Bytes, ArrowReaderMetadata),
        file: &FileId,
        cache: Option<&Arc<LookupCache>>,
        rows: Range<usize>,
    ) -> (u64, Vec<arrow_array::RecordBatch>) {
        use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
        let counters = Arc::new(super::super::counters::ReadCounters::default());
        let source = super::super::counters::Counted::new(bytes, Some(counters.clone()));
        let selection = RowSelection::from(vec![
            RowSelector::skip(rows.start),
            RowSelector::select(rows.len()),
            RowSelector::skip(1000 - rows.end),
        ]);
        let batches = match cache {
            Some(cache) => {
                let source = WithDictionaries::new(source, cache.clone(), file.clone(), metadata.metadata());
                read_all(source, metadata, selection)
            }
            None => read_all(source, metadata, selection),
        };
        (counters.get().bytes_read, batches)
    }

    fn read_all<T: ChunkReader + 'static>(
        source: T,
        metadata: ArrowReaderMetadata,
        selection: parquet::arrow::arrow_reader::RowSelection,
    ) -> Vec<arrow_array::RecordBatch> {
        let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::new_with_metadata(
            source, metadata,
        );
        builder.with_row_selection(selection).build().unwrap().map(|b| b.unwrap()).collect()
    }

    #[test]
    fn zstd_dictionary_pages_are_kept_as_raw_blocks_and_read_the_same() {
        let file = || dictionary_encoded_with(Compression::ZSTD(Default::default()));
        let stored: usize = dictionary_pages(file().1.metadata()).values().map(|(len, _)| len).sum();
        let cache = Arc::new(LookupCache::new(1 << 20));
        for rows in [450..460, 0..1000, 790..810, 999..1000] {
            let (_, want) = rows_read(file(), &file_id("z"), None, rows.clone());
            let (_, first) = rows_read(file(), &file_id("z"), Some(&cache), rows.clone());
            let (_, again) = rows_read(file(), &file_id("z"), Some(&cache), rows.clone());
            assert_eq!((&first, &again), (&want, &want), "rows {rows:?}");
        }
        // Every dictionary page is kept, each larger than as stored: raw blocks.
        let stats = cache.stats();
        let kept = stats.bytes - stats.entries * ENTRY_OVERHEAD;
        assert!(kept > stored as u64, "{kept} bytes kept for {stored} stored");
    }

    #[test]
    fn dictionary_pages_are_read_once_then_taken_from_the_cache() {
        let (_, metadata) = dictionary_encoded();
        let chunks = metadata.metadata().row_groups().iter().flat_map(|g| g.columns());
        let dictionary = |c: &parquet::file::metadata::ColumnChunkMetaData| {
            c.dictionary_page_offset().map_or(0, |d| (c.data_page_offset() - d) as u64)
        };
        let group_dictionaries: Vec<u64> = metadata
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.columns().iter().map(dictionary).sum())
            .collect();
        assert!(chunks.map(dictionary).all(|d| d > 0), "every column chunk has a dictionary page");
        let want: Vec<i64> = (450..460).map(|i| i % 7).collect();
        let cache = Arc::new(LookupCache::new(1 << 20));
        let (first, rows) = bytes_read(&file_id("f"), &cache, 450..460);
        assert_eq!(rows, want);
        let (second, rows) = bytes_read(&file_id("f"), &cache, 450..460);
        assert_eq!(rows, want);
        assert_eq!(first - second, group_dictionaries[1], "the second group's dictionary pages, kept");
        // Rows of two groups: the second group's pages from the cache, the third's read.
        let (across, _) = bytes_read(&file_id("f"), &cache, 790..810);
        let (again, _) = bytes_read(&file_id("f"), &cache, 790..810);
        assert_eq!(across - again, group_dictionaries[2]);
        // Another file (a replaced one: another identity) is read anew.
        let (other, rows) = bytes_read(&FileId { changed: (9, 9), ..file_id("f") }, &cache, 450..460);
        assert_eq!((other, rows), (first, want.clone()));
        // A cache of no budget keeps nothing: every read reads them.
        let off = Arc::new(LookupCache::new(0));
        let reads: Vec<u64> = (0..3).map(|_| bytes_read(&file_id("f"), &off, 450..460).0).collect();
        assert_eq!(reads, vec![first; 3]);
        assert_eq!((off.stats().entries, off.stats().bytes), (0, 0));
    }
}
