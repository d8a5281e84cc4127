//! The merge of sorted runs, key by key: what a merge decides before it reads a row
//! (`plan`), and the stream [`stream::merge`] returns, which composes the runs' cursors
//! ([`crate::runs`]), an engine picking the next key ([`crate::engine`]) and a merge
//! function folding its versions into the output builder ([`crate::fold`]).

pub(crate) mod plan;
pub(crate) mod stream;
