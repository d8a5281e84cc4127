//! Key-range slices: the runs of one merge cut into consecutive ranges of the key's
//! first column, so that the ranges merge on their own threads and their outputs follow
//! one another. All versions of a key share its first column, so a key lives in exactly
//! one slice and each slice folds it as the whole merge would.
//!
//! The cuts come from the files' statistics, never from their rows: each file's *zones*
//! (its pages with the page index, else its row groups) give the first column's least and
//! greatest value over consecutive rows. The cuts are taken among the zones' least
//! values, each where about its share of the rows lies below it (a zone the value falls
//! inside counting half: its rows are spread over its range); a slice then decodes of
//! each file only the zones that may hold its keys and trims the first and last of them
//! to its range. The zones a cut falls in (about one per run) are decoded once, by the
//! first of the two slices to start, which leaves the other slice its rows
//! ([`SharedZones`]).
//!
//! A merge is cut only when every file is local, its statistics cover the first key
//! column with no nulls, and the column's type orders its statistics as the merge orders
//! its keys (integers, dates, times, timestamps, strings and binaries); else it is
//! merged whole.

use std::cmp::Ordering;
use std::fs::File;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, UInt64Array};
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;

use super::counters::Counted;
use super::files::{run_of_files, with_page_index, DataFile, SharedZones, Side};
use super::groups::read_ahead_share;
use super::key_range::{comparator, KeyRange};
use super::lookup_cache::FileId;
use crate::error::Result;
use crate::runs::Run;

/// Rows a slice should have at least: below that, a thread costs more than it saves.
pub const MIN_SLICE_ROWS: u64 = 1 << 16;

/// Per thread beyond the first, the zones a cut merge's cuts fall in may hold 1/this of
/// the rows: one slice decodes them for both, on its own thread, and holds the other's
/// rows until it takes them; past that the zones are too coarse to cut with profit.
const EXTRA_DECODE_PER_THREAD: u64 = 4;

/// The sections of a read (each the runs of one merge, as files) as the groups
/// [`super::groups::merge_groups`] merges on `threads` threads: with fewer sections than
/// threads, each cut into key ranges of the read's column `key` so that every thread has
/// work.
pub fn groups_of_sections(
    schema: &SchemaRef,
    sections: Vec<Vec<Vec<DataFile>>>,
    key: Option<usize>,
    threads: usize,
    batch_size: usize,
) -> Vec<Vec<Run>> {
    let key = key.filter(|_| sections.len() < threads);
    sections
        .into_iter()
        .flat_map(|runs| match key {
            Some(key) => slice_runs(schema, runs, key, threads, batch_size),
            None => {
                vec![runs.into_iter().map(|files| run_of_files(schema.clone(), files, batch_size)).collect()]
            }
        })
        .collect()
}

/// Whether the statistics of a first key column of this type order as its keys do.
fn sliceable(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Int8 | Int16
            | Int32
            | Int64
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Utf8
            | LargeUtf8
            | Utf8View
            | Binary
            | LargeBinary
            | BinaryView
    )
}

/// The runs of one merge (each a list of files of `schema`, in key order) as the runs of
/// merges over consecutive key ranges of the read's column `key`, in order, for
/// `threads` threads: a slice each, or a few rounds of that many when a slice's output
/// would not fit in its thread's share of the read-ahead ([`super::groups`]: a slice
/// merged ahead of its turn waits once its share is full). Merged whole (one group) when
/// it cannot be cut or is too small to pay.
pub fn slice_runs(
    schema: &SchemaRef,
    runs: Vec<Vec<DataFile>>,
    key: usize,
    threads: usize,
    batch_size: usize,
) -> Vec<Vec<Run>> {
    slice_runs_of_at_least(schema, runs, key, threads, batch_size, MIN_SLICE_ROWS)
}

/// [`slice_runs`] with slices of at least `min_rows` rows.
pub(crate) fn slice_runs_of_at_least(
    schema: &SchemaRef,
    runs: Vec<Vec<DataFile>>,
    key: usize,
    threads: usize,
    batch_size: usize,
    min_rows: u64,
) -> Vec<Vec<Run>> {
    let slices = slice_files(schema, runs, key, threads, min_rows);
    let runs_of = |runs: Vec<Vec<DataFile>>| -> Vec<Run> {
        runs.into_iter().map(|files| run_of_files(schema.clone(), files, batch_size)).collect()
    };
    slices.into_iter().map(runs_of).collect()
}

