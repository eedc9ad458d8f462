//! The kernel's errno for each way a map operation or a map creation fails.

/// A failed map operation. Each variant is one errno the kernel returns;
/// [`MapError::errno`] gives the positive number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("no such element (ENOENT)")]
    NotFound,
    #[error("element already exists (EEXIST)")]
    Exists,
    #[error("map is full or index out of range (E2BIG)")]
    TooBig,
    #[error("invalid argument (EINVAL): {0}")]
    Invalid(&'static str),
    #[error("operation not supported by this map type (ENOTSUPP)")]
    NotSupp,
    #[error("operation not supported (EOPNOTSUPP): {0}")]
    OpNotSupp(&'static str),
    #[error("map busy (EBUSY)")]
    Busy,
    #[error("out of memory (ENOMEM)")]
    NoMem,
    #[error("permission denied (EPERM): {0}")]
    Perm(&'static str),
    #[error("no space in the destination buffer (ENOSPC)")]
    NoSpace,
    #[error("try again (EAGAIN)")]
    Again,
    #[error("bad file descriptor (EBADF): {0}")]
    BadFd(&'static str),
}

impl MapError {
    /// The positive errno the kernel would return.
    pub fn errno(self) -> i32 {
        match self {
            MapError::NotFound => 2,
            MapError::Exists => 17,
            MapError::TooBig => 7,
            MapError::Invalid(_) => 22,
            // ENOTSUPP is kernel-internal (524) but does reach user space.
            MapError::NotSupp => 524,
            MapError::OpNotSupp(_) => 95,
            MapError::Busy => 16,
            MapError::NoMem => 12,
            MapError::Perm(_) => 1,
            MapError::NoSpace => 28,
            MapError::Again => 11,
            MapError::BadFd(_) => 9,
        }
    }
}

pub type Result<T> = std::result::Result<T, MapError>;
