//! A writer of the "newc" cpio archives the kernel unpacks as its initial
//! root file system (an initramfs): directories, regular files and
//! symlinks, every entry owned by root.

/// An archive being built; `finish` closes it with the trailer entry.
#[derive(Default)]
pub struct Cpio {
    out: Vec<u8>,
    next_ino: u32,
    dirs: std::collections::BTreeSet<String>,
}

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const TRAILER: &str = "TRAILER!!!";

impl Cpio {
    pub fn new() -> Cpio {
        Cpio::default()
    }

    /// A directory and its missing parents (`a/b/c` adds `a`, `a/b`, then
    /// `a/b/c`), each once. Leading slashes are dropped: the archive's
    /// paths are relative to the root.
    pub fn dir(&mut self, path: &str) {
        let path = path.trim_matches('/');
        let mut prefix = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if self.dirs.insert(prefix.clone()) {
                let name = prefix.clone();
                self.entry(&name, S_IFDIR | 0o755, &[]);
            }
        }
    }

    /// A regular file with permission bits `perm` (e.g. 0o755), after its
    /// parent directories.
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) {
        let path = path.trim_start_matches('/');
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        self.entry(path, S_IFREG | (perm & 0o7777), data);
    }

    /// A symbolic link at `path` pointing to `target`.
    pub fn symlink(&mut self, path: &str, target: &str) {
        let path = path.trim_start_matches('/');
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        self.entry(path, S_IFLNK | 0o777, target.as_bytes());
    }

    /// The archive bytes, trailer included.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry(TRAILER, 0, &[]);
        self.out
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.next_ino += 1;
        let ino = if name == TRAILER { 0 } else { self.next_ino };
        let nlink = if mode & S_IFDIR != 0 { 2 } else { 1 };
        let fields = [
            ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime
            data.len() as u32,
            0, // devmajor
            0, // devminor
            0, // rdevmajor
            0, // rdevminor
            name.len() as u32 + 1,
            0, // check (unused by newc)
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    /// Header plus name, and data, each end on a 4-byte boundary.
    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads entries back as (name, mode, data), following the format's
    /// definition independently of the writer.
    fn entries(mut b: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let start = b.len();
        loop {
            assert_eq!(&b[..6], b"070701", "magic at offset {}", start - b.len());
            let field = |i: usize| {
                let s = std::str::from_utf8(&b[6 + 8 * i..14 + 8 * i]).unwrap();
                u32::from_str_radix(s, 16).unwrap() as usize
            };
            let (mode, size, namesize) = (field(1) as u32, field(6), field(11));
            let name = std::str::from_utf8(&b[110..110 + namesize - 1])
                .unwrap()
                .to_string();
            assert_eq!(b[110 + namesize - 1], 0, "name is NUL-terminated");
            let data_at = (110 + namesize).div_ceil(4) * 4;
            let data = b[data_at..data_at + size].to_vec();
            let next = (data_at + size).div_ceil(4) * 4;
            b = &b[next..];
            if name == "TRAILER!!!" {
                assert!(b.is_empty(), "nothing after the trailer");
                return out;
            }
            out.push((name, mode, data));
        }
    }

    #[test]
    fn files_come_after_their_directories_and_round_trip() {
        let mut c = Cpio::new();
        c.file("/bin/tool", 0o755, b"\x7fELF12345");
        c.file("objs/0.o", 0o644, b"abc");
        c.symlink("/lib64/ld.so", "/lib/x/ld.so");
        c.dir("bin");
        let bytes = c.finish();
        assert_eq!(bytes.len() % 4, 0);
        let e = entries(&bytes);
        let names: Vec<&str> = e.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "bin",
                "bin/tool",
                "objs",
                "objs/0.o",
                "lib64",
                "lib64/ld.so"
            ]
        );
        assert_eq!(e[0].1, 0o040755);
        assert_eq!(
            (e[1].1, e[1].2.as_slice()),
            (0o100755, &b"\x7fELF12345"[..])
        );
        assert_eq!((e[3].1, e[3].2.as_slice()), (0o100644, &b"abc"[..]));
        assert_eq!(
            (e[5].1, e[5].2.as_slice()),
            (0o120777, &b"/lib/x/ld.so"[..])
        );
    }

    #[test]
    fn an_empty_archive_is_only_the_trailer() {
        let bytes = Cpio::new().finish();
        assert!(entries(&bytes).is_empty());
        // 110-byte header + "TRAILER!!!\0" padded to 124.
        assert_eq!(bytes.len(), 124);
    }
}