/// The plan of [`slice_runs_of_at_least`]: per slice, per run, the parts of its files.
pub(crate) fn slice_files(
    schema: &SchemaRef,
    mut runs: Vec<Vec<DataFile>>,
    key: usize,
    threads: usize,
    min_rows: u64,
) -> Vec<Vec<Vec<DataFile>>> {
    if threads < 2 || !sliceable(schema.field(key).data_type()) {
        return vec![runs];
    }
    let Some(zones) = zone_runs(&mut runs, schema.field(key).data_type(), key) else {
        return vec![runs]; // the footers read so far stay with their files
    };
    let zoned: Vec<Vec<(DataFile, Zones)>> =
        runs.into_iter().zip(zones).map(|(files, zones)| files.into_iter().zip(zones).collect()).collect();
    let total: u64 = zoned.iter().flatten().map(|(_, zones)| zones.rows()).sum();
    // The files' decoded size bounds the output's.
    let bytes: u64 = zoned.iter().flatten().map(|(file, _)| decoded_bytes(file)).sum();
    let most = (total / min_rows.max(1)) as usize;
    if let Ok(candidates) = CutCandidates::of(&zoned) {
        // Fewer slices cut fewer zones: take the most whose shared zones stay few.
        for slices in slice_counts(bytes, read_ahead_share(threads) as u64, threads, most) {
            let parts = parts_of(&zoned, key, &candidates.cuts(slices));
            let decoded: u64 = parts.iter().flatten().flatten().map(part_rows).sum();
            let extra = total * (slices.min(threads) as u64 - 1) / EXTRA_DECODE_PER_THREAD;
            if parts.len() >= 2 && decoded <= total + extra {
                return parts;
            }
        }
    }
    vec![zoned.into_iter().map(|files| files.into_iter().map(|(file, _)| file).collect()).collect()]
}

/// The numbers of slices worth trying, most first, for files of `bytes` decoded bytes
/// read on `threads` threads with `share` bytes of read-ahead each, and at most `most`
/// slices: multiples of `threads`, so that each round of slices keeps every thread busy
/// (slices hold about as many rows and start in order as threads free up), the first
/// about as many as make each slice's output fit in its share; then fewer than `threads`.
pub(crate) fn slice_counts(bytes: u64, share: u64, threads: usize, most: usize) -> Vec<usize> {
    let per_round = share.max(1) * threads as u64;
    let rounds = ((bytes + per_round / 2) / per_round).max(1) as usize;
    let most = most.min(rounds * threads);
    let whole_rounds = (1..=most / threads).rev().map(|rounds| rounds * threads);
    whole_rounds.chain((2..threads.min(most + 1)).rev()).collect()
}

/// The parts of the files each key range between `cuts` reads: per range, per run, the
/// parts of its files that may hold keys of the range (empty ones left out).
fn parts_of(zoned: &[Vec<(DataFile, Zones)>], key: usize, cuts: &[ArrayRef]) -> Vec<Vec<Vec<DataFile>>> {
    let ranges: Vec<Arc<KeyRange>> = (0..=cuts.len())
        .map(|i| {
            let lower = i.checked_sub(1).map(|i| cuts[i].clone());
            Arc::new(KeyRange { column: key, lower, upper: cuts.get(i).cloned() })
        })
        .collect();
    let mut slices: Vec<Vec<Vec<DataFile>>> = vec![Vec::new(); ranges.len()];
    for files in zoned {
        let mut runs: Vec<Vec<DataFile>> = vec![Vec::new(); ranges.len()];
        for (file, zones) in files {
            for (run, parts) in runs.iter_mut().zip(zones.parts(file, &ranges)) {
                run.extend(parts);
            }
        }
        for (slice, run) in slices.iter_mut().zip(runs) {
            if !run.is_empty() {
                slice.push(run);
            }
        }
    }
    slices.retain(|slice| !slice.is_empty());
    slices
}

/// The uncompressed size of a file's data (all its columns).
fn decoded_bytes(file: &DataFile) -> u64 {
    let metadata = file.metadata.as_ref().map(|m| m.metadata());
    metadata.map_or(0, |m| m.row_groups().iter().map(|g| g.total_byte_size() as u64).sum())
}

/// Rows a part of a file decodes (before deletions). Zones two ranges share count for
/// both: decoded once, but on one thread while the other may wait, and held for the other.
pub(crate) fn part_rows(part: &DataFile) -> u64 {
    match &part.rows {
        Some(rows) => rows.end - rows.start,
        None => part.metadata.as_ref().map_or(0, |m| m.metadata().file_metadata().num_rows() as u64),
    }
}

