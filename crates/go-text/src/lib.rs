//! Go's text forms, byte for byte, in one place: whatever this project prints or parses the way
//! a Go program of Sveltos or Kubernetes does goes through this crate.

pub mod duration;
pub mod fmt;
pub mod json;
pub mod strconv;

/// `bytes` between double quotes: each valid UTF-8 run through `valid`, each byte that is not
/// part of valid UTF-8 through `invalid` (Go decodes such a byte as a one-byte `RuneError`).
fn quoted(bytes: &[u8], valid: fn(&mut String, &str), invalid: fn(&mut String, u8)) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        valid(&mut out, chunk.valid());
        for b in chunk.invalid() {
            invalid(&mut out, *b);
        }
    }
    out.push('"');
    out
}
