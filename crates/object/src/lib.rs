//! Reads clang/libbpf-style `.bpf.o` files into [`Object`]: the programs with
//! their final instruction stream, the maps, BTF and line info.
//!
//! The instruction stream a [`Program`] carries is what both the bpfvet
//! verifier and the kernel backend consume: subprograms are appended and
//! calls resolved as libbpf does, and every map reference is an LD_IMM64 with
//! `src = BPF_PSEUDO_MAP_IDX` (or `BPF_PSEUDO_MAP_IDX_VALUE`, with the value
//! offset in the second slot's imm) whose imm is an index into
//! [`Object::maps`]. The kernel backend turns those indexes into fds through
//! `fd_array`; the verifier looks the index up directly.
//!
//! Entry points: [`Object::from_file`] and [`Object::parse`] with
//! [`LoadOptions`]; [`btf::Btf::from_bytes`] for any BTF blob (vmlinux too).

pub mod btf;
pub mod btf_check;
pub mod btf_ext;
mod btf_fixup;
mod core_relo;
pub mod dwarf_lines;
mod elf;
pub mod error;
mod externs;
mod kconfig;
pub use kconfig::{parse_config as parse_kernel_config, read_config as read_kernel_config};
mod link;
mod load;
pub mod loader;
mod maps;
pub mod sec_def;
pub mod struct_ops;
pub mod types;

pub use error::{ErrorKind, ObjectError};
pub use load::{
    target_vmlinux, vmlinux_btf_path, LoadOptions, TargetBtf, HOST_VMLINUX, VMLINUX_ENV,
};
pub use loader::Loader;
pub use maps::{internal_map_name, object_name};
pub use types::*;
