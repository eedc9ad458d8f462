//! The checks of the kernel's BTF parser (BPF_BTF_LOAD) that objects built
//! by clang are seen to fail. When the kernel refuses an object's BTF,
//! libbpf loads the programs without it: no func_info or line_info, and
//! maps without key and value types. bpfvet must then verify without BTF
//! too. Only the checks below are modelled; a BTF that passes them may
//! still fail one that is not (the kernel backend shows its own verdict).

use crate::btf::{Btf, BtfType, Kind};

/// BTF_FUNC_GLOBAL: the largest linkage a FUNC may have (extern is not).
const FUNC_LINKAGE_MAX: u32 = 1;
/// BTF_VAR_GLOBAL_ALLOCATED: the largest linkage a VAR may have.
const VAR_LINKAGE_MAX: u32 = 1;

/// The kernel's reason for refusing `btf`, in the form of its BTF log's
/// last line, or None when no modelled check fails.
pub fn kernel_refusal(btf: &Btf) -> Option<String> {
    // Every type's own record is checked first (btf_check_meta), then each
    // type against the others (btf_check_all_types).
    btf.ids()
        .find_map(|id| meta_refusal(btf, id))
        .or_else(|| btf.ids().find_map(|id| func_refusal(btf, id)))
}

fn meta_refusal(btf: &Btf, id: u32) -> Option<String> {
    let t = btf.type_by_id(id)?;
    let reason = match t.kind {
        Kind::Func if t.linkage() > FUNC_LINKAGE_MAX => "Invalid func linkage",
        Kind::Var if t.linkage() > VAR_LINKAGE_MAX => "Linkage not supported",
        Kind::Enum | Kind::Enum64 if t.size_or_type > 8 || !t.size_or_type.is_power_of_two() => {
            "Unexpected size"
        }
        _ => return None,
    };
    Some(format!("{} {reason}", describe(btf, id, t)))
}

/// btf_func_check: a FUNC's prototype names every argument it types.
fn func_refusal(btf: &Btf, id: u32) -> Option<String> {
    let t = btf.type_by_id(id).filter(|t| t.kind == Kind::Func)?;
    let proto = btf
        .type_by_id(t.size_or_type)
        .filter(|p| p.kind == Kind::FuncProto);
    let Some(proto) = proto else {
        return Some(format!("{} Invalid type_id", describe(btf, id, t)));
    };
    let unnamed = btf
        .params(proto)
        .iter()
        .position(|p| p.name_off == 0 && p.type_id != 0)?;
    Some(format!(
        "{} Invalid arg#{}",
        describe(btf, id, t),
        unnamed + 1
    ))
}

/// How the kernel's BTF log names a type: `[id] KIND name` and the kind's
/// details.
fn describe(btf: &Btf, id: u32, t: &BtfType) -> String {
    let head = format!("[{id}] {} {}", t.kind.name(), btf.name(t));
    match t.kind {
        Kind::Func => format!("{head} type_id={}", t.size_or_type),
        Kind::Var => format!("{head} type_id={} linkage={}", t.size_or_type, t.linkage()),
        Kind::Enum | Kind::Enum64 => format!("{head} size={} vlen={}", t.size_or_type, t.vlen),
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw BTF blob of `types` (each a list of u32 words) and `strings`.
    fn blob(types: &[Vec<u32>], strings: &[u8]) -> Vec<u8> {
        let type_bytes: Vec<u8> = types
            .iter()
            .flatten()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let mut raw = Vec::new();
        raw.extend_from_slice(&0xeb9fu16.to_le_bytes());
        raw.extend_from_slice(&[1, 0]);
        for w in [
            24u32,
            0,
            type_bytes.len() as u32,
            type_bytes.len() as u32,
            strings.len() as u32,
        ] {
            raw.extend_from_slice(&w.to_le_bytes());
        }
        raw.extend_from_slice(&type_bytes);
        raw.extend_from_slice(strings);
        raw
    }

    fn info(kind: Kind, vlen: u32) -> u32 {
        ((kind as u32) << 24) | vlen
    }

    // Strings: 1 "int", 5 "f", 7 "x", 9 "v", 11 "E".
    const STRINGS: &[u8] = b"\0int\0f\0x\0v\0E\0";

    fn int() -> Vec<u32> {
        vec![1, info(Kind::Int, 0), 4, 32]
    }

    fn proto(arg_name: u32) -> Vec<u32> {
        vec![0, info(Kind::FuncProto, 1), 1, arg_name, 1]
    }

    fn refusal(types: &[Vec<u32>]) -> Option<String> {
        kernel_refusal(&Btf::from_bytes(&blob(types, STRINGS)).unwrap())
    }

    #[test]
    fn named_arguments_and_allowed_linkages_pass() {
        let types = [
            int(),
            proto(7),
            vec![5, info(Kind::Func, 1), 2],
            vec![9, info(Kind::Var, 0), 1, 1],
            vec![11, info(Kind::Enum, 0), 4],
        ];
        assert_eq!(refusal(&types), None);
    }

    #[test]
    fn an_unnamed_argument_is_refused() {
        let types = [int(), proto(0), vec![5, info(Kind::Func, 0), 2]];
        assert_eq!(
            refusal(&types).as_deref(),
            Some("[3] FUNC f type_id=2 Invalid arg#1")
        );
    }

    #[test]
    fn extern_linkage_and_odd_enum_sizes_are_refused() {
        let func = [int(), proto(7), vec![5, info(Kind::Func, 2), 2]];
        assert_eq!(
            refusal(&func).as_deref(),
            Some("[3] FUNC f type_id=2 Invalid func linkage")
        );
        let var = [int(), vec![9, info(Kind::Var, 0), 1, 2]];
        assert_eq!(
            refusal(&var).as_deref(),
            Some("[2] VAR v type_id=1 linkage=2 Linkage not supported")
        );
        for size in [0, 3, 16] {
            let e = [vec![11, info(Kind::Enum, 0), size]];
            assert_eq!(
                refusal(&e),
                Some(format!("[1] ENUM E size={size} vlen=0 Unexpected size"))
            );
        }
    }

    #[test]
    fn record_checks_come_before_argument_names() {
        // The unnamed argument's FUNC comes first, the bad VAR later: the
        // VAR's record check still wins.
        let types = [
            int(),
            proto(0),
            vec![5, info(Kind::Func, 0), 2],
            vec![9, info(Kind::Var, 0), 1, 2],
        ];
        assert!(refusal(&types).unwrap().ends_with("Linkage not supported"));
    }
}
