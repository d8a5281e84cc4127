//! Keys of one fixed-width column (integers, floats, decimals, dates, times, timestamps).
//!
//! Floats compare as Paimon's Java compares them (`Double.compare`, `Float.compare`):
//! `-0.0 < 0.0`, every NaN equal to every other and above `+inf`. That is IEEE 754's
//! total order once each NaN is replaced by the one NaN Java's `doubleToLongBits` gives
//! ([`Digest::canonical`]): total order alone would put a NaN with its sign bit set below
//! `-inf` and tell NaNs of different payloads apart.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::marker::PhantomData;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType};
use arrow_buffer::ScalarBuffer;
use arrow_schema::DataType;

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
        // `ArrowNativeTypeOp::compare` is the IEEE total order for floats: Java's order
        // once NaNs are canonical.
        a.canonical().compare(b.canonical())
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
    /// The mapping is one to one (on canonical values).
    const EXACT: bool;
    fn digest(self) -> u64;
    /// The value as Java's comparison sees it: for floats, every NaN as the canonical
    /// quiet NaN (`0x7ff8…`, Rust's `NAN` as Java's `doubleToLongBits` makes it); others
    /// as they are.
    #[inline]
    fn canonical(self) -> Self {
        self
    }
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
// signed integer of their IEEE total order (the order `compare` uses), as `total_cmp` does,
// after their NaN is made canonical.
digest! {
    i8 => |v| v as i64 as u64 ^ SIGN, true;
    i16 => |v| v as i64 as u64 ^ SIGN, true;
    i32 => |v| v as i64 as u64 ^ SIGN, true;
    i64 => |v| v as u64 ^ SIGN, true;
    u8 => |v| v.into(), true;
    u16 => |v| v.into(), true;
    u32 => |v| v.into(), true;
    u64 => |v| v, true;
    i128 => |v| (v >> 64) as i64 as u64 ^ SIGN, false;
}

macro_rules! float_digest {
    ($($t:ty => $signed:ty, $unsigned:ty);* $(;)?) => {
        $(impl Digest for $t {
            const EXACT: bool = true;
            #[inline]
            fn digest(self) -> u64 {
                let bits = self.canonical().to_bits() as $signed;
                let shift = <$signed>::BITS - 1;
                (bits ^ (((bits >> shift) as $unsigned) >> 1) as $signed) as i64 as u64 ^ SIGN
            }
            #[inline]
            fn canonical(self) -> Self {
                if self.is_nan() {
                    <$t>::NAN
                } else {
                    self
                }
            }
        })*
    };
}

float_digest! {
    f32 => i32, u32;
    f64 => i64, u64;
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

/// `columns` with every NaN of a float column made canonical ([`Digest::canonical`]): the
/// row format orders floats by IEEE's total order, which is Java's order once NaNs are
/// canonical. A column without a NaN to change (nearly always) is not copied.
pub(crate) fn canonical_nans(columns: &[ArrayRef]) -> Cow<'_, [ArrayRef]> {
    let changed: Vec<Option<ArrayRef>> = columns.iter().map(canonical_column).collect();
    if changed.iter().all(Option::is_none) {
        return Cow::Borrowed(columns);
    }
    let keep = |(new, old): (Option<ArrayRef>, &ArrayRef)| new.unwrap_or_else(|| old.clone());
    Cow::Owned(changed.into_iter().zip(columns).map(keep).collect())
}

/// The column with its NaNs made canonical, if it is a float column with a NaN to change.
fn canonical_column(column: &ArrayRef) -> Option<ArrayRef> {
    match column.data_type() {
        DataType::Float32 => canonical_floats::<Float32Type>(column),
        DataType::Float64 => canonical_floats::<Float64Type>(column),
        _ => None,
    }
}

