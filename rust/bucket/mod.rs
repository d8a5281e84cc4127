//! The bucket of a key, by a hash of its values: a key lives in exactly one bucket, so
//! each bucket's runs merge on their own.
//!
//! - `stable_hash`: merge-core's value-stable hash (`upsert_files` splits its input
//!   files by key with it);
//! - `binary_row`: Paimon's bucket function, the hash of the key as Paimon's
//!   `BinaryRow` (a table's writes send each key to its bucket with it).

mod binary_row;
mod stable_hash;

pub use binary_row::{paimon_bucket_ids, paimon_row_hashes};
pub use stable_hash::bucket_ids;
