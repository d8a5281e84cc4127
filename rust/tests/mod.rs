//! Unit and property tests of the merge, against a naive reference.

mod byte_keys;
mod errors;
mod fold_paths;
mod merge_props;
mod read;
mod reference;
mod retracts;
mod slices;
