//! Comparable key values: the one place where two rows' keys are compared.
//!
//! A run cursor turns the key columns of each incoming batch into a [`KeyValues`] with a
//! [`KeyEncoder`]; the merge engines then compare `(values, row)` pairs and nothing else.
//! One key column of a primitive, string or binary type gets a specialised fast path;
//! anything else (composite keys included) goes through arrow's row format, whose byte
//! order equals the column-by-column order of the contract.
//!
//! [`dispatch`] picks the encoder from the key's data types once, so that the engines
//! are compiled per key representation and the inner loop never branches on a type.

mod bytes;
mod primitive;
mod rows;

use std::cmp::Ordering;

use arrow_array::ArrayRef;
use arrow_schema::DataType;

use crate::error::Result;

pub(crate) use bytes::{ByteEncoder, FixedEncoder, ViewEncoder};
pub(crate) use primitive::{native_values as primitive_values, PrimitiveEncoder};
pub(crate) use rows::RowEncoder;

/// The keys of one batch, in a form that compares fast.
pub(crate) trait KeyValues: Send + 'static {
    /// Number of rows.
    fn len(&self) -> usize;
    /// Compares row `i` of `self` with row `j` of `other` in the contract's key order.
    fn compare(&self, i: usize, other: &Self, j: usize) -> Ordering;
    /// Row `i`'s key squeezed into an order-preserving integer: when two digests differ,
    /// the keys compare as the digests do. Lets the merge engines settle most
    /// comparisons on one integer kept beside the tree, without touching the batch.
    fn digest(&self, i: usize) -> u64;
    /// Equal digests mean equal keys (keys of at most 64 bits), so a tie needs no
    /// [`Self::compare`] either.
    const DIGEST_IS_KEY: bool = false;
}

/// The first eight bytes of `value` as a big-endian integer, zero-padded. If two
/// prefixes differ, the values compare as their prefixes do: the first differing byte
/// is a real byte of both, or padding (0) of the shorter value, which is a prefix of
/// the longer one up to there and so sorts first.
#[inline]
pub(crate) fn byte_prefix(value: &[u8]) -> u64 {
    let mut head = [0u8; 8];
    let n = value.len().min(8);
    head[..n].copy_from_slice(&value[..n]);
    u64::from_be_bytes(head)
}

/// Builds [`KeyValues`] from a batch's key columns; shared by all runs of one merge so
/// that keys of different runs are comparable.
pub(crate) trait KeyEncoder: Send + Sync + 'static {
    /// What this encoder produces.
    type Values: KeyValues;
    /// Encodes the key columns (already checked to hold no nulls).
    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values>;
}

/// A computation to run with the encoder chosen for some key types; lets callers be
/// generic over the key representation without naming it.
pub(crate) trait KeyVisitor {
    type Output;
    fn visit<E: KeyEncoder>(self, encoder: E) -> Self::Output;
}

/// Calls `visitor` with the fastest encoder for keys of `types`.
pub(crate) fn dispatch<V: KeyVisitor>(types: &[DataType], visitor: V) -> Result<V::Output> {
    use DataType::*;
    if let [single] = types {
        let out = match single {
            Int8 => visitor.visit(PrimitiveEncoder::<i8>::new()),
            Int16 => visitor.visit(PrimitiveEncoder::<i16>::new()),
            Int32 | Date32 | Time32(_) => visitor.visit(PrimitiveEncoder::<i32>::new()),
            Int64 | Date64 | Time64(_) | Timestamp(_, _) | Duration(_) => {
                visitor.visit(PrimitiveEncoder::<i64>::new())
            }
            UInt8 => visitor.visit(PrimitiveEncoder::<u8>::new()),
            UInt16 => visitor.visit(PrimitiveEncoder::<u16>::new()),
            UInt32 => visitor.visit(PrimitiveEncoder::<u32>::new()),
            UInt64 => visitor.visit(PrimitiveEncoder::<u64>::new()),
            Float32 => visitor.visit(PrimitiveEncoder::<f32>::new()),
            Float64 => visitor.visit(PrimitiveEncoder::<f64>::new()),
            Decimal128(_, _) => visitor.visit(PrimitiveEncoder::<i128>::new()),
            Utf8 | Binary => visitor.visit(ByteEncoder::<i32>::new()),
            LargeUtf8 | LargeBinary => visitor.visit(ByteEncoder::<i64>::new()),
            Utf8View | BinaryView => visitor.visit(ViewEncoder),
            FixedSizeBinary(_) => visitor.visit(FixedEncoder),
            _ => visitor.visit(RowEncoder::new(types)?),
        };
        return Ok(out);
    }
    Ok(visitor.visit(RowEncoder::new(types)?))
}
