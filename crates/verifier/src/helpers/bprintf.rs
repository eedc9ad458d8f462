//! The format strings `bpf_snprintf` accepts (the kernel checks them at
//! load with `bpf_bprintf_prepare` in its verification-only mode): printable
//! ASCII, at most `num_args` conversions, each `%d %i %u %x %X` with
//! optional `l`/`ll`, `%c`, `%s`, `%p` and its `K x s S B i4 I4 i6 I6 ks
//! us` forms, after optional `0+- ` flags and a width; `%%` is a literal.

/// Whether `fmt` (up to its first NUL; bytes past the slice read as NUL)
/// is a format the kernel accepts with `num_args` u64 arguments.
pub fn format_ok(fmt: &[u8], num_args: u64) -> bool {
    let at = |i: usize| fmt.get(i).copied().unwrap_or(0);
    let len = fmt.iter().position(|&c| c == 0).unwrap_or(fmt.len());
    let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let ends_conversion = |c: u8| c == 0 || is_space(c) || c.is_ascii_punctuation();
    let mut specs = 0u64;
    let mut i = 0;
    while i < len {
        let c = at(i);
        if !c.is_ascii() || !(c.is_ascii_graphic() || c == b' ' || is_space(c)) {
            return false;
        }
        if c != b'%' {
            i += 1;
            continue;
        }
        if at(i + 1) == b'%' {
            i += 2;
            continue;
        }
        if specs >= num_args {
            return false;
        }
        i += 1;
        while matches!(at(i), b'0' | b'+' | b'-' | b' ') {
            i += 1;
        }
        if (b'1'..=b'9').contains(&at(i)) {
            i += 1;
            while at(i).is_ascii_digit() {
                i += 1;
            }
        }
        match at(i) {
            b'p' => {
                let next = at(i + 1);
                if ends_conversion(next) {
                    // `%p` alone.
                } else if matches!(next, b'k' | b'u') && at(i + 2) == b's' {
                    i += 2;
                    if !ends_conversion(at(i + 1)) {
                        return false;
                    }
                } else if matches!(next, b'K' | b'x' | b's' | b'S' | b'B') {
                    i += 1;
                } else if matches!(next, b'i' | b'I') && matches!(at(i + 2), b'4' | b'6') {
                    i += 2;
                } else {
                    return false;
                }
            }
            b's' => {
                if !ends_conversion(at(i + 1)) {
                    return false;
                }
            }
            b'c' => {}
            _ => {
                if at(i) == b'l' {
                    i += 1;
                }
                if at(i) == b'l' {
                    i += 1;
                }
                if !matches!(at(i), b'i' | b'd' | b'u' | b'x' | b'X') {
                    return false;
                }
            }
        }
        specs += 1;
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::format_ok;

    #[test]
    fn conversions_need_arguments() {
        assert!(format_ok(b"%d\0", 1));
        assert!(!format_ok(b"%d\0", 0));
        assert!(format_ok(b"100%%\0", 0));
        assert!(format_ok(b"%-08llx %s\0", 2));
        assert!(!format_ok(b"%s %s\0", 1));
    }

    #[test]
    fn unknown_or_glued_conversions_fail() {
        assert!(!format_ok(b"%z\0", 1));
        assert!(!format_ok(b"%sx\0", 1));
        assert!(format_ok(b"%s.\0", 1));
        assert!(!format_ok(b"%pZ\0", 1));
        assert!(format_ok(b"%pI4\0", 1));
        assert!(!format_ok(b"%pI5\0", 1));
        assert!(!format_ok(b"%\0", 1));
        assert!(!format_ok(b"tab\x01\0", 0));
    }
}
