//! Objects a program allocates from its own BTF types (bpf_obj_new,
//! bpf_obj_drop, bpf_refcount_acquire) and the arguments of the BPF graph
//! kfuncs (lists and rbtrees) built from them.
//!
//! An allocated object is a `RegType::Alloc` register (the kernel's
//! PTR_TO_BTF_ID | MEM_ALLOC): `aux` is the struct's id in the program's
//! BTF, `ref_obj_id` the reference bpf_obj_new acquired, and `id` names the
//! allocation for its bpf_spin_lock (kept after the NULL check when the
//! struct has a lock, as for map values). Its special fields come from the
//! struct's record (map_record::alloc_fields).
//!
//! Modelled: allocation, drop, refcount_acquire, loads and stores of plain
//! fields, bpf_spin_lock on the object's lock; the list and rbtree kfuncs
//! under the lock of their root: a node handed to a graph becomes a
//! non-owning reference (`flag::NON_OWN_REF`, MEM_RCU too for refcounted
//! objects) that dies at bpf_spin_unlock, a node taken out is an owning
//! one, and bpf_rbtree_add's `less` runs as a callback on two non-owning
//! nodes; RCU-protected objects loaded from kptr fields (kptr.rs) or given
//! by bpf_this_cpu_ptr / bpf_per_cpu_ptr. Refused by name: objects reached
//! without a reference of either kind and outside RCU protection.

use crate::check_mem::Access;
use crate::error::VResult;
use crate::explore::Env;
use crate::kfunc::KfuncMeta;
use crate::map_record::{alloc_fields, struct_metas_ok, Field};
use crate::regs::{flag, Reg, RegType};
use crate::state::RefKind;
use bpfvet_object::btf::Kind;

/// The lock key (`State::lock.0`) of a bpf_spin_lock inside an allocated
/// object: the kernel keys those by the program's BTF, not by a map.
pub const ALLOC_LOCK: u32 = u32::MAX - 1;

/// The graph argument kinds of get_kfunc_ptr_arg_type, by the struct the
/// parameter points to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GraphArg {
    ListHead,
    ListNode,
    RbRoot,
    RbNode,
}

impl GraphArg {
    pub fn from_struct_name(name: &str) -> Option<GraphArg> {
        match name {
            "bpf_list_head" => Some(GraphArg::ListHead),
            "bpf_list_node" => Some(GraphArg::ListNode),
            "bpf_rb_root" => Some(GraphArg::RbRoot),
            "bpf_rb_node" => Some(GraphArg::RbNode),
            _ => None,
        }
    }
    fn field_name(self) -> &'static str {
        match self {
            GraphArg::ListHead => "bpf_list_head",
            GraphArg::ListNode => "bpf_list_node",
            GraphArg::RbRoot => "bpf_rb_root",
            GraphArg::RbNode => "bpf_rb_node",
        }
    }
    fn is_root(self) -> bool {
        matches!(self, GraphArg::ListHead | GraphArg::RbRoot)
    }
}

/// What the graph arguments of one kfunc call found.
#[derive(Default, Clone, Copy)]
pub struct GraphMeta {
    /// The root argument's field (its `__contains` tag).
    pub root: Option<Field>,
    /// The struct of an allocated-object argument (meta->arg_btf_id).
    pub arg_btf_id: Option<u32>,
    /// The subprogram of bpf_rbtree_add's `less` callback.
    pub callback: Option<u32>,
    /// bpf_refcount_acquire was given an owning reference: it cannot fail.
    pub arg_owning_ref: bool,
}

