//! Kernel memory charged to a program load, measured as veristat does: the
//! process moves into a cgroup v2 of its own, `memory.peak` is reset before
//! the load and read after it. Hosts without the cgroup v2 memory controller
//! (cgroup v1 or hybrid mounts) say so instead of printing a number.

use std::fs;
use std::path::{Path, PathBuf};

pub struct MemPeakCgroup {
    dir: PathBuf,
    /// The cgroup v2 directory the process came from, to move back on drop.
    home: PathBuf,
}

impl MemPeakCgroup {
    /// Creates `<cgroup2 mount>/bpfvet-<pid>` and moves this process into it.
    pub fn create() -> Result<MemPeakCgroup, String> {
        let mount = cgroup2_mount().ok_or("no cgroup v2 mount in /proc/self/mounts")?;
        let controllers = fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        if !controllers.split_whitespace().any(|c| c == "memory") {
            return Err(format!(
                "the cgroup v2 memory controller is not enabled at {} (cgroup v1 or hybrid host)",
                mount.display()
            ));
        }
        let own = fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("0::").map(|p| p.trim().to_string()))
            })
            .ok_or("no cgroup v2 entry in /proc/self/cgroup")?;
        let home = mount.join(own.trim_start_matches('/'));
        // The memory controller must be delegated to children of the mount
        // root; writing it again when it already is is harmless.
        let _ = fs::write(mount.join("cgroup.subtree_control"), "+memory");
        let dir = mount.join(format!("bpfvet-{}", std::process::id()));
        if !dir.exists() {
            fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        }
        let cg = MemPeakCgroup { dir, home };
        fs::write(cg.dir.join("cgroup.procs"), std::process::id().to_string())
            .map_err(|e| format!("joining {}: {e}", cg.dir.display()))?;
        if !cg.dir.join("memory.peak").exists() {
            return Err("memory.peak missing (kernel older than 5.19?)".into());
        }
        Ok(cg)
    }

    /// Resets the peak (kernels >= 6.12 accept a write to memory.peak).
    pub fn reset(&self) -> Result<(), String> {
        fs::write(self.dir.join("memory.peak"), "r\n")
            .map_err(|e| format!("reset memory.peak: {e}"))
    }

    pub fn peak_bytes(&self) -> Result<u64, String> {
        let s = fs::read_to_string(self.dir.join("memory.peak"))
            .map_err(|e| format!("read memory.peak: {e}"))?;
        s.trim()
            .parse()
            .map_err(|_| format!("memory.peak is not a number: {s:?}"))
    }
}

impl Drop for MemPeakCgroup {
    fn drop(&mut self) {
        let _ = fs::write(
            self.home.join("cgroup.procs"),
            std::process::id().to_string(),
        );
        let _ = fs::remove_dir(&self.dir);
    }
}

fn cgroup2_mount() -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/self/mounts").ok()?;
    parse_cgroup2_mount(&mounts)
}

fn parse_cgroup2_mount(mounts: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (_dev, path, fstype) = (f.next()?, f.next()?, f.next()?);
        (fstype == "cgroup2").then(|| Path::new(path).to_path_buf())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_among_v1_mounts() {
        let m = "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n\
                 cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n";
        assert_eq!(
            parse_cgroup2_mount(m),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(parse_cgroup2_mount("proc /proc proc rw 0 0\n"), None);
    }
}
