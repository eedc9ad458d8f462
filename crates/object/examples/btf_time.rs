//! Times parsing a BTF file (default: the host's vmlinux) and one name lookup.
use bpfvet_object::btf::{Btf, Kind};
fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/sys/kernel/btf/vmlinux".into());
    let bytes = std::fs::read(&path).expect("readable BTF");
    let mut times = Vec::new();
    for _ in 0..11 {
        let t = std::time::Instant::now();
        let btf = Btf::from_bytes(&bytes).expect("valid BTF");
        times.push(t.elapsed());
        std::hint::black_box(btf);
    }
    times.sort();
    let btf = Btf::from_bytes(&bytes).unwrap();
    let t = std::time::Instant::now();
    let id = btf.find_by_name_kind("task_struct", Kind::Struct);
    let first = t.elapsed();
    let t = std::time::Instant::now();
    let id2 = btf.find_by_name_kind("bpf_iter_num_new", Kind::Func);
    let second = t.elapsed();
    println!(
        "{} bytes, {} types: parse median {:?}; lookup {:?} ({first:?}), {:?} ({second:?})",
        bytes.len(),
        btf.len(),
        times[5],
        id,
        id2
    );
}