impl Env<'_> {
    /// The record of struct `id` of the program's BTF as an allocated
    /// object; a malformed one fails the program's load, which bpfvet does
    /// not model.
    pub(crate) fn alloc_record(&self, id: u32) -> VResult<Vec<Field>> {
        let Some(btf) = self.obj.btf.as_ref() else {
            return Ok(Vec::new());
        };
        if let Some(r) = self.alloc_records.borrow().get(&id) {
            return r.clone().or_else(|()| {
                self.unsupported(format!("the malformed BTF record of type id {id}"))
            });
        }
        let r = alloc_fields(btf, id);
        self.alloc_records.borrow_mut().insert(id, r.clone());
        r.or_else(|()| self.unsupported(format!("the malformed BTF record of type id {id}")))
    }

    /// The program's BTF must be one the kernel loads: a struct whose
    /// special fields it rejects fails BPF_BTF_LOAD, and libbpf then loads
    /// the program without BTF, a fallback bpfvet does not model.
    fn require_loadable_btf(&self) -> VResult<()> {
        let Some(btf) = self.obj.btf.as_ref() else {
            return Ok(());
        };
        if let Err(name) = self.btf_metas_ok.get_or_init(|| struct_metas_ok(btf)) {
            return self.unsupported(format!(
                "program BTF the kernel refuses (the special fields of struct {name})"
            ));
        }
        Ok(())
    }

    /// reg_may_point_to_spin_lock for an allocated object.
    pub(crate) fn alloc_has_spin_lock(&self, id: u32) -> bool {
        self.alloc_record(id)
            .is_ok_and(|r| crate::map_record::lock_field(&r).is_some())
    }

    fn prog_type_name(&self, id: u32) -> String {
        self.obj
            .btf
            .as_ref()
            .map_or(String::new(), |b| b.name_of(id).to_string())
    }

    /// R0 of bpf_obj_new_impl (check_special_kfunc): an object of the
    /// program's struct the constant names.
    pub(crate) fn obj_new_r0(&mut self, meta: &KfuncMeta) -> VResult<Reg> {
        let id = self.obj_new_type_id(meta)?;
        // A malformed record would have failed the load.
        self.alloc_record(id)?;
        let mut r0 = Reg::pointer(RegType::Alloc);
        r0.aux = id;
        Ok(r0)
    }

    /// The type id bpf_obj_new_impl / bpf_percpu_obj_new_impl allocate:
    /// a constant naming a struct of the program's BTF.
    pub(crate) fn obj_new_type_id(&mut self, meta: &KfuncMeta) -> VResult<u32> {
        let value = meta.arg_constant.unwrap_or(0);
        if value > u32::MAX as u64 {
            return self.err("local type ID argument must be in range [0, U32_MAX]");
        }
        // The program has BTF of its own only when it is loaded with
        // func_info (an object's BTF may serve its maps alone).
        let prog_btf = self
            .obj
            .btf
            .as_ref()
            .filter(|_| !self.prog.func_info.is_empty());
        let Some(btf) = prog_btf else {
            return self.err("bpf_obj_new/bpf_percpu_obj_new requires prog BTF");
        };
        self.require_loadable_btf()?;
        let id = value as u32;
        // __btf_type_is_struct: a struct, not a union.
        let is_struct = btf.type_by_id(id).is_some_and(|t| t.kind == Kind::Struct);
        if !is_struct {
            return self.err("bpf_obj_new/bpf_percpu_obj_new type ID argument must be of a struct");
        }
        Ok(id)
    }

    /// R0 of bpf_refcount_acquire_impl: another owning reference to the
    /// argument's object.
    pub(crate) fn refcount_acquire_r0(&mut self, g: &GraphMeta) -> VResult<Reg> {
        let Some(id) = g.arg_btf_id else {
            return self.unsupported("bpf_refcount_acquire without an allocated object argument");
        };
        let mut r0 = Reg::pointer(RegType::Alloc);
        r0.aux = id;
        Ok(r0)
    }

    /// KF_ARG_PTR_TO_ALLOC_BTF_ID (bpf_obj_drop's `p__alloc`), after the
    /// trusted and offset checks.
    pub(crate) fn check_alloc_obj_arg(
        &mut self,
        i: usize,
        reg: &Reg,
        meta: &KfuncMeta,
        g: &mut GraphMeta,
    ) -> VResult<()> {
        if reg.ty == RegType::Alloc && reg.flags == 0 {
            if meta.name != "bpf_obj_drop_impl" {
                return self.err(format!("arg#{i} expected for bpf_obj_drop_impl()"));
            }
        } else if reg.ty == RegType::Alloc && reg.flags == flag::PERCPU {
            if meta.name != "bpf_percpu_obj_drop_impl" {
                return self.err(format!("arg#{i} expected for bpf_percpu_obj_drop_impl()"));
            }
        } else {
            return self.err(format!("arg#{i} expected pointer to allocated object"));
        }
        if reg.ref_obj_id == 0 {
            return self.err("allocated object must be referenced");
        }
        g.arg_btf_id = Some(reg.aux);
        Ok(())
    }

    /// KF_ARG_PTR_TO_REFCOUNTED_KPTR (bpf_refcount_acquire's argument).
    pub(crate) fn check_refcounted_kptr_arg(
        &mut self,
        i: usize,
        reg: &Reg,
        g: &mut GraphMeta,
    ) -> VResult<()> {
        if reg.ty != RegType::Alloc {
            return self.err(format!("arg#{i} is neither owning or non-owning ref"));
        }
        if reg.flags & flag::NON_OWN_REF == 0 {
            if reg.ref_obj_id == 0 {
                // Pointers loaded from kptr fields are not modelled.
                return self.unsupported(
                    "bpf_refcount_acquire of an allocated object without its reference",
                );
            }
            g.arg_owning_ref = true;
        }
        let rec = self.alloc_record(reg.aux)?;
        // A struct without special fields has no record at all, which the
        // kernel reports as its own bug.
        if rec.is_empty() {
            return self.err("verifier bug: Couldn't find btf_record");
        }
        if !rec.iter().any(|f| f.name == "bpf_refcount") {
            return self.err(format!(
                "arg#{i} doesn't point to a type with bpf_refcount field"
            ));
        }
        g.arg_btf_id = Some(reg.aux);
        Ok(())
    }

    /// A list head / rb root, list node or rb node argument of a graph
    /// kfunc (the kernel's KF_ARG_PTR_TO_LIST_HEAD ... cases).
    pub(crate) fn check_graph_arg(
        &mut self,
        kind: GraphArg,
        i: usize,
        regno: u8,
        reg: &Reg,
        meta: &KfuncMeta,
        g: &mut GraphMeta,
    ) -> VResult<()> {
        self.require_loadable_btf()?;
        if kind.is_root() {
            if !matches!(reg.ty, RegType::MapValue | RegType::Alloc) || reg.flags != 0 {
                return self.err(format!(
                    "arg#{i} expected pointer to map value or allocated object"
                ));
            }
            if reg.ty == RegType::Alloc && reg.ref_obj_id == 0 {
                return self.err("allocated object must be referenced");
            }
            return self.check_graph_root(kind, regno, reg, g);
        }
        let rbtree_add = meta.name == "bpf_rbtree_add_impl";
        if kind == GraphArg::ListNode || rbtree_add {
            if reg.ty != RegType::Alloc || reg.flags != 0 {
                return self.err(format!("arg#{i} expected pointer to allocated object"));
            }
            if reg.ref_obj_id == 0 {
                return self.err("allocated object must be referenced");
            }
        } else {
            // bpf_rbtree_remove / left / right.
            let non_owning = reg.ty == RegType::Alloc && reg.flags & flag::NON_OWN_REF != 0;
            if !non_owning && reg.ref_obj_id == 0 {
                return self.err(format!(
                    "{} can only take non-owning or refcounted bpf_rb_node pointer",
                    meta.name
                ));
            }
            if self.in_rbtree_cb() {
                return self.err(format!("{} not allowed in rbtree cb", meta.name));
            }
            if reg.ty != RegType::Alloc {
                return self.unsupported(format!(
                    "{}: a node argument that is not an allocated object",
                    meta.name
                ));
            }
        }
        self.check_graph_node(kind, regno, reg, g)
    }

    /// __process_kf_arg_ptr_to_graph_root.
    fn check_graph_root(
        &mut self,
        kind: GraphArg,
        regno: u8,
        reg: &Reg,
        g: &mut GraphMeta,
    ) -> VResult<()> {
        let name = kind.field_name();
        if !reg.v.is_const() {
            return self.err(format!(
                "R{regno} doesn't have constant offset. {name} has to be at the constant offset"
            ));
        }
        let rec: Vec<Field> = if reg.ty == RegType::MapValue {
            self.map_fields(reg.map).to_vec()
        } else {
            self.alloc_record(reg.aux)?
        };
        let off = (reg.off as i64).wrapping_add(reg.v.const_value() as i64) as u32;
        let Some(field) = rec.iter().find(|f| f.off == off && f.name == name).copied() else {
            return self.err(format!("{name} not found at offset={off}"));
        };
        if !self.reg_allocation_locked(reg) {
            let lock_off = rec
                .iter()
                .find(|f| f.name == "bpf_spin_lock")
                .map_or(-22, |f| f.off as i64);
            return self.err(format!(
                "bpf_spin_lock at off={lock_off} must be held for {name}"
            ));
        }
        if field.graph.is_none() {
            return self.unsupported(format!("a {name} without the type it contains"));
        }
        g.root = Some(field);
        Ok(())
    }

    /// check_reg_allocation_locked: the lock held is the one of the
    /// allocation `reg` points into (logs why not).
    fn reg_allocation_locked(&mut self, reg: &Reg) -> bool {
        if self.cur.active_locks == 0 {
            return false;
        }
        let key = if reg.ty == RegType::Alloc {
            ALLOC_LOCK
        } else {
            reg.map
        };
        let locks = [RefKind::Lock, RefKind::ResLock, RefKind::ResLockIrq];
        if !crate::spin_lock::find_lock(&self.cur, &locks, key, reg.id) {
            self.log
                .line("held lock and object are not in the same allocation");
            return false;
        }
        true
    }

    /// __process_kf_arg_ptr_to_graph_node.
    fn check_graph_node(
        &mut self,
        kind: GraphArg,
        regno: u8,
        reg: &Reg,
        g: &mut GraphMeta,
    ) -> VResult<()> {
        let name = kind.field_name();
        if !reg.v.is_const() {
            return self.err(format!(
                "R{regno} doesn't have constant offset. {name} has to be at the constant offset"
            ));
        }
        let off = (reg.off as i64).wrapping_add(reg.v.const_value() as i64) as u32;
        let rec = self.alloc_record(reg.aux)?;
        if !rec.iter().any(|f| f.off == off && f.name == name) {
            return self.err(format!("{name} not found at offset={off}"));
        }
        let Some(root) = g.root.and_then(|f| f.graph) else {
            return self.unsupported(format!("a {name} argument without its root"));
        };
        let root_name = if kind == GraphArg::ListNode {
            "bpf_list_head"
        } else {
            "bpf_rb_root"
        };
        let value_name = self.prog_type_name(root.value_btf_id);
        if reg.aux != root.value_btf_id {
            return self.err(format!(
                "operation on {root_name} expects arg#1 {name} at offset={} in struct {value_name}, but arg is at offset={off} in struct {}",
                root.node_off,
                self.prog_type_name(reg.aux)
            ));
        }
        if off != root.node_off {
            return self.err(format!(
                "arg#1 offset={off}, but expected {name} at offset={} in struct {value_name}",
                root.node_off
            ));
        }
        g.arg_btf_id = Some(reg.aux);
        Ok(())
    }

    /// A load or store through an allocated object (check_ptr_to_btf_access
    /// and btf_struct_access for a program type): not at its special
    /// fields; a loaded pointer is a scalar.
    pub(crate) fn alloc_access(
        &mut self,
        regno: u8,
        reg: &Reg,
        off: i32,
        size: u32,
        access: Access,
        value: Option<u8>,
    ) -> VResult<()> {
        let tname = self.prog_type_name(reg.aux);
        if off < 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} invalid negative access: off={off}"
            ));
        }
        if !reg.v.is_const() || reg.v.const_value() != 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} invalid variable offset: off={off}, var_off={}",
                crate::check_alu::tnum_str(&reg.v)
            ));
        }
        if reg.flags & flag::PERCPU != 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} access percpu memory: off={off}"
            ));
        }
        if access == Access::Write && reg.flags & flag::UNTRUSTED != 0 {
            // Untrusted after bpf_rcu_read_unlock: the 6.18.44 host refuses
            // the write with its read-only line, in every program type
            // (6.18.15's source would report its own bug instead).
            return self.err("only read is supported");
        }
        if reg.ref_obj_id == 0 && reg.flags & (flag::NON_OWN_REF | flag::RCU) == 0 {
            // The kernel reports an object with neither as its own bug.
            return self.err("verifier bug: ref_obj_id for allocated object must be non-zero");
        }
        let rec = self.alloc_record(reg.aux)?;
        let (lo, hi) = (off as i64, off as i64 + size as i64);
        if let Some(f) = rec
            .iter()
            .find(|f| lo < f.off as i64 + f.size as i64 && (f.off as i64) < hi)
        {
            return self.err(format!("direct access to {} is disallowed", f.name));
        }
        let Some(btf) = self.obj.btf.as_ref() else {
            return self.unsupported("allocated objects without program BTF");
        };
        // A pointer member to a struct reads as a scalar; one to anything
        // else as read-only untrusted memory of no size (WALK_PTR_UNTRUSTED).
        let loaded = match crate::btf_walk::local_field_at(btf, reg.aux, off as u32, size) {
            Ok(true) => Reg::unknown_scalar(),
            Ok(false) => {
                let mut r = Reg::pointer(RegType::Mem);
                r.flags = flag::RDONLY | flag::UNTRUSTED;
                r
            }
            Err(e) => return self.err(e),
        };
        if access == Access::Read {
            if let Some(d) = value {
                *self.cur.reg_mut(d) = loaded;
            }
        }
        Ok(())
    }

    /// invalidate_non_owning_refs: at a bpf_spin_unlock, the references
    /// to nodes in the graphs it protected become unusable.
    pub(crate) fn invalidate_non_owning_refs(&mut self) {
        let invalid = self.invalid_reg();
        self.cur.for_each_reg_mut(|r| {
            if r.ty == RegType::Alloc && r.flags & flag::NON_OWN_REF != 0 {
                *r = invalid;
            }
        });
    }

    /// ref_set_non_owning: a node left in its graph, usable while the lock
    /// is held; MEM_RCU too when its object is refcounted.
    pub(crate) fn set_non_owning(&self, r: &mut Reg) -> VResult<()> {
        if self.cur.active_locks == 0 || r.flags & flag::NON_OWN_REF != 0 {
            return self.unsupported("a non-owning reference outside a bpf_spin_lock region");
        }
        r.flags |= flag::NON_OWN_REF;
        if self
            .alloc_record(r.aux)?
            .iter()
            .any(|f| f.name == "bpf_refcount")
        {
            r.flags |= flag::RCU;
        }
        Ok(())
    }

    /// After bpf_list_push_*: the node's owning reference becomes
    /// non-owning in every register that holds it
    /// (ref_convert_owning_non_owning), then is released.
    pub(crate) fn node_to_non_owning(&mut self, ref_obj_id: u32) -> VResult<()> {
        if ref_obj_id == 0 || !self.cur.refs.iter().any(|r| r.id == ref_obj_id) {
            return self.unsupported("a graph node without its reference");
        }
        let rcu = {
            let mut aux = None;
            self.cur.for_each_reg_mut(|r| {
                if r.ref_obj_id == ref_obj_id && r.ty == RegType::Alloc {
                    aux = Some(r.aux);
                }
            });
            match aux {
                Some(a) => self
                    .alloc_record(a)?
                    .iter()
                    .any(|f| f.name == "bpf_refcount"),
                None => false,
            }
        };
        let mut bad = false;
        self.cur.for_each_reg_mut(|r| {
            if r.ref_obj_id != ref_obj_id {
                return;
            }
            if r.ty != RegType::Alloc || r.flags & flag::NON_OWN_REF != 0 {
                bad = true;
                return;
            }
            r.ref_obj_id = 0;
            r.flags |= flag::NON_OWN_REF;
            if rcu {
                r.flags |= flag::RCU;
            }
        });
        if bad {
            return self.unsupported("a graph node's reference held by other kinds of register");
        }
        self.release_reference(ref_obj_id)
    }

    /// in_rbtree_lock_required_cb: running a callback of an rbtree kfunc
    /// (bpf_rbtree_add's `less`), under the caller's lock.
    pub(crate) fn in_rbtree_cb(&self) -> bool {
        let f = self.cur.frame();
        self.cur.curframe() > 0
            && f.in_callback_fn
            && usize::try_from(f.callsite)
                .ok()
                .and_then(|c| self.insns.get(c))
                .is_some_and(|i| {
                    i.src == bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL
                        && crate::btf_walk::vmlinux().is_some_and(|b| {
                            b.type_by_id(i.imm as u32).is_some_and(|t| {
                                crate::helpers::kfuncs::RBTREE_KFUNCS.contains(&b.name(t))
                            })
                        })
                })
    }

    /// Queues bpf_rbtree_add's `less(a, b)` (push_callback_call with
    /// set_rbtree_add_callback_state): both arguments are non-owning
    /// references to nodes of the root's `__contains` type.
    pub(crate) fn push_rbtree_less(&mut self, g: &GraphMeta) -> VResult<()> {
        let Some(sub) = g.callback else {
            return self.unsupported("bpf_rbtree_add without its callback");
        };
        let mut node = self.graph_node_r0("bpf_rb_node", g)?;
        self.set_non_owning(&mut node)?;
        self.push_callback(sub, u32::MAX)?;
        let Some(callee) = self.pending.last_mut().and_then(|p| p.st.frames.last_mut()) else {
            return self.unsupported("bpf_rbtree_add's callback frame");
        };
        callee.regs[1] = node;
        callee.regs[2] = node;
        for r in &mut callee.regs[3..=5] {
            *r = Reg::not_init();
        }
        Ok(())
    }

    /// R0 of a graph kfunc that returns a node (mark_reg_graph_node): the
    /// object of the root's `__contains` type, pointing at its node.
    pub(crate) fn graph_node_r0(&self, node_type: &str, g: &GraphMeta) -> VResult<Reg> {
        let Some(root) = g.root.and_then(|f| f.graph) else {
            return self.unsupported(format!("a {node_type} return without its root"));
        };
        let mut r0 = Reg::pointer(RegType::Alloc);
        r0.aux = root.value_btf_id;
        r0.off = root.node_off as i32;
        Ok(r0)
    }
}
