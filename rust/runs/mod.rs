//! Sorted runs and their rows, the room every merge stands on: cursors that read, check
//! and step through each run, the batches its rows stand in, the version order of a
//! key's rows with Paimon's row kinds, and single values read from columns. The engines
//! ([`crate::engine`]) and the merge functions ([`crate::fold`]) are built on it; the
//! merge ([`crate::merge`]) composes the three.
//!
//! - `cursor`: the runs and their cursors ([`Run`], `Runs`, `Group`, `Layout`);
//! - `store`: the batches the cursors and pending output rows stand in;
//! - `version`: the version order of a key's rows and Paimon's row kinds;
//! - `value`: single values read from columns, for the aggregates and the store.

mod cursor;
pub(crate) mod store;
pub(crate) mod value;
pub(crate) mod version;

pub(crate) use cursor::{check_batch_schema, Group, Layout, Runs};
pub use cursor::{BatchIter, Run};
