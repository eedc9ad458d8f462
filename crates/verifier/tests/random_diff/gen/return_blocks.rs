//! Callback returns (feature `callback_returns`): a callback's r0 of any
//! kind the generator makes, where the other blocks always return 0 or
//! 1 (or a constant out of the callback's range). prepare_func_exit
//! refuses a stack pointer first (`cannot return stack pointer to the
//! caller`), then anything else that is not a scalar (`R0 not a scalar
//! value`), then a scalar out of range.

use super::Gen;
use bpfvet_isa::Insn;

impl Gen {
    /// `r0 = <any kind>; exit` closing a callback body.
    pub(super) fn callback_return_any(&mut self) {
        self.load_kind_into(0);
        self.emit(Insn::new(0x95, 0, 0, 0, 0));
    }
}
