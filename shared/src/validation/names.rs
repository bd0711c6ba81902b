//! Kubernetes name rules (apimachinery `validation.IsDNS1123Label` and friends).

pub const LABEL_VALUE_MAX: usize = 63;
pub const DNS1123_LABEL_MAX: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub fn dns1123_label(s: &str) -> Result<(), String> {
    non_empty_within(s, DNS1123_LABEL_MAX)?;
    if !label_chars(s) {
        return Err(
            "must be a lowercase RFC 1123 label: lowercase letters, digits and '-', \
                    starting and ending with a letter or digit (e.g. 'staging')"
                .into(),
        );
    }
    Ok(())
}

/// The characters of a DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, any length.
fn label_chars(s: &str) -> bool {
    // Bytes, not chars: every allowed character is ASCII, and no byte of a non-ASCII character
    // is (so a first or last byte that passes is a first or last character that does).
    let ok_byte = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-';
    let edge_ok = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let bytes = s.as_bytes();
    bytes.iter().all(ok_byte) && edge_ok(bytes.first()) && edge_ok(bytes.last())
}

/// Dot-separated DNS-1123 labels, at most 253 characters.
pub fn dns1123_subdomain(s: &str) -> Result<(), String> {
    non_empty_within(s, DNS1123_SUBDOMAIN_MAX)?;
    // apimachinery's IsDNS1123Subdomain: the whole name is at most 253 characters and each
    // dot-separated part has a label's characters; a part is not held to a label's 63.
    if !s.split('.').all(label_chars) {
        return Err(
            "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and \
                    '.', starting and ending with a letter or digit"
                .into(),
        );
    }
    Ok(())
}

/// `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?`, at most 63 characters.
pub fn label_value(s: &str) -> Result<(), String> {
    within(s, LABEL_VALUE_MAX)?;
    if s.is_empty() {
        return Ok(());
    }
    // Bytes, as in `label_chars`: only ASCII characters are allowed.
    let bytes = s.as_bytes();
    let alnum = |b: Option<&u8>| b.is_some_and(u8::is_ascii_alphanumeric);
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    if !alnum(bytes.first()) || !alnum(bytes.last()) || !bytes.iter().all(inner) {
        return Err(
            "must be empty or consist of alphanumerics, '-', '_' or '.', starting and \
                    ending with an alphanumeric"
                .into(),
        );
    }
    Ok(())
}

/// A label key: optional DNS-subdomain prefix and '/', then a name like a label value (non-empty).
pub fn qualified_name(s: &str) -> Result<(), String> {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        if name.contains('/') {
            return Err("must contain at most one '/'".into());
        }
        dns1123_subdomain(p).map_err(|e| format!("prefix {e}"))?;
    }
    if name.is_empty() {
        return Err("name part must not be empty".into());
    }
    label_value(name).map_err(|e| format!("name part {e}"))
}

/// `s` is not empty, and at most `max` characters long.
fn non_empty_within(s: &str, max: usize) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    within(s, max)
}

/// `s` is at most `max` characters long.
fn within(s: &str, max: usize) -> Result<(), String> {
    if s.len() > max {
        return Err(format!(
            "must be no more than {max} characters (it has {})",
            s.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rule` accepts every name of `valid` and refuses every name of `invalid`.
    fn accepts_only(rule: fn(&str) -> Result<(), String>, valid: &[&str], invalid: &[&str]) {
        for name in valid {
            assert_eq!(rule(name), Ok(()), "{name:?}");
        }
        for name in invalid {
            assert!(rule(name).is_err(), "{name:?}");
        }
    }

    #[test]
    fn labels() {
        accepts_only(
            dns1123_label,
            &["staging", "prod-eu-1"],
            &["Prod", "-prod", "prod_1", &"a".repeat(64), ""],
        );
    }

    #[test]
    fn a_subdomain_part_may_be_longer_than_a_label() {
        // apimachinery IsDNS1123Subdomain: 253 in all, no 63 per dot-separated part.
        let long = "preverification-payments-platform-rollout-europe-west-production-canary";
        assert!(long.len() > 63);
        accepts_only(dns1123_subdomain, &[long], &[&"a".repeat(254), "a..b"]);
    }

    #[test]
    fn subdomains() {
        accepts_only(
            dns1123_subdomain,
            &["kyverno.rollout"],
            &["a..b", &"a".repeat(254)],
        );
    }

    #[test]
    fn characters_outside_ascii_are_refused_anywhere_in_a_name() {
        // The checks look at bytes: a letter like é or the Cyrillic а must not pass as one.
        let others = ["é", "aé", "éa", "a\u{430}b", "\u{660}", "a\u{2010}b"];
        accepts_only(dns1123_label, &["a"], &others);
        accepts_only(dns1123_subdomain, &["a.b"], &others);
        accepts_only(label_value, &["a"], &others);
    }

    #[test]
    fn label_values_and_keys() {
        accepts_only(label_value, &["", "Prod_1.x"], &["-x", "a b"]);
        accepts_only(
            qualified_name,
            &["env", "example.com/env"],
            &["Example.com/env", "a/b/c", "", "example.com/"],
        );
    }
}
