//! Offline inputs besides manifests (read by `commands::manifests`): metric query results
//! (`--metrics NAME=FILE`).

use health_runtime::metrics;

use crate::error::{Error, Result};

/// `NAME=FILE`: the query name and the number its Prometheus response holds.
pub fn metric(spec: &str) -> Result<(String, f64)> {
    let (name, file) = spec
        .split_once('=')
        .filter(|(n, f)| !n.is_empty() && !f.is_empty())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--metrics {spec:?}: expected NAME=FILE (a Prometheus instant-query response)"
            ))
        })?;
    let body = std::fs::read_to_string(file).map_err(|e| Error::file(file, e))?;
    let value = metrics::scalar(&body).map_err(|e| Error::file(file, e))?;
    Ok((name.to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_need_name_and_file() {
        assert!(metric("errors")
            .unwrap_err()
            .to_string()
            .contains("NAME=FILE"));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("m.json");
        std::fs::write(
            &f,
            r#"{"status":"success","data":{"resultType":"scalar","result":[1,"2.5"]}}"#,
        )
        .unwrap();
        assert_eq!(
            metric(&format!("errors={}", f.display())).unwrap(),
            ("errors".to_string(), 2.5)
        );
    }
}
