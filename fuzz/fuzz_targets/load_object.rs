//! Any bytes given to the object loader must give an Object or a typed
//! error: no panic, no hang. Objects that load are also dumped through the
//! disassembler, as `bpfvet dump --disasm` would.
#![no_main]

use bpfvet_object::{LoadOptions, Object};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = LoadOptions::offline();
    if let Ok(obj) = Object::parse(data, "fuzz.bpf.o", &opts) {
        for p in &obj.programs {
            let _ = bpfvet_isa::decode_program(&p.insns);
        }
    }
});
