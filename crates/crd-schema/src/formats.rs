//! String `format`s the API server checks (kube-openapi's strfmt registry). Only the formats
//! Sveltos CRDs use are checked; any other format is accepted, so lint never rejects what
//! the API server might accept (plugin/docs/lint.md lists this).

use base64::Engine;

pub fn valid(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => date_time(s),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        _ => true,
    }
}

/// strfmt's `ParseDateTime`: RFC 3339 with any fraction, and the zone-less ISO 8601 layouts.
fn date_time(s: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(s).is_ok()
        || chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn checks_the_formats_sveltos_uses() {
        assert!(valid("date-time", "2026-02-16T07:29:41Z"));
        assert!(valid("date-time", "2026-02-16T07:29:41.123+02:00"));
        assert!(!valid("date-time", "yesterday"));
        assert!(valid("byte", "aGVsbG8="));
        assert!(!valid("byte", "not base64!"));
        assert!(valid("date", "2026-02-16"));
        assert!(!valid("date", "16/02/2026"));
        assert!(valid("int32", "anything"));
        assert!(valid("email", "unchecked"));
    }
}
