//! The read of a table: the sections a plan chose (each the runs of one merge, as
//! Parquet data files) merged on worker threads, their outputs following one another.
//!
//! - [`files`]: data files decoded as runs (only the columns and rows the read needs);
//! - `key_range`: the keys a slice reads, by their first column;
//! - [`slices`]: a section cut into key ranges, so that one bucket merges on every thread;
//! - [`groups`]: the independent merges (sections, slices) read as one stream;
//! - [`prefetch`]: runs decoded ahead, beside the merge;
//! - `workers`: the threads that run merges and decoding, kept for the next job.

pub mod files;
pub mod groups;
mod key_range;
pub mod prefetch;
pub mod slices;
mod workers;
