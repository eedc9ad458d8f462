//! The printf subset bpf_trace_printk and bpf_snprintf accept:
//! `%[-0][width][l|ll|h|hh](d|i|u|x|X|c|s|p)` and `%%`, at most as many
//! conversions as arguments.

/// Formats `fmt` (bytes up to the first NUL) with `args`; `string` reads a
/// `%s` argument (address, max length).
pub fn format_printk(
    fmt: &[u8],
    args: &[u64],
    string: impl Fn(u64, usize) -> Option<Vec<u8>>,
) -> Result<String, String> {
    let fmt = fmt.split(|&b| b == 0).next().unwrap_or(&[]);
    let mut out = String::new();
    let mut args = args.iter();
    let mut i = 0;
    while i < fmt.len() {
        let c = fmt[i];
        i += 1;
        if c != b'%' {
            out.push(c as char);
            continue;
        }
        let (mut left, mut zero, mut width) = (false, false, 0usize);
        while i < fmt.len() && (fmt[i] == b'-' || fmt[i] == b'0') {
            left |= fmt[i] == b'-';
            zero |= fmt[i] == b'0';
            i += 1;
        }
        while i < fmt.len() && fmt[i].is_ascii_digit() {
            width = (width * 10 + (fmt[i] - b'0') as usize).min(1 << 12);
            i += 1;
        }
        let mut bits = 32;
        while i < fmt.len() && matches!(fmt[i], b'l' | b'h') {
            bits = if fmt[i] == b'l' { 64 } else { bits / 2 };
            i += 1;
        }
        let conv = *fmt.get(i).ok_or("format ends inside a conversion")?;
        i += 1;
        if conv == b'%' {
            out.push('%');
            continue;
        }
        let arg = *args.next().ok_or("more conversions than arguments")?;
        let masked = if bits >= 64 {
            arg
        } else {
            arg & ((1u64 << bits) - 1)
        };
        let text = match conv {
            b'd' | b'i' => {
                let v = if bits >= 64 {
                    arg as i64
                } else {
                    ((masked << (64 - bits)) as i64) >> (64 - bits)
                };
                v.to_string()
            }
            b'u' => masked.to_string(),
            b'x' => format!("{masked:x}"),
            b'X' => format!("{masked:X}"),
            b'c' => ((arg as u8) as char).to_string(),
            b'p' => format!("{arg:016x}"),
            b's' => match string(arg, 1024) {
                Some(s) => String::from_utf8_lossy(&s).into_owned(),
                None => "(efault)".to_string(),
            },
            other => return Err(format!("unsupported conversion %{}", other as char)),
        };
        let pad = width.saturating_sub(text.len());
        if left {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            let fill = if zero && conv != b's' { '0' } else { ' ' };
            out.extend(std::iter::repeat_n(fill, pad));
            out.push_str(&text);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_and_widths() {
        let s = format_printk(
            b"a=%d b=%u c=%x d=%05lld e=%-3s|\0junk",
            &[-5i64 as u64, 7, 255, 42, 0x1000],
            |a, _| (a == 0x1000).then(|| b"hi".to_vec()),
        )
        .unwrap();
        assert_eq!(s, "a=-5 b=7 c=ff d=00042 e=hi |");
    }

    #[test]
    fn too_few_arguments_is_an_error() {
        assert!(format_printk(b"%d %d", &[1], |_, _| None).is_err());
    }
}
