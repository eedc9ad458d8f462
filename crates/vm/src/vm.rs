//! An object made runnable: its maps created with the maps crate (global
//! data filled, prog arrays and map-in-map slots set as libbpf would), its
//! programs pre-decoded.

use std::collections::HashMap;
use std::sync::Arc;

use bpfvet_isa::uapi::{MapType, ProgType, BPF_ANY};
use bpfvet_maps::{Map, MapAttr, MapOfMaps, ProgArray};
use bpfvet_object::{MapDef, MapInit, Object};

use crate::code::{predecode, Op, ValueAddr};
use crate::error::{Result, VmError};
use crate::run::Region;
use crate::timers::{AsyncOffsets, Clock, Timers};

pub struct Program {
    pub name: String,
    pub prog_type: ProgType,
    pub ops: Vec<Op>,
    /// What bpfvet's verifier proved about each instruction's memory
    /// access, once [`Vm::verify_program`] accepted the program (empty
    /// before): the JIT drops its run-time checks where this covers them.
    pub proof: Vec<bpfvet_verifier::AccessKinds>,
}

/// Kfuncs the runtime implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kfunc {
    IterNumNew,
    IterNumNext,
    IterNumDestroy,
    WqInit,
    WqSetCallback,
    WqStart,
}

/// What the verifier proved about one accepted program: per instruction,
/// the kinds of pointer its memory access goes through, each access in
/// bounds for its kind.
#[derive(Clone, Debug, Default)]
pub struct Proof {
    /// The instructions verified.
    insns: Vec<bpfvet_isa::Insn>,
    accesses: Vec<bpfvet_verifier::AccessKinds>,
}

pub struct Vm {
    pub maps: Vec<Arc<dyn Map>>,
    /// The CPUs of the machine the VM stands for: per-CPU maps hold this
    /// many values, and runs go on CPUs 0..cpus.
    pub cpus: u32,
    /// Kfunc calls' BTF ids (in the host's vmlinux BTF) -> name and
    /// implementation, if any.
    pub kfuncs: HashMap<i32, (String, Option<Kfunc>)>,
    pub map_names: Vec<String>,
    pub programs: Vec<Program>,
    /// Global-data values and other memory every run may touch.
    pub(crate) static_regions: Vec<Region>,
    /// bpf_timer state, and the clock the timers and ktime helpers read.
    pub(crate) timers: Arc<Timers>,
    /// Per map: where its value's `struct bpf_timer` and `struct bpf_wq`
    /// are (from BTF).
    pub(crate) async_offsets: Vec<AsyncOffsets>,
    /// Per map: whether a lookup hands out plain value memory with nothing
    /// else to note (not a map-in-map, no timer or work item in the
    /// value), and then whether the program may write it.
    pub(crate) plain_lookup: Vec<Option<bool>>,
    /// Per map: for a plain-lookup ARRAY or PERCPU_ARRAY, where its values
    /// are (a lookup is then arithmetic).
    pub(crate) arrays: Vec<Option<bpfvet_maps::array::ArrayLayout>>,
    /// Per map: for a plain-lookup hash map whose CPUs share its values,
    /// its lookup specialised for its key size and the map's address.
    pub(crate) hash_lookups: Vec<Option<(bpfvet_maps::htab::SharedLookup, usize)>>,
    pub(crate) clock: Clock,
}

fn attr_of(def: &MapDef, cpus: u32) -> MapAttr {
    let max_entries = match def.map_type {
        MapType::RINGBUF | MapType::USER_RINGBUF => def.max_entries.max(4096).next_power_of_two(),
        _ if def.max_entries == 0 => 1,
        _ => def.max_entries,
    };
    let mut attr = MapAttr::new(def.map_type, def.key_size, def.value_size, max_entries)
        .with_flags(def.map_flags);
    attr.map_extra = def.map_extra;
    attr.nr_cpus = cpus;
    attr.inner = def.inner.as_deref().map(|i| Box::new(attr_of(i, cpus)));
    attr
}

struct Values<'a>(&'a [Arc<dyn Map>]);

