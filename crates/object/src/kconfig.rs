//! Values of `CONFIG_*` externs from a kernel config file (`/proc/config.gz`
//! or a plain-text `.config`), converted to the extern's C type by libbpf's
//! rules: bool and tristate take y/n/m, char takes the letter, integers take
//! decimal or hex numbers, char arrays take quoted strings.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use crate::btf::{Btf, Kind, BTF_INT_BOOL, BTF_INT_CHAR, BTF_INT_SIGNED};

/// `CONFIG_X` -> raw value text, for the lines that set a value.
pub fn read_config(path: &Path) -> Result<HashMap<String, String>, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .map_err(|e| format!("gunzip: {e}"))?;
        s
    } else {
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok(parse_config(&text))
}

pub fn parse_config(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| l.starts_with("CONFIG_"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// The bytes of `value` for an extern of BTF type `type_id` and `size`.
pub fn encode(btf: &Btf, type_id: u32, size: u32, value: &str) -> Result<Vec<u8>, String> {
    let (_, t) = btf.skip_mods_and_typedefs(type_id).ok_or("type missing")?;
    let int = |v: u64| {
        let mut b = v.to_le_bytes().to_vec();
        b.resize(size as usize, 0);
        b
    };
    let tristate = |v: &str| match v {
        "y" => Some(1),
        "n" => Some(0),
        "m" => Some(2),
        _ => None,
    };
    match t.kind {
        Kind::Enum if btf.name(t) == "libbpf_tristate" => tristate(value)
            .map(int)
            .ok_or_else(|| format!("'{value}' is not y/n/m")),
        Kind::Int => {
            let (enc, _, bits) = t.int_info().ok_or("bad INT")?;
            if enc & BTF_INT_BOOL != 0 {
                return match value {
                    "y" => Ok(int(1)),
                    "n" => Ok(int(0)),
                    _ => Err(format!("'{value}' is not a bool")),
                };
            }
            if enc & BTF_INT_CHAR != 0 && size == 1 && matches!(value, "y" | "n" | "m") {
                return Ok(vec![value.as_bytes()[0]]);
            }
            let parsed = match value
                .strip_prefix("0x")
                .or_else(|| value.strip_prefix("0X"))
            {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None if enc & BTF_INT_SIGNED != 0 => value.parse::<i64>().ok().map(|v| v as u64),
                None => value.parse::<u64>().ok(),
            }
            .ok_or_else(|| format!("'{value}' is not a number"))?;
            let fits = bits >= 64
                || if enc & BTF_INT_SIGNED != 0 {
                    let v = parsed as i64;
                    let half = 1i64 << (bits - 1);
                    (-half..half).contains(&v)
                } else {
                    parsed < (1u64 << bits)
                };
            if !fits {
                return Err(format!("{value} does not fit in {bits} bits"));
            }
            Ok(int(parsed))
        }
        Kind::Array => {
            let s = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .ok_or_else(|| format!("'{value}' is not a string"))?;
            // libbpf truncates and keeps the terminating NUL.
            let mut b: Vec<u8> = s.bytes().take(size.saturating_sub(1) as usize).collect();
            b.resize(size as usize, 0);
            Ok(b)
        }
        k => Err(format!("unsupported kconfig type {}", k.name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::tests::Builder;

    #[test]
    fn values_follow_the_extern_type() {
        let mut b = Builder::new();
        b.rec("_Bool", 1, 0, false, 1, &[(4 << 24) | 8]); // [1]
        b.rec("int", 1, 0, false, 4, &[(1 << 24) | 32]); // [2]
        b.rec("char", 1, 0, false, 1, &[(2 << 24) | 8]); // [3]
        b.rec("", 3, 0, false, 0, &[3, 2, 8]); // [4] char[8]
        let yes = b.s("TRI_YES");
        b.rec("libbpf_tristate", 6, 1, false, 4, &[yes, 1]); // [5]
        let btf = Btf::from_bytes(&b.build()).unwrap();
        let cfg = parse_config(
            "# CONFIG_A is not set\nCONFIG_B=y\nCONFIG_HZ=250\nCONFIG_S=\"abcdefghij\"\n",
        );
        assert!(!cfg.contains_key("CONFIG_A"));
        assert_eq!(encode(&btf, 1, 1, &cfg["CONFIG_B"]).unwrap(), [1]);
        assert_eq!(
            encode(&btf, 2, 4, &cfg["CONFIG_HZ"]).unwrap(),
            250u32.to_le_bytes()
        );
        assert_eq!(encode(&btf, 2, 4, "-3").unwrap(), (-3i32).to_le_bytes());
        assert_eq!(encode(&btf, 3, 1, "m").unwrap(), [b'm']);
        assert_eq!(encode(&btf, 4, 8, &cfg["CONFIG_S"]).unwrap(), *b"abcdefg\0");
        assert_eq!(encode(&btf, 5, 4, "m").unwrap(), 2u32.to_le_bytes());
        assert!(encode(&btf, 1, 1, "m").is_err());
        assert!(encode(&btf, 2, 4, "0x1ffffffff").is_err());
    }
}
