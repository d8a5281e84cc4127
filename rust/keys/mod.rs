//! Comparable key values: the one place where two rows' keys are compared.
//!
//! A run cursor turns the key columns of each incoming batch into a [`KeyValues`] with a
//! [`KeyEncoder`]; the merge engines then compare `(values, row)` pairs and nothing else.
//! One key column of a primitive, string or binary type gets a specialised fast path;
//! anything else (composite keys included) goes through arrow's row format, whose byte
//! order equals the column-by-column order of the contract.
//!
//! The order is Paimon's (its Java comparator of each type): floats as `Double.compare`
//! and `Float.compare` order them, every NaN equal and above `+inf`, `-0.0 < 0.0` (see
//! [`canonical_nans`]); strings and binaries by their unsigned bytes.
//!
//! [`dispatch`] picks the encoder from the key's data types once, so that the engines
//! are compiled per key representation and the inner loop never branches on a type.

mod bytes;
pub(crate) mod ovc;
mod primitive;
mod rows;

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use arrow_array::ArrayRef;
use arrow_schema::DataType;

use crate::error::Result;

pub(crate) use bytes::{ByteEncoder, FixedEncoder, ViewEncoder};
pub(crate) use primitive::{canonical_nans, native_values as primitive_values, PrimitiveEncoder};
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
    /// Whether two keys with this same digest are equal, so that the tie needs no
    /// [`Self::compare`]: always for keys of at most 64 bits, and for byte keys whose
    /// bytes past the head all fit in the digest (see [`digest_past`]).
    #[inline]
    fn tie_is_equal(_digest: u64) -> bool {
        false
    }
    /// The cursor stands at row `i` (possibly the last): asks for what the coming rows'
    /// comparisons read (see [`prefetch_line`]).
    #[inline]
    fn prefetch_ahead(&self, _i: usize) {}
    /// Every tie of this batch's digests is settled by [`Self::tie_is_equal`]: no
    /// comparison of its keys reads their bytes.
    #[inline]
    fn digests_settle(&self) -> bool {
        false
    }
    /// The keys are byte strings whose order is the bytes' (shorter first when one is a
    /// prefix of the other), given by [`Self::ordered_bytes`]: the loser tree codes them
    /// by offset and value (see [`ovc`]). Primitive keys are not: their digest is the
    /// whole key and settles every match already.
    const BYTE_ORDERED: bool = false;
    /// Row `i`'s key as those bytes, if [`Self::BYTE_ORDERED`].
    #[inline]
    fn ordered_bytes(&self, _i: usize) -> Option<&[u8]> {
        None
    }
    /// How many leading bytes row `i` and row `j` of `other` are known to share without
    /// reading them (from their digests), so that looking for where they differ may
    /// start there.
    #[inline]
    fn known_shared(&self, _i: usize, _other: &Self, _j: usize) -> usize {
        0
    }
}

/// The first eight bytes of `value` as a big-endian integer, zero-padded. If two
/// prefixes differ, the values compare as their prefixes do: the first differing byte
/// is a real byte of both, or padding (0) of the shorter value, which is a prefix of
/// the longer one up to there and so sorts first.
#[inline]
pub(crate) fn byte_prefix(value: &[u8]) -> u64 {
    let n = value.len();
    if let Some(word) = value.first_chunk::<8>() {
        return u64::from_be_bytes(*word);
    }
    // Fewer than eight bytes, read in two overlapping loads (or three single bytes) that
    // put each byte where it belongs: copying them into a zeroed word and loading that
    // stalls on the store (a tail past a shared head is often this short).
    let top = |byte: u8, at: usize| (byte as u64) << (56 - 8 * at);
    match n {
        0 => 0,
        1..=3 => top(value[0], 0) | top(value[n / 2], n / 2) | top(value[n - 1], n - 1),
        _ => {
            let first = u32::from_be_bytes(value[..4].try_into().expect("4 bytes")) as u64;
            let last = u32::from_be_bytes(value[n - 4..].try_into().expect("4 bytes")) as u64;
            (first << 32) | (last << (64 - 8 * n))
        }
    }
}

/// The bytes every key of a merge is expected to start with, so that digests look past
/// them: keys like `user-000…`, URLs or paths share a long head, and a digest of their
/// first eight bytes would be the same for all of them. Learnt once per encoder, from
/// the first batch it encodes (the longest prefix of all its values, at most
/// [`MAX_HEAD`] bytes), and fixed from then on, so that every digest of the merge is
/// comparable with every other. A first batch of a sorted run spans less of the key
/// range than the merge, so its head may be longer than what all keys share: the
/// digest of a key that leaves the head early says where it leaves (see [`digest_past`]).
#[derive(Default)]
pub(crate) struct SharedHead(OnceLock<Arc<[u8]>>);