impl ValueAddr for Values<'_> {
    fn value_addr(&self, map: usize) -> Option<u64> {
        let m = self.0.get(map)?;
        if !matches!(m.attr().map_type, MapType::ARRAY) {
            return None;
        }
        let guard = bpfvet_maps::pin();
        // ARRAY memory lives as long as the map.
        m.lookup_elem(&0u32.to_le_bytes(), 0, &guard)
            .map(|p| p.as_ptr() as u64)
    }
}

impl Vm {
    /// Creates the object's maps and decodes every program. Verification is
    /// a separate step (`bpfvet_verifier::verify`) the caller chooses.
    /// Per-CPU maps are sized for the host's possible CPUs, as the kernel's.
    pub fn load(obj: &Object) -> Result<Vm> {
        Vm::load_cpus(obj, bpfvet_maps::possible_cpus())
    }

    /// [`Vm::load`] for a machine of `cpus` CPUs (at least 1): runs on
    /// several threads give each its own CPU, which may be more than the
    /// host has.
    pub fn load_cpus(obj: &Object, cpus: u32) -> Result<Vm> {
        let cpus = cpus.max(1);
        let mut maps: Vec<Arc<dyn Map>> = Vec::with_capacity(obj.maps.len());
        for def in &obj.maps {
            let mut attr = attr_of(def, cpus);
            attr.timer_off = async_offsets(obj, def).timer;
            if def.map_type == MapType::PERF_EVENT_ARRAY {
                // Its slots hold perf event fds the kernel writes to; here
                // perf_event_output goes to the run's sink, so a plain array
                // stands in for the fd slots.
                attr = MapAttr::new(MapType::ARRAY, 4, 4, cpus);
            }
            let m = bpfvet_maps::create(attr).map_err(|source| VmError::MapCreate {
                name: def.name.clone(),
                source,
            })?;
            maps.push(m);
        }
        let map_err = |def: &MapDef, source| VmError::MapCreate {
            name: def.name.clone(),
            source,
        };
        let mut static_regions = Vec::new();
        for (i, def) in obj.maps.iter().enumerate() {
            let m = &maps[i];
            match &def.init {
                MapInit::None => {}
                MapInit::Data(bytes) => {
                    let mut v = bytes.clone();
                    v.resize(def.value_size as usize, 0);
                    m.update(&0u32.to_le_bytes(), &v, BPF_ANY)
                        .map_err(|e| map_err(def, e))?;
                }
                MapInit::InnerMaps(slots) => {
                    let mm = m
                        .as_any()
                        .downcast_ref::<MapOfMaps>()
                        .ok_or_else(|| VmError::MapUnsupported(def.name.clone()))?;
                    for &(slot, inner) in slots {
                        let mut key = slot.to_le_bytes().to_vec();
                        key.resize(def.key_size as usize, 0);
                        let inner = maps
                            .get(inner)
                            .cloned()
                            .ok_or_else(|| VmError::MapUnsupported(def.name.clone()))?;
                        mm.update_map(&key, inner, BPF_ANY)
                            .map_err(|e| map_err(def, e))?;
                    }
                }
                MapInit::Programs(slots) => {
                    let pa = m
                        .as_any()
                        .downcast_ref::<ProgArray>()
                        .ok_or_else(|| VmError::MapUnsupported(def.name.clone()))?;
                    for &(slot, prog) in slots {
                        pa.set(slot, prog as u32, BPF_ANY)
                            .map_err(|e| map_err(def, e))?;
                    }
                }
            }
            if def.frozen {
                m.freeze().map_err(|e| map_err(def, e))?;
            }
            if def.map_type == MapType::ARRAY {
                if let Some(addr) = Values(&maps).value_addr(i) {
                    static_regions.push(Region {
                        start: addr,
                        end: addr + def.value_size as u64,
                        writable: !def.frozen,
                    });
                }
            }
        }
        let mut programs = Vec::with_capacity(obj.programs.len());
        for p in &obj.programs {
            programs.push(Program {
                name: p.name.clone(),
                prog_type: p.prog_type,
                // A program the object loader refused has no code; the
                // object's other programs still run.
                ops: if p.refused.is_some() {
                    Vec::new()
                } else {
                    predecode(&p.insns, &Values(&maps))?
                },
                proof: Vec::new(),
            });
        }
        let timers = Arc::new(Timers::default());
        let async_offsets: Vec<AsyncOffsets> =
            obj.maps.iter().map(|m| async_offsets(obj, m)).collect();
        for (m, offsets) in maps.iter().zip(&async_offsets) {
            if offsets.any() {
                // A hash map's freed element loses its timer and work item.
                let (timers, len) = (timers.clone(), m.attr().value_size as u64);
                m.set_free_hook(Arc::new(move |v| timers.free_in(v.as_ptr() as u64, len)));
            }
        }
        let plain_lookup: Vec<Option<bool>> = maps
            .iter()
            .zip(&async_offsets)
            .map(|(m, offsets)| {
                let nested = m.as_any().downcast_ref::<MapOfMaps>().is_some();
                let writable = m.attr().map_flags & bpfvet_isa::uapi::BPF_F_RDONLY_PROG == 0;
                (!nested && !offsets.any()).then_some(writable)
            })
            .collect();
        let arrays = maps
            .iter()
            .zip(&plain_lookup)
            .map(|(m, plain)| {
                let a = m.as_any().downcast_ref::<bpfvet_maps::array::ArrayMap>()?;
                plain.map(|_| a.layout())
            })
            .collect();
        let hash_lookups = maps
            .iter()
            .zip(&plain_lookup)
            .map(|(m, plain)| {
                plain.as_ref()?;
                let h = m.as_any().downcast_ref::<bpfvet_maps::htab::HashMap>()?;
                Some((h.shared_lookup()?, std::ptr::from_ref(h) as usize))
            })
            .collect();
        Ok(Vm {
            arrays,
            hash_lookups,
            plain_lookup,
            kfuncs: resolve_kfuncs(obj),
            cpus,
            maps,
            map_names: obj.maps.iter().map(|m| m.name.clone()).collect(),
            programs,
            static_regions,
            timers,
            clock: Clock::default(),
            async_offsets,
        })
    }

