//! The parts of `kubectl promotion health` beside its command module: reading object and metric
//! files, reaching managed clusters as Sveltos does, and rendering the results.

pub mod inputs;
pub mod live;
pub mod managed;
pub mod render;
