//! Name rules of apimachinery's `util/validation` (`IsDNS1123Label`, `IsDNS1123Subdomain`,
//! `IsQualifiedName`), with the messages the API server puts in its field errors.

/// A DNS-1123 label: lower-case alphanumerics and `-`, alphanumeric at both ends, at most 63.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
        && s.as_bytes().last().is_some_and(u8::is_ascii_alphanumeric)
}

/// A DNS-1123 subdomain: dot-separated labels, at most 253.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// Why a name is not a DNS-1123 subdomain, in `IsDNS1123Subdomain`'s words.
pub fn dns1123_subdomain_problem() -> &'static str {
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
}

const QUALIFIED_NAME_CHARS: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `IsQualifiedName`: `[prefix/]name`, the prefix a DNS subdomain, the name at most
/// 63 alphanumerics, `-`, `_` and `.`, alphanumeric at both ends.
pub fn qualified_name_problems(value: &str) -> Vec<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_CHARS} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]
        }
    };
    let mut problems = Vec::new();
    match prefix {
        Some("") => problems.push("prefix part must be non-empty".to_string()),
        Some(p) if !is_dns1123_subdomain(p) => {
            problems.push(format!("prefix part {}", dns1123_subdomain_problem()))
        }
        _ => {}
    }
    if name.is_empty() {
        problems.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".into());
    }
    let bytes = name.as_bytes();
    let well_formed = bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !well_formed {
        problems.push(format!("name part {QUALIFIED_NAME_CHARS}"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        assert!(qualified_name_problems("addon-controller").is_empty());
        assert!(qualified_name_problems("example.com/My_Name").is_empty());
        assert_eq!(qualified_name_problems("a/b/c").len(), 1);
        assert_eq!(
            qualified_name_problems("Bad_/x"),
            [format!("prefix part {}", dns1123_subdomain_problem())]
        );
    }
}
