//! Decoder, printer and assembler on arbitrary bytes: no panics, and every
//! program the decoder accepts comes back unchanged through the text form.
#![no_main]

use bpfvet_isa::asm::assemble;
use bpfvet_isa::disasm::{write_log_line, NoSymbols};
use bpfvet_isa::{decode_program, encode_program, insns_from_bytes, Instruction};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = data.len() - data.len() % 8;
    let Ok(insns) = insns_from_bytes(&data[..whole]) else {
        return;
    };
    match decode_program(&insns) {
        Ok(program) => {
            let typed: Vec<Instruction> = program.iter().map(|l| l.insn).collect();
            assert_eq!(encode_program(&typed), insns);
            let mut text = String::new();
            for l in &program {
                write_log_line(&mut text, l.pc, &l.insn, &NoSymbols).unwrap();
                text.push('\n');
            }
            let back = assemble(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(encode_program(&back), insns);
        }
        Err(e) => assert!(e.index < insns.len()),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = assemble(text);
    }
});