/// The zones of each file, its footer read into it (`None`: some file cannot be cut).
fn zone_runs(runs: &mut [Vec<DataFile>], key_type: &DataType, key: usize) -> Option<Vec<Vec<Zones>>> {
    runs.iter_mut()
        .map(|files| files.iter_mut().map(|file| zones_of(file, key_type, key)).collect())
        .collect()
}

/// A whole local file's zones, its footer read into it (`None`: it cannot be cut).
fn zones_of(file: &mut DataFile, key_type: &DataType, key: usize) -> Option<Zones> {
    if file.fetch.is_some() || file.rows.is_some() || file.keys.is_some() {
        return None;
    }
    if file.metadata.is_none() {
        file.metadata = Some(footer(file)?);
    }
    let metadata = file.metadata.as_ref()?;
    Zones::of(metadata, file.columns[key].as_deref()?, key_type)
}

/// A local file's footer with its page index: from the file's cache if it has one.
fn footer(file: &DataFile) -> Option<ArrowReaderMetadata> {
    let handle = File::open(&file.path).ok()?;
    let id = file.cache.as_ref().and_then(|_| FileId::of(&file.path, &handle));
    let load = || -> Result<ArrowReaderMetadata> {
        ArrowReaderMetadata::load(&Counted::new(handle, file.counters.clone()), with_page_index())
            .map_err(|e| crate::error::MergeError::CorruptTable(e.to_string()))
    };
    match (&file.cache, id) {
        (Some(cache), Some(id)) => cache.footer(&id, load).ok(),
        _ => load().ok(),
    }
}

/// The runs of one merge narrowed to the keys of `range` (a filter's): of each file, the
/// zones that may hold them, trimmed to the range as they decode; a file with no such
/// zone is left out, and a run left with no file. A file that cannot be cut is read
/// whole and trimmed. All versions of a key share its first column, so every wanted key
/// keeps all its versions.
pub(crate) fn narrow_runs(
    schema: &SchemaRef,
    runs: Vec<Vec<DataFile>>,
    range: &Arc<KeyRange>,
) -> Vec<Vec<DataFile>> {
    let key_type = schema.field(range.column).data_type();
    let of_key_type = |bound: &Option<ArrayRef>| bound.as_ref().is_none_or(|b| b.data_type() == key_type);
    if !sliceable(key_type) || !of_key_type(&range.lower) || !of_key_type(&range.upper) {
        return runs; // statistics that may not order as keys do, or bounds of another type
    }
    let ranges = [range.clone()];
    let narrow = |mut file: DataFile| match zones_of(&mut file, key_type, range.column) {
        Some(zones) => zones.parts(&file, &ranges).pop().unwrap_or_default(),
        None => vec![DataFile { keys: Some(range.clone()), ..file }],
    };
    let narrow = |file: DataFile| narrow(file).into_iter().map(|part| DataFile { keys_first: true, ..part });
    runs.into_iter()
        .map(|files| files.into_iter().flat_map(narrow).collect::<Vec<_>>())
        .filter(|files| !files.is_empty())
        .collect()
}

/// Consecutive rows of a file with known bounds of the first key column: its pages, or
/// its row groups.
struct Zones {
    mins: ArrayRef,
    maxes: ArrayRef,
    /// Where each zone ends (a row position), ascending.
    ends: Vec<u64>,
}

impl Zones {
    /// The zones of a file whose first key column is `column`, read as `key_type`.
    fn of(metadata: &ArrowReaderMetadata, column: &str, key_type: &DataType) -> Option<Self> {
        let converter = StatisticsConverter::try_new(column, metadata.schema(), metadata.parquet_schema())
            .ok()?
            .with_missing_null_counts_as_zero(false);
        let parquet = metadata.metadata();
        let groups: Vec<usize> = (0..parquet.num_row_groups()).collect();
        let pages = parquet.page_index().and_then(|index| {
            let index = index.as_ref();
            let stats = (
                converter.data_page_mins(index, &groups).ok()?,
                converter.data_page_maxes(index, &groups).ok()?,
                converter.data_page_null_counts(index, &groups).ok()?,
                converter.data_page_row_counts(index, parquet.row_groups(), &groups).ok()??,
            );
            Self::checked(stats, key_type)
        });
        pages
            .or_else(|| {
                let row_groups = parquet.row_groups();
                let stats = (
                    converter.row_group_mins(row_groups).ok()?,
                    converter.row_group_maxes(row_groups).ok()?,
                    converter.row_group_null_counts(row_groups).ok()?,
                    converter.row_group_row_counts(row_groups).ok()??,
                );
                Self::checked(stats, key_type)
            })
            .filter(|zones| zones.rows() == parquet.file_metadata().num_rows() as u64)
    }