/// The longest head kept: positions within it fit the digest's 14 bits.
pub(crate) const MAX_HEAD: usize = (1 << 14) - 1;

impl SharedHead {
    /// The head, learnt from `values` (one batch's keys) if none was learnt yet. A batch
    /// of fewer than two values says nothing of what keys share: the head stays empty.
    pub(crate) fn learn<'a>(&self, mut values: impl Iterator<Item = &'a [u8]>) -> &Arc<[u8]> {
        self.0.get_or_init(|| {
            let Some(first) = values.next() else { return Arc::default() };
            let first = &first[..first.len().min(MAX_HEAD)];
            let mut common = None;
            for value in values {
                common = Some(common_prefix_len(&first[..common.unwrap_or(first.len())], value));
            }
            first[..common.unwrap_or(0)].into()
        })
    }
}

/// Bytes of a cache line.
const LINE: usize = 64;

/// Asks the CPU to bring the cache line holding `items[index]` in ahead of use. A merge
/// reads each run's arrays in order but a row at a time across many runs, more streams
/// than the hardware prefetcher follows, and encoding long keys reads every key byte
/// once; with these hints neither waits on memory as much (measured 2026-11-26: the
/// contest table read 9-11% less CPU, the merge order of 128-byte keys 6-11% less
/// time). A hint only: nothing is read, and an index past the end is allowed.
#[inline(always)]
pub(crate) fn prefetch_line<T>(items: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let line = items.as_ptr().wrapping_add(index) as *const i8;
        // SAFETY: the address need not be in bounds (`wrapping_add` makes it without
        // reading): a prefetch never faults and has no effect the program can observe.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, index);
}

/// [`prefetch_line`] for the two lines from `bytes[at..]`: a key's bytes may straddle them.
#[inline(always)]
pub(crate) fn prefetch_two_lines(bytes: &[u8], at: usize) {
    prefetch_line(bytes, at);
    prefetch_line(bytes, at + LINE);
}

/// How many items of type `T` fill a cache line: asking for the item that many ahead
/// brings in the next line while the current one is read.
pub(crate) const fn per_line<T>() -> usize {
    LINE / size_of::<T>()
}

