//! The merge of sorted runs, key by key: the runs read through cursors, their batches
//! stored while rows of them are pending, the versions of a key ordered, the output
//! batches built, all composed into the stream [`stream::merge`] returns. The engines
//! that pick the next key ([`crate::engine`]) and the merge functions that fold its
//! versions ([`crate::fold`]) have folders of their own.
//!
//! - `run`: cursors that read, check and step through each run;
//! - `version`: the version order of a key's rows and Paimon's row kinds;
//! - `store`: the batches the cursors and pending output rows stand in;
//! - `plan`: what a merge decides before it reads a row;
//! - `builder`: output batches gathered with `interleave`;
//! - `stream`: the public [`stream::merge`] tying them together.

pub(crate) mod builder;
pub(crate) mod plan;
pub(crate) mod run;
pub(crate) mod store;
pub(crate) mod stream;
pub(crate) mod version;
