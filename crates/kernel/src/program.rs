//! A program loaded in the kernel, and BPF_PROG_TEST_RUN on it.

use crate::sys::{self, bpf, Cmd, Errno, Fd, TestRunAttr};

#[derive(Debug)]
pub struct LoadedProgram {
    pub(crate) fd: Fd,
}

/// Input of one BPF_PROG_TEST_RUN call.
#[derive(Clone, Debug, Default)]
pub struct TestRunInput<'a> {
    pub data: &'a [u8],
    /// Capacity for data out; 0 asks for no data back.
    pub data_out_size: usize,
    pub ctx: Option<&'a [u8]>,
    pub ctx_out_size: usize,
    /// Run count (0 and 1 both run once).
    pub repeat: u32,
    pub flags: u32,
    pub cpu: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestRunOutput {
    pub retval: u32,
    /// Mean duration of one run in ns, as the kernel reports it.
    pub duration_ns: u32,
    /// Data out, truncated to the size the kernel wrote.
    pub data_out: Vec<u8>,
    pub ctx_out: Vec<u8>,
}

impl LoadedProgram {
    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    pub fn test_run(&self, input: &TestRunInput<'_>) -> Result<TestRunOutput, Errno> {
        let mut data_out = vec![0u8; input.data_out_size];
        let mut ctx_out = vec![0u8; input.ctx_out_size];
        let ctx = input.ctx.unwrap_or(&[]);
        let mut attr = TestRunAttr {
            prog_fd: self.fd.raw() as u32,
            data_size_in: len_u32(input.data.len())?,
            data_in: ptr_or_null(input.data),
            data_size_out: len_u32(data_out.len())?,
            data_out: ptr_or_null(&data_out),
            repeat: input.repeat,
            ctx_size_in: len_u32(ctx.len())?,
            ctx_in: ptr_or_null(ctx),
            ctx_size_out: len_u32(ctx_out.len())?,
            ctx_out: ptr_or_null(&ctx_out),
            flags: input.flags,
            cpu: input.cpu,
            ..Default::default()
        };
        bpf(Cmd::ProgTestRun, &mut attr)?;
        data_out.truncate(attr.data_size_out as usize);
        ctx_out.truncate(attr.ctx_size_out as usize);
        Ok(TestRunOutput {
            retval: attr.retval,
            duration_ns: attr.duration,
            data_out,
            ctx_out,
        })
    }
}

fn len_u32(n: usize) -> Result<u32, Errno> {
    u32::try_from(n).map_err(|_| Errno::E2BIG)
}

/// The kernel wants a NULL pointer for an empty buffer.
fn ptr_or_null(b: &[u8]) -> u64 {
    if b.is_empty() {
        0
    } else {
        sys::ptr(b.as_ptr())
    }
}
