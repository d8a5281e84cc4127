//! Paimon's system columns: the columns a data file of a primary-key table holds beside
//! the table's own, named as Paimon's writers name them. A read orders and classifies
//! the versions of a key by the first two.

/// Each version's sequence number, ascending with the order the versions were written.
pub const SEQUENCE_NUMBER: &str = "_SEQUENCE_NUMBER";

/// Each version's row kind, as its byte code (see [`crate::RowKind`]).
pub const VALUE_KIND: &str = "_VALUE_KIND";

/// The prefix of the copies of the key columns a data file starts with (`_KEY_id` for
/// the key column `id`).
pub const KEY_PREFIX: &str = "_KEY_";