    /// A VM for a bare instruction stream (conformance tests, unit tests):
    /// no maps, one program.
    pub fn from_insns(insns: &[bpfvet_isa::Insn], prog_type: ProgType) -> Result<Vm> {
        Ok(Vm {
            kfuncs: HashMap::new(),
            cpus: 1,
            maps: Vec::new(),
            map_names: Vec::new(),
            programs: vec![Program {
                name: "prog".into(),
                prog_type,
                ops: predecode(insns, &Values(&[]))?,
                proof: Vec::new(),
            }],
            static_regions: Vec::new(),
            timers: Arc::new(Timers::default()),
            clock: Clock::default(),
            async_offsets: Vec::new(),
            plain_lookup: Vec::new(),
            arrays: Vec::new(),
            hash_lookups: Vec::new(),
        })
    }

    /// Verifies program `prog` of `obj` with bpfvet's verifier (the step a
    /// caller takes before running untrusted code). The runtime's own
    /// memory checks stay on unless the returned [`Proof`] is handed to
    /// the VM ([`Vm::set_proof`]), and then only for the accesses it
    /// covers.
    pub fn verify(obj: &Object, prog: usize) -> Result<Proof> {
        use bpfvet_verifier::Verdict;
        let outcome = bpfvet_verifier::verify(obj, prog, &Default::default());
        let name = || {
            obj.programs
                .get(prog)
                .map(|p| p.name.clone())
                .unwrap_or_default()
        };
        // Only a verified program runs: a limit or a refusal is no proof
        // of safety either.
        match outcome.verdict {
            Verdict::Accepted => Ok(Proof {
                insns: obj.programs[prog].insns.clone(),
                accesses: outcome.accesses,
            }),
            Verdict::Rejected { error, insn, .. } | Verdict::LimitExceeded { error, insn, .. } => {
                Err(VmError::Rejected {
                    prog: name(),
                    error,
                    insn,
                })
            }
            Verdict::Unsupported { what, insn } => Err(VmError::Rejected {
                prog: name(),
                error: format!("refused: not modelled by bpfvet: {what}"),
                insn,
            }),
        }
    }

