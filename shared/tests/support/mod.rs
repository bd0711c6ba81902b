//! Shared by the bounded fuzz runs.
#![allow(dead_code)]

pub mod seeds;
