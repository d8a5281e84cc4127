//! Offset-value codes for keys ordered by their bytes (Do and Graefe, "Robust and
//! efficient sorting with offset-value coding"): a key's code relative to a base key it
//! does not sort before says where it first differs from the base and what it holds
//! there, packed into one integer so that of two keys coded against the same base, the
//! smaller code is the smaller key. Most matches of a loser tree are then one integer
//! compare, and a tie of codes compares bytes from the difference on, not from byte 0.
//!
//! Keys are cut into chunks of [`CHUNK`] bytes from their start. A code holds the index of
//! the first chunk that differs from the base's and that chunk's value: its bytes
//! (zero-padded) and how many of them are real, so that a key ending inside the chunk
//! sorts before a longer one with the same bytes. A later chunk is a smaller code (the
//! key is nearer the base), so the index is stored inverted in the top bits. Whole chunks
//! keep the rule that makes codes cheap: if two keys' codes against a base differ, the
//! larger one is also the larger key's code against the smaller key, unchanged.

use std::cmp::Ordering;

use super::{byte_prefix, common_prefix_len};

/// Bytes of a chunk: its bytes (48 bits) and its length (3 bits) leave 13 bits of index.
const CHUNK: usize = 6;

/// Bits holding a chunk's value.
const VALUE_BITS: u32 = 51;

/// Chunk indices a code can hold; a first difference at or past this chunk is [`FAR`].
const PLACES: usize = (1 << (64 - VALUE_BITS)) - 1;

/// The code of a key equal to its base: it sorts before every other code, and two of them
/// leave the order to the versions.
pub(crate) const DUPLICATE: u64 = 0;

/// The code of a key that first differs from its base past [`PLACES`] chunks: below every
/// code of an earlier difference, and two of them compare bytes from there.
const FAR: u64 = 1;

/// The code of a used-up run, after every key's.
pub(crate) const DONE: u64 = u64::MAX;

/// Chunk `index` of `key`: its bytes as a big-endian integer, zero-padded, then how many
/// are real (fewer than [`CHUNK`] only where the key ends).
#[inline]
fn chunk_value(key: &[u8], index: usize) -> u64 {
    let start = (index * CHUNK).min(key.len());
    let bytes = &key[start..(start + CHUNK).min(key.len())];
    ((byte_prefix(bytes) >> (64 - 8 * CHUNK)) << 3) | bytes.len() as u64
}

/// The code of `key` whose first chunk that differs from its base's is `index`.
#[inline]
fn code_at(key: &[u8], index: usize) -> u64 {
    if index >= PLACES {
        return FAR;
    }
    (((PLACES - index) as u64) << VALUE_BITS) | chunk_value(key, index)
}

/// How many leading chunks two keys with this same code (against one base) share: those
/// the base shares with both, and the differing one, equal in both.
#[inline]
fn shared_chunks(code: u64) -> usize {
    match code {
        FAR => PLACES,
        _ => PLACES - (code >> VALUE_BITS) as usize + 1,
    }
}

/// Where `a` and `b`, known equal before byte `from`, first differ, and which is smaller;
/// `None` if they are equal. A key that ends first differs at its end and is the smaller.
#[inline]
fn first_difference(a: &[u8], b: &[u8], from: usize) -> Option<(usize, Ordering)> {
    let start = (from / CHUNK * CHUNK).min(a.len()).min(b.len());
    let at = start + common_prefix_len(&a[start..], &b[start..]);
    let order = match (a.get(at), b.get(at)) {
        (Some(x), Some(y)) => x.cmp(y),
        (None, None) => return None,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
    };
    Some((at, order))
}

/// How `base` compares with `next` (the following key of a sorted run, or any key when
/// `base` is empty), and `next`'s code against `base` when `base` is not the greater.
/// Bytes before `from` are known equal in both.
#[inline]
pub(crate) fn code_after(base: &[u8], next: &[u8], from: usize) -> (Ordering, u64) {
    match first_difference(base, next, from) {
        None => (Ordering::Equal, DUPLICATE),
        Some((at, order)) => (order, code_at(next, at / CHUNK)),
    }
}

