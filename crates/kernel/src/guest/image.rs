//! Which kernel a guest boots: a Debian kernel by version (`6.1`, `6.12`,
//! `6.18`), fetched once with apt into the user's cache, or a `vmlinuz`
//! file given by path.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A kernel named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelSpec {
    /// The running kernel, through bpf(2) directly.
    Host,
    /// A Debian kernel series or release, `6.18` or `6.18.15`.
    Version(String),
    /// A bzImage to boot as it is.
    Path(PathBuf),
}

impl KernelSpec {
    /// `host`, a version (`6.18`), or a path (anything with a `/`, or a
    /// file that exists).
    pub fn parse(text: &str) -> Result<KernelSpec, String> {
        let t = text.trim();
        if t == "host" {
            return Ok(KernelSpec::Host);
        }
        if t.contains('/') || Path::new(t).is_file() {
            return Ok(KernelSpec::Path(PathBuf::from(t)));
        }
        let parts: Vec<&str> = t.split('.').collect();
        if (2..=3).contains(&parts.len())
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Ok(KernelSpec::Version(t.to_string()));
        }
        Err(format!(
            "'{text}' is not a kernel: 'host', a Debian kernel version (6.1, 6.12, 6.18) \
             or the path of a vmlinuz"
        ))
    }

    /// How rows and columns name this kernel.
    pub fn label(&self) -> String {
        match self {
            KernelSpec::Host => "host".into(),
            KernelSpec::Version(v) => v.clone(),
            KernelSpec::Path(p) => p.display().to_string(),
        }
    }
}

/// A kernel image ready to boot.
#[derive(Clone, Debug)]
pub struct GuestKernel {
    pub label: String,
    pub vmlinuz: PathBuf,
    /// Its build configuration, for the objects' `CONFIG_*` externs.
    pub config: Option<PathBuf>,
    /// The package it came from, when fetched.
    pub package: Option<String>,
}

/// `$XDG_CACHE_HOME/bpfvet/kernels`, else `~/.cache/bpfvet/kernels`.
pub fn cache_root() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("bpfvet").join("kernels"))
}

/// The image for `spec` (not `Host`): a path as given; a version from the
/// cache, fetched into it first when missing (`note` tells the user).
pub fn resolve(spec: &KernelSpec, note: &dyn Fn(&str)) -> Result<GuestKernel, String> {
    match spec {
        KernelSpec::Host => Err("the host kernel is not booted in a guest".into()),
        KernelSpec::Path(p) => {
            if !p.is_file() {
                return Err(format!("kernel image '{}' not found", p.display()));
            }
            Ok(GuestKernel {
                label: spec.label(),
                vmlinuz: p.clone(),
                config: None,
                package: None,
            })
        }
        KernelSpec::Version(v) => {
            let root = cache_root().ok_or("no cache directory: set XDG_CACHE_HOME or HOME")?;
            let dir = root.join(v);
            if !dir.join("vmlinuz").is_file() {
                fetch_debian(v, &root, &dir, note)?;
            }
            let config = dir.join("config");
            Ok(GuestKernel {
                label: v.clone(),
                vmlinuz: dir.join("vmlinuz"),
                config: config.is_file().then_some(config),
                package: std::fs::read_to_string(dir.join("package"))
                    .ok()
                    .map(|s| s.trim().to_string()),
            })
        }
    }
}

