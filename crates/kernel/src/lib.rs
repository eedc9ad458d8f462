//! The host kernel as a backend (see issue 3).
