//! Loads every file under the given directories and prints one line each.
use bpfvet_object::{LoadOptions, Object};
fn walk(p: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    if p.is_dir() {
        let mut v: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        for e in v {
            walk(&e, out);
        }
    } else {
        out.push(p.to_owned());
    }
}
fn main() {
    let mut opts = LoadOptions::default();
    opts.preload_target().unwrap();
    let mut files = Vec::new();
    for a in std::env::args().skip(1) {
        walk(a.as_ref(), &mut files);
    }
    for f in files {
        let t = std::time::Instant::now();
        match Object::from_file(&f, &opts) {
            Ok(o) => println!(
                "OK {} maps={} progs={} core_unres={} ext_unres={:?} {:?}",
                f.display(),
                o.maps.len(),
                o.programs.len(),
                o.programs
                    .iter()
                    .map(|p| p.core_unresolved.len())
                    .sum::<usize>(),
                o.unresolved_externs,
                t.elapsed()
            ),
            Err(e) => println!("ERR {e}"),
        }
    }
}
