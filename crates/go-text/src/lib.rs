//! Go's text forms, byte for byte, in one place: whatever this project prints or parses the way
//! a Go program of Sveltos or Kubernetes does goes through this crate.

pub mod duration;
pub mod json;
