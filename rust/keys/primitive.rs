//! Keys of one fixed-width column (integers, floats, decimals, dates, times, timestamps).

use std::cmp::Ordering;
use std::marker::PhantomData;

use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp};
use arrow_buffer::ScalarBuffer;

use super::{KeyEncoder, KeyValues};
use crate::error::Result;

/// The values buffer of one primitive column, reinterpreted as its native type `N`
/// (a date32 column as `i32`, a timestamp as `i64`, a decimal128 as `i128`).
pub(crate) struct PrimitiveKeys<N: ArrowNativeTypeOp>(ScalarBuffer<N>);

impl<N: Digest> KeyValues for PrimitiveKeys<N> {
    fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn compare(&self, i: usize, other: &Self, j: usize) -> Ordering {
        debug_assert!(i < self.0.len() && j < other.0.len());
        // SAFETY: cursors only compare their current row, which is below the batch length
        // (`Runs::advance` moves to the next batch when the position reaches it).
        let (a, b) = unsafe { (*self.0.get_unchecked(i), *other.0.get_unchecked(j)) };
        // `ArrowNativeTypeOp::compare` is the IEEE total order for floats.
        a.compare(b)
    }

    #[inline]
    fn digest(&self, i: usize) -> u64 {
        self.0[i].digest()
    }

    #[inline]
    fn tie_is_equal(_digest: u64) -> bool {
        N::EXACT
    }
}

/// A native key type mapped to a `u64` of the same order (the top half, for `i128`).
pub(crate) trait Digest: ArrowNativeTypeOp {
    /// The mapping is one to one.
    const EXACT: bool;
    fn digest(self) -> u64;
}

const SIGN: u64 = 1 << 63;

macro_rules! digest {
    ($($t:ty => |$v:ident| $body:expr, $exact:expr);* $(;)?) => {
        $(impl Digest for $t {
            const EXACT: bool = $exact;
            #[inline]
            fn digest(self) -> u64 {
                let $v = self;
                $body
            }
        })*
    };
}

// Signed values flip the sign bit so that negatives sort first. Floats first become the
// signed integer of their IEEE total order (the order `compare` uses), as `total_cmp` does.
digest! {
    i8 => |v| v as i64 as u64 ^ SIGN, true;
    i16 => |v| v as i64 as u64 ^ SIGN, true;
    i32 => |v| v as i64 as u64 ^ SIGN, true;
    i64 => |v| v as u64 ^ SIGN, true;
    u8 => |v| v.into(), true;
    u16 => |v| v.into(), true;
    u32 => |v| v.into(), true;
    u64 => |v| v, true;
    f32 => |v| {
        let bits = v.to_bits() as i32;
        (bits ^ (((bits >> 31) as u32) >> 1) as i32) as i64 as u64 ^ SIGN
    }, true;
    f64 => |v| {
        let bits = v.to_bits() as i64;
        (bits ^ (((bits >> 63) as u64) >> 1) as i64) as u64 ^ SIGN
    }, true;
    i128 => |v| (v >> 64) as i64 as u64 ^ SIGN, false;
}

pub(crate) struct PrimitiveEncoder<N>(PhantomData<fn() -> N>);

impl<N> PrimitiveEncoder<N> {
    pub(crate) fn new() -> Self {
        Self(PhantomData)
    }
}

impl<N: Digest> KeyEncoder for PrimitiveEncoder<N> {
    type Values = PrimitiveKeys<N>;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        Ok(PrimitiveKeys(native_values::<N>(columns[0].as_ref())))
    }
}

/// The values of a fixed-width array as `N`, without copying; `N` must have the array's
/// byte width (the caller's dispatch on the data type guarantees it).
pub(crate) fn native_values<N: ArrowNativeTypeOp>(array: &dyn Array) -> ScalarBuffer<N> {
    let data = array.to_data();
    ScalarBuffer::new(data.buffers()[0].clone(), data.offset(), data.len())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Differing digests order two values as `compare` does, and an exact digest is
    /// equal only for equal values.
    fn digest_keeps_order<N: Digest>(a: N, b: N) -> Result<(), TestCaseError> {
        let (da, db) = (a.digest(), b.digest());
        if da != db {
            prop_assert_eq!(da.cmp(&db), a.compare(b), "{:?} vs {:?}", a, b);
        } else if N::EXACT {
            prop_assert_eq!(a.compare(b), Ordering::Equal, "{:?} vs {:?}", a, b);
        }
        Ok(())
    }

    fn float() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            prop::sample::select(vec![
                0.0,
                -0.0,
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN_POSITIVE
            ]),
        ]
    }

    proptest! {
        #[test]
        fn signed_digests(a in any::<i64>(), b in any::<i64>(), c in any::<i8>(), d in any::<i8>()) {
            digest_keeps_order(a, b)?;
            digest_keeps_order(a as i32, b as i32)?;
            digest_keeps_order(c, d)?;
            digest_keeps_order(i64::MIN, a)?;
        }

        #[test]
        fn unsigned_and_wide_digests(a in any::<u64>(), b in any::<u64>(), x in any::<i128>(), y in any::<i128>()) {
            digest_keeps_order(a, b)?;
            digest_keeps_order(a as u16, b as u16)?;
            digest_keeps_order(x, y)?;
            digest_keeps_order(x, x.wrapping_add(1))?;
        }

        #[test]
        fn float_digests(a in float(), b in float()) {
            digest_keeps_order(a, b)?;
            digest_keeps_order(a as f32, b as f32)?;
        }
    }
}
