//! The loader's typed errors. Every error names the file, the ELF section
//! where it applies, and a reason that can be counted (`ErrorKind::tag`).

use std::fmt;
use std::path::PathBuf;

use crate::btf::BtfError;

#[derive(Debug, thiserror::Error)]
pub struct ObjectError {
    pub path: PathBuf,
    /// The ELF section the problem is in, when there is one.
    pub section: Option<String>,
    #[source]
    pub kind: ErrorKind,
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(s) = &self.section {
            write!(f, ": section '{s}'")?;
        }
        write!(f, ": {}", self.kind)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("cannot read file: {0}")]
    Io(#[from] std::io::Error),
    #[error("malformed ELF: {0}")]
    Elf(String),
    #[error("not a BPF object: {0}")]
    NotBpf(String),
    #[error("malformed BTF: {0}")]
    Btf(#[from] BtfError),
    #[error("malformed BTF.ext: {0}")]
    BtfExt(String),
    #[error("bad program: {0}")]
    Program(String),
    #[error("bad relocation: {0}")]
    Relocation(String),
    #[error("bad map definition: {0}")]
    Map(String),
    #[error("bad extern: {0}")]
    Extern(String),
    #[error("target BTF {path}: {reason}")]
    TargetBtf { path: PathBuf, reason: String },
}

impl ErrorKind {
    /// A short stable name of the kind, for counting rejections by reason.
    pub fn tag(&self) -> &'static str {
        match self {
            ErrorKind::Io(_) => "io",
            ErrorKind::Elf(_) => "elf",
            ErrorKind::NotBpf(_) => "not-bpf",
            ErrorKind::Btf(_) => "btf",
            ErrorKind::BtfExt(_) => "btf-ext",
            ErrorKind::Program(_) => "program",
            ErrorKind::Relocation(_) => "relocation",
            ErrorKind::Map(_) => "map",
            ErrorKind::Extern(_) => "extern",
            ErrorKind::TargetBtf { .. } => "target-btf",
        }
    }
}

/// An error not yet tied to a file: the loader's inner functions return
/// this and the entry points add the path.
#[derive(Debug)]
pub(crate) struct Located {
    pub section: Option<String>,
    pub kind: ErrorKind,
}

pub(crate) type LResult<T> = Result<T, Located>;

pub(crate) fn err<T>(section: Option<&str>, kind: ErrorKind) -> LResult<T> {
    Err(Located {
        section: section.map(str::to_owned),
        kind,
    })
}

impl From<BtfError> for Located {
    fn from(e: BtfError) -> Self {
        Located {
            section: Some(".BTF".into()),
            kind: ErrorKind::Btf(e),
        }
    }
}

impl From<object::read::Error> for Located {
    fn from(e: object::read::Error) -> Self {
        Located {
            section: None,
            kind: ErrorKind::Elf(e.to_string()),
        }
    }
}
