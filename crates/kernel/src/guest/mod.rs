//! Another kernel than the host's as a backend: a Debian kernel (or any
//! bzImage) booted under QEMU with an initramfs holding the running
//! bpfvet executable, which verifies the programs inside the guest and
//! streams one result per program over a serial port.

pub mod agent;
pub mod cpio;
pub mod frame;
pub mod image;
pub mod vm;
