//! The one error type of the HTTP layer: every way a request can fail without an AdmissionReview
//! answer, each with its status code and a JSON body saying why.

use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("request body larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("request not completed within {0:?}")]
    Timeout(Duration),
    #[error("no such endpoint: {0}; use POST /validate or POST /mutate")]
    NotFound(String),
    #[error("method {method} not allowed on {path}; use POST")]
    MethodNotAllowed { method: String, path: String },
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::PayloadTooLarge { .. } => "RequestEntityTooLarge",
            ApiError::Timeout(_) => "Timeout",
            ApiError::NotFound(_) => "NotFound",
            ApiError::MethodNotAllowed { .. } => "MethodNotAllowed",
            ApiError::Internal(_) => "InternalError",
        }
    }
}

#[derive(Serialize)]
struct Body<'a> {
    error: Detail<'a>,
}

#[derive(Serialize)]
struct Detail<'a> {
    code: u16,
    reason: &'a str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = Body {
            error: Detail {
                code: status.as_u16(),
                reason: self.reason(),
                message: self.to_string(),
            },
        };
        let json = serde_json::to_vec(&body).unwrap_or_default();
        let mut response = (status, json).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if matches!(
            self,
            ApiError::PayloadTooLarge { .. } | ApiError::Timeout(_)
        ) {
            // Part of the body may still be unread: the connection cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}
