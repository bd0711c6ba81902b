//! `endpoints/handlers/responsewriters`: what a handler answers and how it goes on the wire —
//! JSON with `Warning: 299` headers, a watch stream, plain text, or a `metav1.Status` error (Go's
//! plain-text `404 page not found` where nothing serves the path).

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use serde_json::Value;

use crate::apiserver::discovery;
use crate::apiserver::status::ApiError;
use crate::apiserver::watch;

pub(super) enum Reply {
    Json {
        code: u16,
        body: Bytes,
        content_type: &'static str,
        warnings: Vec<String>,
    },
    Text(&'static str),
    Stream(watch::BodyStream),
}

pub(super) fn json_reply(code: u16, value: &Value, warnings: Vec<String>) -> Reply {
    Reply::Json {
        code,
        body: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        content_type: "application/json",
        warnings,
    }
}

pub(super) fn aggregated_reply(v: &Value) -> Reply {
    Reply::Json {
        code: 200,
        body: Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
        content_type: discovery::AGGREGATED_V2_CONTENT_TYPE,
        warnings: vec![],
    }
}

/// Go's `warning.AddWarning` header form.
/// apimachinery's `NewWarningHeader`: the text as a quoted string, UTF-8 as it is (Go writes
/// header bytes as they are; `HeaderValue::from_str` would refuse anything non-ASCII).
fn warning_header(text: &str) -> Option<HeaderValue> {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_bytes(format!("299 - \"{escaped}\"").as_bytes()).ok()
}

fn common_headers(headers: &mut HeaderMap) {
    headers.insert(
        "cache-control",
        HeaderValue::from_static("no-cache, private"),
    );
    if let Ok(v) = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()) {
        headers.insert("audit-id", v);
    }
}

/// The error as the real server writes it.
pub(super) fn error(err: &ApiError) -> Response<Body> {
    let mut response = match &err.plain_text {
        Some(text) => {
            let mut r = Response::new(Body::from(text.clone()));
            r.headers_mut().insert(
                "content-type",
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            r.headers_mut().insert(
                "x-content-type-options",
                HeaderValue::from_static("nosniff"),
            );
            r
        }
        None => {
            let mut r = Response::new(Body::from(
                serde_json::to_vec(&err.status).unwrap_or_default(),
            ));
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("application/json"));
            r
        }
    };
    *response.status_mut() =
        StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for w in &err.warnings {
        if let Some(v) = warning_header(w) {
            response.headers_mut().append("warning", v);
        }
    }
    common_headers(response.headers_mut());
    response
}

/// The response for a handler's result, and the status code to record.
pub(super) fn write(result: Result<Reply, ApiError>) -> (Response<Body>, u16) {
    match result {
        Ok(Reply::Json {
            code,
            body,
            content_type,
            warnings,
        }) => {
            let mut r = Response::new(Body::from(body));
            *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static(content_type));
            for w in &warnings {
                if let Some(v) = warning_header(w) {
                    r.headers_mut().append("warning", v);
                }
            }
            common_headers(r.headers_mut());
            (r, code)
        }
        Ok(Reply::Text(text)) => {
            let mut r = Response::new(Body::from(text));
            r.headers_mut().insert(
                "content-type",
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            (r, 200)
        }
        Ok(Reply::Stream(stream)) => {
            let mut r = Response::new(Body::from_stream(stream));
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("application/json"));
            common_headers(r.headers_mut());
            (r, 200)
        }
        Err(err) => (error(&err), err.code),
    }
}

pub(super) fn method_not_allowed() -> ApiError {
    ApiError::new(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        None,
    )
}