/// Length of the longest common prefix of `a` and `b`, compared a word at a time.
pub(crate) fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    // The usual case for long shared heads: one memcmp. Short ones (often none at all,
    // for hashes and UUIDs) are cheaper compared inline than through a call.
    if n >= 16 && a == b {
        return n;
    }
    let mut at = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let diff = u64::from_le_bytes(x.try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(y.try_into().expect("8 bytes"));
        if diff != 0 {
            return at + diff.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    at + a[at..].iter().zip(&b[at..]).take_while(|(x, y)| x == y).count()
}

/// An order-preserving digest of `value` given the merge's shared `head`. The top two
/// bits are the band: the value starts with the head (1), or sorts before (0) or after
/// (2) every value that does. In band 1 the other bits are the tail after the head, see
/// [`tail_digest`]. Outside it they are the position `p` where the value leaves the head
/// (14 bits) and then 48 bits of the value from `p` on: below the head, a later
/// departure is a greater value; above it, an earlier one is.
#[inline]
pub(crate) fn digest_past(head: &[u8], value: &[u8]) -> u64 {
    let p = common_prefix_len(head, value);
    if p == head.len() {
        return HEAD_BAND | tail_digest(&value[p..]);
    }
    let from_p = byte_prefix(&value[p..]) >> 16;
    // `value` leaves the head at `p`: it ends there or its byte there is the smaller one.
    if value.get(p).is_none_or(|&byte| byte < head[p]) {
        ((p as u64) << 48) | from_p
    } else {
        (2 << 62) | (((head.len() - p) as u64) << 48) | from_p
    }
}

/// How many leading bytes two values are known to share given their [`digest_past`]
/// digests `a` and `b` (with a head of `head_len` bytes): what equal digests say (see
/// [`shared_len`]); if both start with the head, the head and the bytes their tails'
/// digests agree on (where both tails have them); else nothing.
#[inline]
pub(crate) fn shared_by_digests(head_len: usize, a: u64, b: u64) -> usize {
    let in_head = |digest: u64| digest >> 62 == HEAD_BAND >> 62;
    if a == b {
        return shared_len(head_len, a);
    }
    if !(in_head(a) && in_head(b)) {
        return 0;
    }
    // Below the band and two spare bits, the tails' first bytes (zero-padded), then
    // their lengths (see `tail_digest`).
    let same_bytes = ((a ^ b) << 4).leading_zeros() as usize / 8;
    head_len + same_bytes.min(tail_length(a)).min(tail_length(b)).min(TAIL_BYTES)
}

/// The band of [`digest_past`] for values that start with the head.
pub(crate) const HEAD_BAND: u64 = 1 << 62;

/// Bytes of a tail a band-1 digest holds.
const TAIL_BYTES: usize = 7;

/// A tail's first [`TAIL_BYTES`] bytes (zero-padded, as [`byte_prefix`] pads), then its
/// length up to `TAIL_BYTES + 1` in four bits. Tails that differ in those bytes compare
/// as the bytes do; with the same bytes, a shorter tail (at most `TAIL_BYTES` long) is a
/// prefix of the longer and sorts first, as its smaller length says. So equal digests of
/// tails no longer than `TAIL_BYTES` are equal tails: short keys past a shared head
/// (`user-000123` past `user-000`) never compare their bytes on a tie.
#[inline]
fn tail_digest(tail: &[u8]) -> u64 {
    let length = tail.len().min(TAIL_BYTES + 1) as u64;
    ((byte_prefix(tail) >> 8) << 4) | length
}

/// Whether two values with this same [`digest_past`] are equal: both start with the head
/// and their tails fit the digest.
#[inline]
pub(crate) fn tie_is_exact(digest: u64) -> bool {
    digest >> 62 == HEAD_BAND >> 62 && tail_length(digest) <= TAIL_BYTES
}

/// The length field of a band-1 digest (see [`tail_digest`]).
#[inline]
fn tail_length(digest: u64) -> usize {
    (digest & 0xF) as usize
}

/// How many leading bytes two values with this same digest (from [`digest_past`] with
/// a head of `head_len` bytes) are known to share, so that comparing them may skip
/// those: the head and the bytes of the tail the digest holds in band 1, else the head
/// up to where both leave it.
#[inline]
pub(crate) fn shared_len(head_len: usize, digest: u64) -> usize {
    let leaves_at = ((digest >> 48) & 0x3FFF) as usize;
    match digest >> 62 {
        band if band == HEAD_BAND >> 62 => head_len + tail_length(digest).min(TAIL_BYTES),
        0 => leaves_at,
        _ => head_len - leaves_at,
    }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Values near a head: a piece of it (cut anywhere, so longer than a word too) and
    /// then a few bytes of a small alphabet that includes the head's own byte and zero.
    fn near(head: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
        let byte = prop::sample::select(vec![0u8, 1, 7, 8, 255]);
        (0..=head.len(), prop::collection::vec(byte, 0..10))
            .prop_map(move |(keep, tail)| [&head[..keep], &tail[..]].concat())
    }

    proptest! {
        #[test]
        fn byte_prefix_is_the_zero_padded_first_eight_bytes(value in prop::collection::vec(any::<u8>(), 0..12)) {
            let mut padded = [0u8; 8];
            let n = value.len().min(8);
            padded[..n].copy_from_slice(&value[..n]);
            prop_assert_eq!(byte_prefix(&value), u64::from_be_bytes(padded), "{:?}", value);
        }

        /// Unequal digests order values as their bytes do, in and out of the head; equal
        /// ones share their head up to where they leave it.
        #[test]
        fn digests_past_a_head_keep_the_order(
            (head, values) in prop::collection::vec(prop::sample::select(vec![1u8, 7, 8]), 0..20)
                .prop_flat_map(|head| (Just(head.clone()), prop::collection::vec(near(head), 2..16))),
        ) {
            for a in &values {
                for b in &values {
                    let (da, db) = (digest_past(&head, a), digest_past(&head, b));
                    prop_assert!(da == db || da.cmp(&db) == a.cmp(b), "head {:?}: {:?} vs {:?}", head, a, b);
                    let naive = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                    prop_assert_eq!(common_prefix_len(a, b), naive);
                    // Tied digests may skip what they say both values share, and some
                    // say the values are equal.
                    prop_assert!(da != db || naive >= shared_len(head.len(), da), "{:?} vs {:?}", a, b);
                    prop_assert!(naive >= shared_by_digests(head.len(), da, db), "{:?} vs {:?}", a, b);
                    prop_assert!(da != db || !tie_is_exact(da) || a == b, "{:?} vs {:?}", a, b);
                }
            }
        }
    }
}