    /// [`Vm::verify`] of program `prog` of `obj` (the object this VM was
    /// loaded from), keeping its [`Proof`] for the JIT.
    pub fn verify_program(&mut self, obj: &Object, prog: usize) -> Result<()> {
        let proof = Vm::verify(obj, prog)?;
        if !self.set_proof(prog, proof) {
            return Err(VmError::Invalid(format!(
                "program #{prog} of this VM is not the one verified"
            )));
        }
        Ok(())
    }

    /// Hands program `prog` what [`Vm::verify`] proved about it: the JIT
    /// then compiles its proven memory accesses to plain loads and stores,
    /// and the interpreter runs them without looking for their region.
    /// A program without a proof keeps every run-time check, in the
    /// interpreter and in the JIT. The proof is kept only if this VM's
    /// code for `prog` is the decoding of the instructions it was made
    /// for, slot for slot; it says whether it was.
    pub fn set_proof(&mut self, prog: usize, proof: Proof) -> bool {
        let Some(p) = self.programs.get_mut(prog) else {
            return false;
        };
        let same = proof.insns.len() + 1 == p.ops.len()
            && proof.insns.iter().zip(&p.ops).all(|(i, o)| {
                (i.code, i.dst, i.src, i.off, i.imm) == (o.code, o.dst, o.src, o.off, o.imm)
                    || o.code == 0 && o.imm64 == 0
            });
        if same {
            for (op, &kinds) in p.ops.iter_mut().zip(&proof.accesses) {
                op.proven = crate::code::proven_flags(kinds);
            }
            p.proof = proof.accesses;
        }
        same
    }

    pub fn program_index(&self, name: &str) -> Result<usize> {
        self.programs
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| VmError::NoSuchProgram(name.to_string()))
    }

    pub fn map(&self, name: &str) -> Option<&Arc<dyn Map>> {
        let i = self.map_names.iter().position(|n| n == name)?;
        self.maps.get(i)
    }
}

/// Where a map value's `struct bpf_timer` and `struct bpf_wq` are, from
/// the object's BTF as the kernel records them at map creation.
fn async_offsets(obj: &Object, def: &MapDef) -> AsyncOffsets {
    let fields = bpfvet_verifier::map_fields(obj.btf.as_ref(), def);
    let off = |name: &str| fields.iter().find(|f| f.name == name).map(|f| f.off);
    AsyncOffsets {
        timer: off("bpf_timer"),
        wq: off("bpf_wq"),
    }
}

/// Names the kfuncs the object calls, from the host's vmlinux BTF (the
/// loader resolved their ids there). Without that BTF the calls stay
/// unnamed and fail when reached.
fn resolve_kfuncs(obj: &Object) -> HashMap<i32, (String, Option<Kfunc>)> {
    let ids: Vec<i32> = obj
        .programs
        .iter()
        .flat_map(|p| p.insns.iter())
        .filter(|i| i.code == 0x85 && i.src == bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL)
        .map(|i| i.imm)
        .collect();
    if ids.is_empty() {
        return HashMap::new();
    }
    let Some(btf) = std::fs::read(bpfvet_object::HOST_VMLINUX)
        .ok()
        .and_then(|b| bpfvet_object::btf::Btf::from_bytes(&b).ok())
    else {
        return HashMap::new();
    };
    ids.into_iter()
        .map(|id| {
            let name = btf.name_of(id as u32).to_string();
            let k = match name.as_str() {
                "bpf_iter_num_new" => Some(Kfunc::IterNumNew),
                "bpf_iter_num_next" => Some(Kfunc::IterNumNext),
                "bpf_iter_num_destroy" => Some(Kfunc::IterNumDestroy),
                "bpf_wq_init" => Some(Kfunc::WqInit),
                "bpf_wq_set_callback_impl" => Some(Kfunc::WqSetCallback),
                "bpf_wq_start" => Some(Kfunc::WqStart),
                _ => None,
            };
            (id, (name, k))
        })
        .collect()
}
