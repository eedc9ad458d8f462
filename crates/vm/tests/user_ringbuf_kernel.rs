//! USER_RINGBUF against the host kernel: the same records produced into
//! the kernel's map (through its mmap interface, as libbpf's producer
//! writes them) and into bpfvet's, then `xdp_dynptr_user_ringbuf` of
//! tests/progs/dynptr.bpf.o run on both; the return values and the
//! consumer position after each run must be equal. Needs root and the
//! bpf() syscall; prints SKIP otherwise.

use std::path::Path;

use bpfvet_kernel::{Kernel, LoadOptions, TestRunInput as KInput};
use bpfvet_maps::user_ringbuf::UserRingBuf;
use bpfvet_object::{LoadOptions as ObjectOptions, Object};
use bpfvet_vm::{test_run, TestRunInput, Vm};

const DISCARD_BIT: u32 = 1 << 30;

/// The kernel map's pages as user space sees them.
struct KernelRing {
    consumer: *mut u8,
    producer: *mut u8,
    page: usize,
    size: u64,
}

impl KernelRing {
    fn map(fd: i32, size: u64) -> KernelRing {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // SAFETY: mapping a BPF map fd; the kernel checks the ranges (the
        // consumer page is read-only for user space; the producer page and
        // the data pages, mapped twice over, are writable).
        let (consumer, producer) = unsafe {
            let c = libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            );
            let p = libc::mmap(
                std::ptr::null_mut(),
                page + 2 * size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                page as libc::off_t,
            );
            assert!(c != libc::MAP_FAILED && p != libc::MAP_FAILED, "mmap");
            (c as *mut u8, p as *mut u8)
        };
        KernelRing {
            consumer,
            producer,
            page,
            size,
        }
    }

    fn consumer_pos(&self) -> u64 {
        // SAFETY: the first word of the mapped consumer page.
        unsafe { std::ptr::read_volatile(self.consumer as *const u64) }
    }

    /// One record as libbpf's producer writes it (no one consumes while
    /// the test writes, so the header gets its final value at once).
    fn produce(&self, data: &[u8], discard: bool) {
        // SAFETY: the producer position and the data area are mapped
        // writable; a record (at most the ring size) fits after its
        // position modulo the size, in the doubled mapping.
        unsafe {
            let prod_ptr = self.producer as *mut u64;
            let prod = std::ptr::read_volatile(prod_ptr);
            let total = (data.len() as u64 + 8 + 7) & !7;
            assert!(self.size - (prod - self.consumer_pos()) >= total, "room");
            let rec = self
                .producer
                .add(self.page + (prod & (self.size - 1)) as usize);
            let len = data.len() as u32 | if discard { DISCARD_BIT } else { 0 };
            std::ptr::write_volatile(rec as *mut u32, len);
            std::ptr::write_volatile(rec.add(4) as *mut u32, 0);
            std::ptr::copy_nonoverlapping(data.as_ptr(), rec.add(8), data.len());
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            std::ptr::write_volatile(prod_ptr, prod + total);
        }
    }
}

impl Drop for KernelRing {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped.
        unsafe {
            libc::munmap(self.consumer as *mut libc::c_void, self.page);
            libc::munmap(
                self.producer as *mut libc::c_void,
                self.page + 2 * self.size as usize,
            );
        }
    }
}

/// A record: its bytes, and whether the producer discards it.
type Record = (Vec<u8>, bool);

fn word(v: u32) -> Record {
    (v.to_le_bytes().to_vec(), false)
}

/// Batches of records, each followed by one run. Expected by reading the
/// program: the sum of the samples' first words, odd -> XDP_DROP; a sample
/// shorter than 4 bytes stops the drain and stays queued for the next run.
fn scenario() -> Vec<Vec<Record>> {
    let mut batches = vec![
        vec![],
        vec![word(1), word(2)],
        vec![],
        vec![(vec![0; 12], true), word(5)],
        vec![(vec![9, 9], false), word(3)],
        vec![],
        vec![word(7); 40],
    ];
    // Records of varying length (some with a header near the end of the
    // 4096-byte ring) wrap it several times.
    for i in 0..40u32 {
        let mut big = vec![0u8; 300 + (i as usize * 37) % 500];
        big[..4].copy_from_slice(&i.to_le_bytes());
        batches.push(vec![
            (big, i % 5 == 0),
            word(i * 3),
            (vec![1; 1 + i as usize % 7], false),
        ]);
    }
    batches
}

#[test]
fn user_ringbuf_drain_agrees_with_kernel() {
    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs/dynptr.bpf.o");
    let obj = Object::from_file(path, &ObjectOptions::default()).expect("dynptr.bpf.o");
    let idx = obj
        .programs
        .iter()
        .position(|p| p.name == "xdp_dynptr_user_ringbuf")
        .unwrap();
    let session = kernel.open_object(&obj);
    let report = session.load_program(idx, &LoadOptions::default()).unwrap();
    let kprog = report.loaded.expect("the kernel loads it");
    let kmap = session.map_by_name("commands").expect("commands map");
    let vm = Vm::load(&obj).unwrap();
    let ours = vm
        .map("commands")
        .and_then(|m| m.as_any().downcast_ref::<UserRingBuf>())
        .expect("USER_RINGBUF");
    let kring = KernelRing::map(kmap.fd().raw(), ours.size());
    let frame = [0u8; 64];
    let mut verdicts = Vec::new();
    for (n, batch) in scenario().iter().enumerate() {
        for (data, discard) in batch {
            kring.produce(data, *discard);
            let p = ours.reserve(data.len() as u32).unwrap();
            // SAFETY: the reservation holds data.len() bytes.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p.as_ptr(), data.len()) };
            if *discard {
                ours.discard(p).unwrap();
            } else {
                ours.submit(p).unwrap();
            }
        }
        let k = kprog
            .test_run(&KInput {
                data: &frame,
                data_out_size: 4096,
                repeat: 1,
                ..Default::default()
            })
            .expect("kernel test_run");
        let v = test_run(
            &vm,
            idx,
            &TestRunInput {
                data: &frame,
                ctx: None,
                repeat: 1,
                cpu: 0,
            },
        )
        .expect("vm test_run");
        assert_eq!(k.retval, v.retval, "batch {n}: retval");
        assert_eq!(
            kring.consumer_pos(),
            ours.consumer_pos(),
            "batch {n}: consumer position"
        );
        verdicts.push(k.retval);
    }
    // The scenario exercises both outcomes, and the ring wrapped.
    assert!(
        verdicts.contains(&1) && verdicts.contains(&2),
        "{verdicts:?}"
    );
    assert!(kring.consumer_pos() > 3 * ours.size());
}
