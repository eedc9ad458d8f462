//! Internet checksum arithmetic as the kernel's csum helpers do it
//! (one's complement; values stay in the byte order they have in memory).

fn add32(a: u32, b: u32) -> u32 {
    let (s, c) = a.overflowing_add(b);
    s.wrapping_add(c as u32)
}

fn fold(sum: u32) -> u16 {
    let s = (sum & 0xffff) + (sum >> 16);
    let s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

fn add16(a: u16, b: u16) -> u16 {
    let (s, c) = a.overflowing_add(b);
    s.wrapping_add(c as u16)
}

/// csum_replace2.
pub fn replace2(sum: &mut u16, from: u16, to: u16) {
    *sum = !add16(add16(!*sum, !from), to);
}

/// csum_replace4.
pub fn replace4(sum: &mut u16, from: u32, to: u32) {
    *sum = fold(add32(add32(!(*sum as u32) & 0xffff, !from), to));
}

/// csum_replace_by_diff.
pub fn replace_by_diff(sum: &mut u16, diff: u32) {
    *sum = fold(add32(diff, !(*sum as u32) & 0xffff));
}

/// bpf_csum_diff: the sum of `seed`, the complement of `from` and `to`,
/// folded to 32 bits as x86-64's csum_partial does.
pub fn diff(from: &[u8], to: &[u8], seed: u32) -> u32 {
    let mut s: u64 = seed as u64;
    for w in from.chunks_exact(4) {
        s += !u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as u64;
    }
    for w in to.chunks_exact(4) {
        s += u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as u64;
    }
    add32((s >> 32) as u32, s as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RFC 1071 sum of 16-bit words, folded and inverted.
    fn checksum(words: &[u16]) -> u16 {
        let mut s: u32 = 0;
        for &w in words {
            s += w as u32;
        }
        fold(s)
    }

    #[test]
    fn replace2_matches_recomputing() {
        let mut words = [
            0x4500u16, 0x0073, 0x0000, 0x4000, 0x4011, 0, 0xc0a8, 0x0001, 0xc0a8, 0x00c7,
        ];
        let mut sum = checksum(&words);
        let old = words[4];
        words[4] = 0x3f11;
        replace2(&mut sum, old, words[4]);
        assert_eq!(sum, checksum(&words));
    }

    #[test]
    fn replace4_matches_recomputing() {
        let mut words = [0x1234u16, 0xabcd, 0x0f0f, 0x8000];
        let mut sum = checksum(&words);
        let old = (words[1] as u32) << 16 | words[0] as u32;
        words[0] = 0x4321;
        words[1] = 0xdcba;
        let new = (words[1] as u32) << 16 | words[0] as u32;
        replace4(&mut sum, old, new);
        assert_eq!(sum, checksum(&words));
    }

    #[test]
    fn diff_of_equal_buffers_is_zero_or_minus_zero() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let d = diff(&b, &b, 0);
        assert!(d == 0 || d == 0xffff_ffff, "{d:#x}");
    }
}