fn canonical_floats<T: ArrowPrimitiveType>(column: &ArrayRef) -> Option<ArrayRef>
where
    T::Native: Digest,
{
    let array = column.as_primitive::<T>();
    // `compare` tells NaNs apart by their bits: only a NaN that is not canonical differs.
    if array.values().iter().all(|&v| v.canonical().compare(v).is_eq()) {
        return None;
    }
    Some(Arc::new(array.unary::<_, T>(Digest::canonical)))
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Java's `Double.compare`, transcribed: `<` and `>` first, then the bits that
    /// `doubleToLongBits` gives (every NaN as `0x7ff8…`) as signed integers.
    pub(crate) fn java_compare_f64(a: f64, b: f64) -> Ordering {
        if a < b {
            return Ordering::Less;
        }
        if a > b {
            return Ordering::Greater;
        }
        let bits = |v: f64| if v.is_nan() { 0x7ff8_0000_0000_0000 } else { v.to_bits() as i64 };
        bits(a).cmp(&bits(b))
    }

    /// Java's `Float.compare`, transcribed likewise (`floatToIntBits`: NaN as `0x7fc0_0000`).
    fn java_compare_f32(a: f32, b: f32) -> Ordering {
        if a < b {
            return Ordering::Less;
        }
        if a > b {
            return Ordering::Greater;
        }
        let bits = |v: f32| if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() as i32 };
        bits(a).cmp(&bits(b))
    }

    /// Differing digests order two values as `compare` does, and an exact digest is
    /// equal only for equal values.
    fn digest_keeps_order<N: Digest>(a: N, b: N) -> Result<(), TestCaseError> {
        let keys = PrimitiveKeys(ScalarBuffer::from(vec![a, b]));
        let order = keys.compare(0, &keys, 1);
        let (da, db) = (a.digest(), b.digest());
        if da != db {
            prop_assert_eq!(da.cmp(&db), order, "{:?} vs {:?}", a, b);
        } else if N::EXACT {
            prop_assert_eq!(order, Ordering::Equal, "{:?} vs {:?}", a, b);
        }
        Ok(())
    }

    /// Doubles with every special value: both zeros, both infinities, NaNs of either
    /// sign, quiet and signalling, with payloads.
    pub(crate) fn float() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            prop::sample::select(vec![
                0.0,
                -0.0,
                1.0,
                -1.0,
                f64::NAN,
                -f64::NAN,
                f64::from_bits(0x7ff0_0000_0000_0001),
                f64::from_bits(0xfff0_0000_dead_beef),
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN_POSITIVE,
                f64::MAX,
            ]),
        ]
    }

    /// An `f32` of every kind, NaN payloads included (a cast from `f64` keeps only some).
    fn float32() -> impl Strategy<Value = f32> {
        prop_oneof![
            float().prop_map(|v| v as f32),
            prop::sample::select(vec![f32::from_bits(0x7f80_0001), f32::from_bits(0xffc0_1234), -f32::NAN]),
        ]
    }

    #[test]
    fn nans_are_one_key_above_infinity_and_zeros_two() {
        let keys = PrimitiveKeys(ScalarBuffer::from(vec![-f64::NAN, f64::INFINITY, -0.0, 0.0, f64::NAN]));
        assert_eq!(keys.compare(0, &keys, 4), Ordering::Equal);
        assert_eq!(keys.compare(0, &keys, 1), Ordering::Greater);
        assert_eq!(keys.compare(2, &keys, 3), Ordering::Less);
    }

    #[test]
    fn canonical_nans_copies_only_a_column_with_an_odd_nan() {
        let plain: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.0, f64::NAN, -0.0]));
        let odd: ArrayRef = Arc::new(arrow_array::Float32Array::from(vec![-f32::NAN, 2.0]));
        let columns = [plain.clone(), odd];
        let out = canonical_nans(&columns);
        assert!(matches!(out, Cow::Owned(_)) && Arc::ptr_eq(&out[0], &plain));
        assert_eq!(out[1].as_primitive::<Float32Type>().value(0).to_bits(), f32::NAN.to_bits());
        assert_eq!(out[1].as_primitive::<Float32Type>().value(1), 2.0);
        assert!(matches!(canonical_nans(std::slice::from_ref(&plain)), Cow::Borrowed(_)));
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
        fn float_digests(a in float(), b in float(), c in float32(), d in float32()) {
            digest_keeps_order(a, b)?;
            digest_keeps_order(c, d)?;
        }

        /// Float keys compare as Java's `Double.compare` and `Float.compare` do.
        #[test]
        fn floats_compare_as_java(a in float(), b in float(), c in float32(), d in float32()) {
            let doubles = PrimitiveKeys(ScalarBuffer::from(vec![a, b]));
            prop_assert_eq!(doubles.compare(0, &doubles, 1), java_compare_f64(a, b), "{:?} vs {:?}", a, b);
            let floats = PrimitiveKeys(ScalarBuffer::from(vec![c, d]));
            prop_assert_eq!(floats.compare(0, &floats, 1), java_compare_f32(c, d), "{:?} vs {:?}", c, d);
        }
    }
}