/// Settles a match between keys `a` and `b` whose codes against one base are both `code`
/// (neither [`DUPLICATE`] nor [`DONE`]): how `a` compares with `b`, and the greater key's
/// code against the smaller ([`DUPLICATE`] if they are equal). Compares bytes only from
/// the chunk after the one the code holds.
#[inline]
pub(crate) fn settle_tie(a: &[u8], b: &[u8], code: u64) -> (Ordering, u64) {
    debug_assert!(code != DUPLICATE && code != DONE);
    match first_difference(a, b, shared_chunks(code) * CHUNK) {
        None => (Ordering::Equal, DUPLICATE),
        Some((at, Ordering::Less)) => (Ordering::Less, code_at(b, at / CHUNK)),
        Some((at, _)) => (Ordering::Greater, code_at(a, at / CHUNK)),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Keys over a small alphabet (zero, which equals the padding, included) that share
    /// long heads, end inside and at the edge of chunks, and are prefixes of each other.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop::sample::select(vec![0u8, 1, 2, 255]);
        (0..20usize, prop::collection::vec(byte, 0..14))
            .prop_map(|(head, tail)| [vec![1u8; head], tail].concat())
    }

    /// A key's code against a base, computed the slow way: the first differing chunk.
    fn naive_code(base: &[u8], key: &[u8]) -> u64 {
        if base == key {
            return DUPLICATE;
        }
        let chunk = |k: &[u8], i: usize| k.iter().skip(i * CHUNK).take(CHUNK).copied().collect::<Vec<_>>();
        let index = (0..).find(|&i| chunk(base, i) != chunk(key, i)).unwrap();
        code_at(key, index)
    }

    proptest! {
        /// Codes against one base order the keys not below it as their bytes do; equal
        /// codes are settled by `settle_tie`, whose code for the greater key is its code
        /// against the smaller; and the code of an unequal pair's greater key against
        /// the smaller equals its code against the base whenever the codes differ.
        #[test]
        fn codes_order_keys_as_their_bytes(base in key(), mut keys in prop::collection::vec(key(), 2..8)) {
            keys.retain(|k| *k >= base);
            for a in &keys {
                let (order, code_a) = code_after(&base, a, 0);
                prop_assert_eq!(order, base.cmp(a));
                prop_assert_eq!(code_a, naive_code(&base, a), "{:?} vs base {:?}", a, base);
                for b in &keys {
                    let code_b = naive_code(&base, b);
                    let (smaller, greater) = if a <= b { (a, b) } else { (b, a) };
                    if code_a != code_b {
                        prop_assert_eq!(code_a.cmp(&code_b), a.cmp(b), "{:?} vs {:?}, base {:?}", a, b, base);
                        let kept = code_a.max(code_b);
                        prop_assert_eq!(kept, naive_code(smaller, greater), "{:?} vs {:?}, base {:?}", a, b, base);
                    } else if code_a != DUPLICATE {
                        let (order, loser) = settle_tie(a, b, code_a);
                        prop_assert_eq!(order, a.cmp(b), "{:?} vs {:?}", a, b);
                        prop_assert_eq!(loser, naive_code(smaller, greater), "{:?} vs {:?}", a, b);
                    } else {
                        prop_assert_eq!(a, b);
                    }
                }
            }
        }
    }

    #[test]
    fn a_difference_past_the_places_is_far_and_compares_from_there() {
        let base = vec![7u8; PLACES * CHUNK + 10];
        let (mut a, mut b) = (base.clone(), base.clone());
        a[PLACES * CHUNK + 3] = 8;
        b[PLACES * CHUNK + 3] = 9;
        let (_, code) = code_after(&base, &a, 0);
        assert_eq!(code, FAR);
        assert_eq!(code_after(&base, &b, 0).1, FAR);
        assert_eq!(settle_tie(&a, &b, FAR), (Ordering::Less, FAR));
        let near = [&base[..5], &[9]].concat();
        assert!(code_after(&base, &near, 0).1 > FAR);
    }
}
