//! Unit and property tests of the merge, against a naive reference.

mod errors;
mod merge_props;
mod reference;
