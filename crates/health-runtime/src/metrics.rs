//! A Prometheus instant-query response turned into the one number Sveltos puts in the Lua global
//! `metrics[name]` (addon-controller's `queryMetricEndpoint` and `extractScalar`).

use serde_json::Value;

/// The scalar of a response body, or the error Sveltos would return for it.
pub fn scalar(body: &str) -> Result<f64, String> {
    let resp: Value =
        serde_json::from_str(body).map_err(|e| format!("decoding Prometheus response: {e}"))?;
    if resp.get("status").and_then(Value::as_str) != Some("success") {
        let err = resp.get("error").and_then(Value::as_str).unwrap_or("");
        return Err(format!("metric query failed: {err}"));
    }
    let data = resp.get("data").cloned().unwrap_or(Value::Null);
    let result = data.get("result").cloned().unwrap_or(Value::Null);
    match data.get("resultType").and_then(Value::as_str).unwrap_or("") {
        "scalar" => value_of(result.get(1)),
        "vector" => {
            let series = result
                .as_array()
                .ok_or_else(|| "parsing vector result: not a list".to_string())?;
            match series.len() {
                0 => Err("metric query returned no data".into()),
                1 => value_of(series[0].get("value").and_then(|v| v.get(1))),
                n => Err(format!(
                    "metric query returned {n} series; use an aggregation (e.g. sum()) to produce \
                     a single value"
                )),
            }
        }
        other => Err(format!(
            "unsupported Prometheus result type {other:?}; use an instant query returning scalar \
             or vector"
        )),
    }
}

/// `parsePromValue`: the quoted number of a `[time, "value"]` pair.
fn value_of(v: Option<&Value>) -> Result<f64, String> {
    let text = v
        .and_then(Value::as_str)
        .ok_or_else(|| "parsing value token: not a string".to_string())?;
    match text {
        "NaN" => Ok(f64::NAN),
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        t => t
            .parse::<f64>()
            .map_err(|_| format!("converting {t:?} to float64: invalid syntax")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_and_single_vector_results() {
        let scalar_body =
            r#"{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0.25"]}}"#;
        assert_eq!(scalar(scalar_body), Ok(0.25));
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"3"]}]}}"#;
        assert_eq!(scalar(vector), Ok(3.0));
    }

    #[test]
    fn sveltos_errors() {
        let two = r#"{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]},{"value":[1,"2"]}]}}"#;
        assert!(scalar(two).unwrap_err().contains("2 series"));
        let none = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert_eq!(scalar(none).unwrap_err(), "metric query returned no data");
        let failed = r#"{"status":"error","error":"bad query"}"#;
        assert_eq!(
            scalar(failed).unwrap_err(),
            "metric query failed: bad query"
        );
        assert!(scalar("{")
            .unwrap_err()
            .starts_with("decoding Prometheus response"));
    }
}
