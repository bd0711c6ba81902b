pub mod lint;
