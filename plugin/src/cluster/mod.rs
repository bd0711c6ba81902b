//! Everything that talks to a cluster: the API resources the plugin reads and writes.

pub mod resources;
