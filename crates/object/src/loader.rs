//! The loader an object was built for. libbpf, cilium/ebpf (with Cilium's
//! own loader on top) and iproute2 read the same ELF differently in two
//! ways that matter before verification: which map pinning values they
//! know, and what type a program gets when its section names none (libbpf
//! refuses it; `tc` and Cilium's loader load a whole object with the type
//! of the program they were asked for). Everything else bpfvet reads the
//! same way for all three.

use crate::types::{MapDef, Program};
use bpfvet_isa::uapi::ProgType;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loader {
    Libbpf,
    /// cilium/ebpf as Cilium's agent drives it.
    Cilium,
    /// `tc ... bpf obj` and `ip link ... xdp obj`.
    Iproute2,
}

/// Cilium's pin flag: replace a pinned map of the same name on load.
const CILIUM_PIN_REPLACE: u32 = 1 << 4;
/// iproute2's pin values: per-object and global namespace (values above
/// name entries of /etc/iproute2/bpf_pinning, which bpfvet cannot read).
const IPROUTE2_PIN_OBJECT_NS: u32 = 1;
const IPROUTE2_PIN_GLOBAL_NS: u32 = 2;

impl Loader {
    pub const ALL: [Loader; 3] = [Loader::Libbpf, Loader::Cilium, Loader::Iproute2];

    pub fn name(self) -> &'static str {
        match self {
            Loader::Libbpf => "libbpf",
            Loader::Cilium => "cilium",
            Loader::Iproute2 => "iproute2",
        }
    }

    pub fn from_name(name: &str) -> Option<Loader> {
        Loader::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Whether this loader gives `pinning` a meaning (0 is "not pinned"
    /// for all three).
    pub fn knows_pinning(self, pinning: u32) -> bool {
        match self {
            Loader::Libbpf => pinning <= 1,
            Loader::Cilium => pinning <= 1 || pinning == CILIUM_PIN_REPLACE,
            Loader::Iproute2 => {
                pinning == 0
                    || pinning == IPROUTE2_PIN_OBJECT_NS
                    || pinning == IPROUTE2_PIN_GLOBAL_NS
            }
        }
    }

    /// The loader the object says it was built for, and what says so:
    /// iproute2's `struct bpf_elf_map` records in the legacy `maps`
    /// section, or Cilium's replace flag on a map; libbpf otherwise.
    pub fn detect(elf_map_records: bool, maps: &[MapDef]) -> (Loader, Option<String>) {
        if elf_map_records {
            return (
                Loader::Iproute2,
                Some("its maps are iproute2's `struct bpf_elf_map` records".into()),
            );
        }
        if let Some(m) = maps.iter().find(|m| m.pinning == CILIUM_PIN_REPLACE) {
            return (
                Loader::Cilium,
                Some(format!("map '{}' carries Cilium's pin flag", m.name)),
            );
        }
        (Loader::Libbpf, None)
    }

    /// A warning for each map pinned in a way this loader does not know.
    pub fn pin_warnings(self, maps: &[MapDef]) -> Vec<String> {
        maps.iter()
            .filter(|m| !self.knows_pinning(m.pinning))
            .map(|m| {
                format!(
                    "map '{}': pinning value {} means nothing to {}; the map is not pinned",
                    m.name,
                    m.pinning,
                    self.name()
                )
            })
            .collect()
    }

    /// Types the programs whose section names no type, as this loader's
    /// caller does: iproute2 and Cilium load every program of an object
    /// (tail calls in numbered sections included) with the type of the
    /// entry program they were asked for, here the one type the typed
    /// programs share. libbpf leaves them untyped (it refuses to load
    /// them). Returns a note for each program typed.
    pub fn type_untyped_programs(self, programs: &mut [Program]) -> Vec<String> {
        if self == Loader::Libbpf {
            return Vec::new();
        }
        let mut typed = programs
            .iter()
            .filter(|p| p.prog_type != ProgType::UNSPEC && p.refused.is_none())
            .map(|p| (p.prog_type, p.expected_attach_type));
        let Some(first) = typed.next() else {
            return Vec::new();
        };
        if typed.any(|t| t != first) {
            return Vec::new();
        }
        let mut notes = Vec::new();
        for p in programs
            .iter_mut()
            .filter(|p| p.prog_type == ProgType::UNSPEC)
        {
            p.prog_type = first.0;
            p.expected_attach_type = first.1;
            notes.push(format!(
                "program '{}' in section '{}' typed {} like the object's other programs, as {} loads it",
                p.name,
                p.section,
                first.0.name().unwrap_or("?"),
                self.name()
            ));
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::MapOrigin;
    use bpfvet_isa::uapi::MapType;

    fn pinned(name: &str, pinning: u32) -> MapDef {
        let mut m = MapDef::new(name, MapType::ARRAY, 4, 8, 1);
        m.origin = MapOrigin::BtfMaps;
        m.pinning = pinning;
        m
    }

    #[test]
    fn each_loader_knows_its_own_pin_values() {
        let maps = [pinned("a", 1), pinned("cilium", 16), pinned("global", 2)];
        let warned = |l: Loader| -> Vec<String> {
            l.pin_warnings(&maps)
                .iter()
                .map(|w| w.split('\'').nth(1).unwrap().to_string())
                .collect()
        };
        assert_eq!(warned(Loader::Libbpf), ["cilium", "global"]);
        assert_eq!(warned(Loader::Cilium), ["global"]);
        assert_eq!(warned(Loader::Iproute2), ["cilium"]);
    }

    #[test]
    fn detection_reads_map_records_then_pin_flags() {
        let cilium = [pinned("calls", 16)];
        assert_eq!(Loader::detect(true, &cilium).0, Loader::Iproute2);
        assert_eq!(Loader::detect(false, &cilium).0, Loader::Cilium);
        assert_eq!(Loader::detect(false, &[pinned("m", 1)]).0, Loader::Libbpf);
    }

    #[test]
    fn untyped_sections_take_the_objects_one_type() {
        let prog = |name: &str, t: ProgType| {
            let mut o = crate::types::Object::single_program(name, t, vec![]);
            o.programs.remove(0)
        };
        let mut progs = vec![
            prog("entry", ProgType::SCHED_CLS),
            prog("tail", ProgType::UNSPEC),
        ];
        assert!(Loader::Libbpf.type_untyped_programs(&mut progs).is_empty());
        assert_eq!(progs[1].prog_type, ProgType::UNSPEC);
        assert_eq!(Loader::Iproute2.type_untyped_programs(&mut progs).len(), 1);
        assert_eq!(progs[1].prog_type, ProgType::SCHED_CLS);
        // Two entry types: nothing says which a tail call has.
        let mut mixed = vec![
            prog("a", ProgType::SCHED_CLS),
            prog("b", ProgType::XDP),
            prog("c", ProgType::UNSPEC),
        ];
        assert!(Loader::Cilium.type_untyped_programs(&mut mixed).is_empty());
        assert_eq!(mixed[2].prog_type, ProgType::UNSPEC);
    }
}
