//! Kubernetes name rules (apimachinery `validation.IsDNS1123Label` and friends).

pub const LABEL_VALUE_MAX: usize = 63;
pub const DNS1123_LABEL_MAX: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub fn dns1123_label(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > DNS1123_LABEL_MAX {
        return Err(format!(
            "must be no more than {DNS1123_LABEL_MAX} characters (it has {})",
            s.len()
        ));
    }
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
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    s.chars().all(ok_char) && edge_ok(s.chars().next()) && edge_ok(s.chars().last())
}

/// Dot-separated DNS-1123 labels, at most 253 characters.
pub fn dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        return Err(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX} characters (it has {})",
            s.len()
        ));
    }
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
    if s.len() > LABEL_VALUE_MAX {
        return Err(format!(
            "must be no more than {LABEL_VALUE_MAX} characters (it has {})",
            s.len()
        ));
    }
    if s.is_empty() {
        return Ok(());
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !alnum(s.chars().next()) || !alnum(s.chars().last()) || !s.chars().all(inner) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert!(dns1123_label("staging").is_ok());
        assert!(dns1123_label("prod-eu-1").is_ok());
        assert!(dns1123_label("Prod").is_err());
        assert!(dns1123_label("-prod").is_err());
        assert!(dns1123_label("prod_1").is_err());
        assert!(dns1123_label(&"a".repeat(64)).is_err());
        assert!(dns1123_label("").is_err());
    }

    #[test]
    fn a_subdomain_part_may_be_longer_than_a_label() {
        // apimachinery IsDNS1123Subdomain: 253 in all, no 63 per dot-separated part.
        let long = "preverification-payments-platform-rollout-europe-west-production-canary";
        assert!(long.len() > 63);
        assert_eq!(dns1123_subdomain(long), Ok(()));
        assert!(dns1123_subdomain(&"a".repeat(254)).is_err());
        assert!(dns1123_subdomain("a..b").is_err());
    }

    #[test]
    fn subdomains() {
        assert!(dns1123_subdomain("kyverno.rollout").is_ok());
        assert!(dns1123_subdomain("a..b").is_err());
        assert!(dns1123_subdomain(&"a".repeat(254)).is_err());
    }

    #[test]
    fn label_values_and_keys() {
        assert!(label_value("").is_ok());
        assert!(label_value("Prod_1.x").is_ok());
        assert!(label_value("-x").is_err());
        assert!(label_value("a b").is_err());
        assert!(qualified_name("env").is_ok());
        assert!(qualified_name("example.com/env").is_ok());
        assert!(qualified_name("Example.com/env").is_err());
        assert!(qualified_name("a/b/c").is_err());
        assert!(qualified_name("").is_err());
        assert!(qualified_name("example.com/").is_err());
    }
}