/// Debian suites searched for kernels: 6.1 in bookworm, 6.12 in trixie,
/// newer ones in trixie-backports and sid.
const SUITES: [&str; 4] = ["bookworm", "trixie", "trixie-backports", "sid"];
const MIRROR: &str = "http://deb.debian.org/debian";
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// apt options that keep every file of ours under `apt_dir`, away from
/// the system's sources, lists and package state.
fn apt_options(apt_dir: &Path) -> Vec<String> {
    let d = |sub: &str| apt_dir.join(sub).display().to_string();
    vec![
        format!("-oDir::Etc::SourceList={}", d("sources.list")),
        "-oDir::Etc::SourceParts=/dev/null".into(),
        format!("-oDir::State::Lists={}", d("lists")),
        format!("-oDir::Cache={}", d("cache")),
        "-oDir::State::status=/dev/null".into(),
        "-oAPT::Architecture=amd64".into(),
        "-oAPT::Sandbox::User=root".into(),
        "-qq".into(),
    ]
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{what} failed ({}): {}", out.status, err.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn fetch_debian(version: &str, root: &Path, dir: &Path, note: &dyn Fn(&str)) -> Result<(), String> {
    let apt_dir = root.join("apt");
    for sub in ["lists/partial", "cache/archives/partial"] {
        std::fs::create_dir_all(apt_dir.join(sub))
            .map_err(|e| format!("{}: {e}", apt_dir.display()))?;
    }
    let sources: String = SUITES
        .iter()
        .map(|s| format!("deb [signed-by={KEYRING}] {MIRROR} {s} main\n"))
        .collect();
    std::fs::write(apt_dir.join("sources.list"), sources)
        .map_err(|e| format!("{}: {e}", apt_dir.display()))?;
    let opts = apt_options(&apt_dir);
    note(&format!(
        "bpfvet: kernel {version} is not cached: looking it up in Debian ({})",
        SUITES.join(", ")
    ));
    run(
        Command::new("apt-get").args(&opts).arg("update"),
        "apt-get update",
    )?;
    let names = run(
        Command::new("apt-cache")
            .args(&opts)
            .args(["pkgnames", &format!("linux-image-{version}")]),
        "apt-cache pkgnames",
    )?;
    let package = pick_package(version, names.lines())
        .ok_or_else(|| format!("Debian has no amd64 linux-image package for kernel {version}"))?;
    let work = dir.with_extension("partial");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    run(
        Command::new("apt-get")
            .args(&opts)
            .args(["download", &package])
            .current_dir(&work),
        "apt-get download",
    )?;
    let deb = std::fs::read_dir(&work)
        .map_err(|e| format!("{}: {e}", work.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or("apt-get download left no .deb")?;
    let deb_size = std::fs::metadata(&deb).map(|m| m.len()).unwrap_or(0);
    let script = "dpkg-deb --fsys-tarfile \"$1\" | tar -x -C \"$2\" --wildcards './boot/vmlinuz-*' './boot/config-*'";
    run(
        Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&deb)
            .arg(&work),
        "unpacking the kernel package",
    )?;
    let boot = work.join("boot");
    let find = |prefix: &str| {
        std::fs::read_dir(&boot).ok().and_then(|it| {
            it.filter_map(|e| e.ok().map(|e| e.path())).find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
        })
    };
    let vmlinuz = find("vmlinuz-").ok_or("the package has no /boot/vmlinuz-*")?;
    let staged = work.join("staged");
    std::fs::create_dir_all(&staged).map_err(|e| e.to_string())?;
    std::fs::rename(&vmlinuz, staged.join("vmlinuz")).map_err(|e| e.to_string())?;
    if let Some(config) = find("config-") {
        std::fs::rename(config, staged.join("config")).map_err(|e| e.to_string())?;
    }
    std::fs::write(staged.join("package"), format!("{package}\n")).map_err(|e| e.to_string())?;
    // The version's directory appears whole or not at all.
    let _ = std::fs::remove_dir_all(dir);
    std::fs::rename(&staged, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _ = std::fs::remove_dir_all(&work);
    let kept = dir_size(dir);
    note(&format!(
        "bpfvet: fetched {package} ({} MiB download), kept its vmlinuz and config in {} ({} MiB)",
        deb_size >> 20,
        dir.display(),
        kept.div_ceil(1 << 20)
    ));
    Ok(())
}

/// Bytes of the files directly in `dir`.
pub fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The newest generic amd64 image of `version` among package names:
/// `linux-image-6.1.0-50-amd64-unsigned`, `linux-image-6.18.15+deb13-amd64`
/// (cloud, rt and debug flavours are left out; the unsigned package is
/// preferred, being the same kernel without the signature).
pub fn pick_package<'a>(version: &str, names: impl Iterator<Item = &'a str>) -> Option<String> {
    let prefix = format!("linux-image-{version}");
    let mut best: Option<(Vec<u64>, bool, &str)> = None;
    for name in names.map(str::trim) {
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        if !rest.starts_with(['.', '+', '-']) {
            continue; // 6.1 must not take 6.12
        }
        let (release, unsigned) = match name.strip_suffix("-amd64-unsigned") {
            Some(r) => (r, true),
            None => match name.strip_suffix("-amd64") {
                Some(r) => (r, false),
                None => continue,
            },
        };
        if release.ends_with("-cloud") || release.ends_with("-rt") {
            continue;
        }
        let key: Vec<u64> = release["linux-image-".len()..]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect();
        let better = match &best {
            None => true,
            Some((k, u, _)) => (&key, unsigned) > (k, *u),
        };
        if better {
            best = Some((key, unsigned, name));
        }
    }
    best.map(|(_, _, n)| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(KernelSpec::parse("host"), Ok(KernelSpec::Host));
        assert_eq!(
            KernelSpec::parse("6.18"),
            Ok(KernelSpec::Version("6.18".into()))
        );
        assert_eq!(
            KernelSpec::parse("6.1.176"),
            Ok(KernelSpec::Version("6.1.176".into()))
        );
        assert_eq!(
            KernelSpec::parse("./k/vmlinuz"),
            Ok(KernelSpec::Path("./k/vmlinuz".into()))
        );
        for bad in ["", "6", "6.", "latest", "6.x", "6.1.2.3"] {
            assert!(KernelSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_newest_generic_image_of_the_series_is_picked() {
        let names = [
            "linux-image-6.1.0-47-amd64-unsigned",
            "linux-image-6.1.0-50-cloud-amd64-unsigned",
            "linux-image-6.1.0-50-amd64-unsigned",
            "linux-image-6.1.0-50-rt-amd64",
            "linux-image-6.1.0-50-amd64-dbg",
            "linux-image-6.12.117+deb13-amd64-unsigned",
            "linux-image-6.18.9+deb13-amd64",
            "linux-image-6.18.15+deb13-amd64",
            "linux-image-6.18.12+deb13-amd64",
            "linux-image-6.18.15+deb13-cloud-amd64",
        ];
        let pick = |v| pick_package(v, names.iter().copied());
        assert_eq!(
            pick("6.1").as_deref(),
            Some("linux-image-6.1.0-50-amd64-unsigned")
        );
        assert_eq!(
            pick("6.12").as_deref(),
            Some("linux-image-6.12.117+deb13-amd64-unsigned")
        );
        assert_eq!(
            pick("6.18").as_deref(),
            Some("linux-image-6.18.15+deb13-amd64")
        );
        assert_eq!(
            pick("6.18.9").as_deref(),
            Some("linux-image-6.18.9+deb13-amd64")
        );
        assert_eq!(pick("6.2"), None);
        // Signed and unsigned builds of one release: the unsigned one.
        let both = [
            "linux-image-6.12.1-amd64",
            "linux-image-6.12.1-amd64-unsigned",
        ];
        assert_eq!(
            pick_package("6.12", both.iter().copied()).as_deref(),
            Some("linux-image-6.12.1-amd64-unsigned")
        );
    }
}