    /// Zones from statistics that give every zone's bounds and no nulls.
    fn checked(
        (mins, maxes, nulls, rows): (ArrayRef, ArrayRef, UInt64Array, UInt64Array),
        key_type: &DataType,
    ) -> Option<Self> {
        let complete = |a: &dyn Array| a.null_count() == 0 && a.len() == rows.len();
        if !complete(&mins) || !complete(&maxes) || !complete(&nulls) || rows.null_count() > 0 {
            return None;
        }
        if nulls.values().iter().any(|&n| n > 0) {
            return None;
        }
        let cast = |a: ArrayRef| match a.data_type() == key_type {
            true => Some(a),
            false => arrow_cast::cast(&a, key_type).ok(),
        };
        let ends = rows.values().iter().scan(0, |end, &n| Some(*end + n).inspect(|e| *end = *e)).collect();
        Some(Self { mins: cast(mins)?, maxes: cast(maxes)?, ends })
    }

    fn rows(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// The parts of `file` each of `ranges` (consecutive, ascending) reads, in order:
    /// the zones that may hold keys of the range. Zones a cut falls in are shared by the
    /// ranges on its two sides (see [`SharedZones`]): the part of the range above starts
    /// with them, and the range below has them as a part of their own, its last (taken
    /// as its read starts, its rows output after the rest).
    fn parts(&self, file: &DataFile, ranges: &[Arc<KeyRange>]) -> Vec<Vec<DataFile>> {
        let spans: Vec<Option<Range<usize>>> = ranges.iter().map(|range| self.span(range)).collect();
        // shared[c]: the zones both sides of cut c need, when none of them holds a key of
        // a third range.
        let shared: Vec<Option<(Range<usize>, Arc<SharedZones>)>> = (1..ranges.len())
            .map(|above| {
                let below = above - 1;
                let zones = spans[above].as_ref()?.start..spans[below].as_ref()?.end;
                if zones.is_empty() || !self.within(&zones, &ranges[below].lower, &ranges[above].upper) {
                    return None;
                }
                let cut = ranges[below].upper.clone().expect("a range below a cut ends at it");
                Some((
                    zones.clone(),
                    Arc::new(SharedZones::new(cut, ranges[above].column, self.rows_of(&zones))),
                ))
            })
            .collect();
        let part = |zones: Range<usize>, range: &Arc<KeyRange>, shared: Option<(&Arc<SharedZones>, Side)>| {
            let rows = self.rows_of(&zones);
            let whole = shared.is_none() && rows == (0..self.rows());
            let shared = shared.map(|(zones, side)| (zones.clone(), side));
            DataFile { rows: (!whole).then_some(rows), keys: Some(range.clone()), shared, ..file.clone() }
        };
        let mut parts = Vec::with_capacity(ranges.len());
        for (i, span) in spans.iter().enumerate() {
            let mut range_parts = Vec::new();
            if let Some(span) = span {
                // The zones shared at the range's lower cut, and at its upper one.
                let at_lower = i.checked_sub(1).and_then(|cut| shared[cut].as_ref());
                let at_upper = shared.get(i).and_then(Option::as_ref);
                let end = at_upper.map_or(span.end, |(zones, _)| zones.start);
                if span.start < end {
                    let starts_shared = at_lower.map(|(_, zones)| (zones, Side::Above));
                    range_parts.push(part(span.start..end, &ranges[i], starts_shared));
                }
                if let Some((zones, shared)) = at_upper {
                    range_parts.push(part(zones.clone(), &ranges[i], Some((shared, Side::Below))));
                }
            }
            parts.push(range_parts);
        }
        parts
    }

    /// The rows of a file that `zones` hold.
    fn rows_of(&self, zones: &Range<usize>) -> Range<u64> {
        let start = if zones.start == 0 { 0 } else { self.ends[zones.start - 1] };
        start..self.ends[zones.end - 1]
    }

    /// The zones that may hold keys of `range`: from the first whose greatest value
    /// reaches the range to the last whose least value is below its end.
    fn span(&self, range: &KeyRange) -> Option<Range<usize>> {
        let zones = self.ends.len();
        let first = match &range.lower {
            Some(lower) => {
                let compare = comparator(self.maxes.as_ref(), lower.as_ref()).ok()?;
                (0..zones).find(|&z| compare(z, 0) != Ordering::Less)?
            }
            None => 0,
        };
        let end = match &range.upper {
            Some(upper) => {
                let compare = comparator(self.mins.as_ref(), upper.as_ref()).ok()?;
                (0..zones).rposition(|z| compare(z, 0) == Ordering::Less)? + 1
            }
            None => zones,
        };
        (first < end).then_some(first..end)
    }

    /// Whether every key of `zones` is at least `lower` and below `upper` (`None`: unbounded).
    fn within(&self, zones: &Range<usize>, lower: &Option<ArrayRef>, upper: &Option<ArrayRef>) -> bool {
        let holds = |values: &ArrayRef, bound: &Option<ArrayRef>, keep: fn(Ordering) -> bool| match bound {
            None => true,
            Some(bound) => comparator(values.as_ref(), bound.as_ref())
                .is_ok_and(|compare| zones.clone().all(|z| keep(compare(z, 0)))),
        };
        holds(&self.mins, lower, |o| o != Ordering::Less)
            && holds(&self.maxes, upper, |o| o == Ordering::Less)
    }
}

/// The rows of all zones of a merge below each zone's least value, once for any number
/// of slices: the cuts are taken among those least values.
struct CutCandidates {
    /// The zones' least values, file by file.
    mins: ArrayRef,
    /// Per distinct least value, ascending (the smallest left out: nothing lies below
    /// it): its zone, and about how many rows lie below it.
    candidates: Vec<(usize, f64)>,
    /// The rows of all zones.
    total: u64,
}

impl CutCandidates {
    fn of(zoned: &[Vec<(DataFile, Zones)>]) -> Result<Self> {
        let all: Vec<&Zones> = zoned.iter().flatten().map(|(_, zones)| zones).collect();
        let concat = |arrays: Vec<&dyn Array>| arrow_select::concat::concat(&arrays);
        let mins = concat(all.iter().map(|z| z.mins.as_ref()).collect())?;
        let maxes = concat(all.iter().map(|z| z.maxes.as_ref()).collect())?;
        let rows: Vec<u64> = all
            .iter()
            .flat_map(|z| z.ends.iter().scan(0, |start, &end| Some(end - std::mem::replace(start, end))))
            .collect();
        let min_vs_min = comparator(mins.as_ref(), mins.as_ref())?;
        let max_vs_max = comparator(maxes.as_ref(), maxes.as_ref())?;
        let max_vs_min = comparator(maxes.as_ref(), mins.as_ref())?;
        let ascending = |compare: &arrow_ord::ord::DynComparator| {
            let mut order: Vec<usize> = (0..rows.len()).collect();
            order.sort_by(|&a, &b| compare(a, b));
            order
        };
        let (by_min, by_max) = (ascending(&min_vs_min), ascending(&max_vs_max));
        // A zone lies wholly below a value above its greatest one, and about half below
        // one between its least and greatest: the rows below a value are the mean of
        // the rows of zones whose least value is below it and of those whose greatest is.
        let (mut least_below, mut greatest_below, mut maxes_seen) = (0u64, 0u64, 0);
        let mut candidates = Vec::new();
        for (position, &zone) in by_min.iter().enumerate() {
            if position > 0 && min_vs_min(by_min[position - 1], zone) == Ordering::Less {
                while maxes_seen < by_max.len() && max_vs_min(by_max[maxes_seen], zone) == Ordering::Less {
                    greatest_below += rows[by_max[maxes_seen]];
                    maxes_seen += 1;
                }
                candidates.push((zone, (least_below + greatest_below) as f64 / 2.0));
            }
            least_below += rows[zone];
        }
        Ok(Self { mins, candidates, total: rows.iter().sum() })
    }

    /// Up to `slices - 1` cuts, ascending and distinct, that share the zones' rows out
    /// about evenly: each the first least value with at least its share of the rows
    /// below, a share the cut before already covers left out (fewer, larger slices
    /// rather than a near-empty one).
    fn cuts(&self, slices: usize) -> Vec<ArrayRef> {
        let mut candidates = self.candidates.iter();
        let mut cuts = Vec::new();
        let mut covered = 0.0;
        for share in 1..slices {
            let target = (self.total * share as u64) as f64 / slices as f64;
            if covered >= target {
                continue;
            }
            match candidates.find(|(_, below)| *below >= target) {
                Some(&(zone, below)) => {
                    cuts.push(self.mins.slice(zone, 1));
                    covered = below;
                }
                None => break,
            }
        }
        cuts
    }
}
