//! Hash functions: Bob Jenkins' lookup3 ("jhash", what the kernel's htab
//! uses), written from the algorithm's published description; a cheap
//! multiply-fold hash for 8-byte keys (RHASH's specialised path); and
//! xxh3 (the `xxhash-rust` crate) folded to 32 bits, RHASH's hash for
//! every other key size and HASH's unless BPF_F_ZERO_SEED asks for the
//! kernel's buckets.

const JHASH_INITVAL: u32 = 0xdead_beef;

#[inline(always)]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

#[inline(always)]
fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

#[inline(always)]
fn le32(k: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([k[at], k[at + 1], k[at + 2], k[at + 3]])
}

/// lookup3 over bytes with a seed (the kernel's `jhash`).
#[inline(always)]
pub fn jhash(key: &[u8], seed: u32) -> u32 {
    let mut a = JHASH_INITVAL
        .wrapping_add(key.len() as u32)
        .wrapping_add(seed);
    let mut b = a;
    let mut c = a;
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(le32(k, 0));
        b = b.wrapping_add(le32(k, 4));
        c = c.wrapping_add(le32(k, 8));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    // The last 1..=12 bytes, little-endian, zero padded.
    let mut tail = [0u8; 12];
    tail[..k.len()].copy_from_slice(k);
    a = a.wrapping_add(le32(&tail, 0));
    b = b.wrapping_add(le32(&tail, 4));
    c = c.wrapping_add(le32(&tail, 8));
    finish(&mut a, &mut b, &mut c);
    c
}

/// A cheap hash for 8-byte keys: one 64x64->128 multiply folded to 32 bits.
#[inline(always)]
pub fn hash_u64(key: u64, seed: u32) -> u32 {
    let m = ((key ^ seed as u64) as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15u128);
    let folded = (m as u64) ^ ((m >> 64) as u64);
    (folded ^ (folded >> 32)) as u32
}

/// xxh3, seeded, folded to 32 bits. RHASH hashes keys other than 8 bytes
/// with it rather than jhash: it takes a third to a half of jhash's
/// instructions at 4-32 bytes, and a lookup that misses the cache twice is
/// bound by how many lookups the CPU keeps in flight, which a shorter hash
/// raises (bench/maps/RESULTS.md: 16- and 32-byte lookups on a 1M map went
/// from par with HASH to about twice it).
#[inline(always)]
pub fn xxh3_32(key: &[u8], seed: u32) -> u32 {
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(key, seed as u64);
    (h ^ (h >> 32)) as u32
}

/// A per-map random seed (the kernel seeds each htab randomly unless
/// BPF_F_ZERO_SEED), drawn from std's randomly keyed hasher.
pub fn random_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jhash_matches_lookup3_reference_values() {
        // Published lookup3 test values: hashlittle("", 0) = 0xdeadbeef and
        // hashlittle("Four score and seven years ago", 0) = 0x17770551.
        assert_eq!(jhash(b"", 0), 0xdead_beef);
        assert_eq!(jhash(b"Four score and seven years ago", 0), 0x1777_0551);
        assert_eq!(jhash(b"Four score and seven years ago", 1), 0xcd62_8161);
    }

    #[test]
    fn hash_u64_spreads_sequential_keys_over_buckets() {
        let mut seen = [0u32; 64];
        for k in 0..6400u64 {
            seen[(hash_u64(k, 7) & 63) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (50..=150).contains(&n)), "{seen:?}");
    }
}
