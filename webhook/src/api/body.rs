//! Reading a request body with a size limit.
//!
//! An oversized body is still read (and discarded) up to one more `limit` before the 413 goes
//! out: a server that answers and closes while the client is still sending makes the kernel
//! reset the connection, and the client may then never see the 413. Bodies announced as larger
//! than that are refused at once.

use axum::body::Body;
use http_body_util::BodyExt;

use super::error::ApiError;

pub async fn read_limited(
    body: Body,
    declared_length: Option<u64>,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let too_large = ApiError::PayloadTooLarge { limit };
    let drain_limit = limit.saturating_mul(2);
    if declared_length.is_some_and(|n| n > drain_limit as u64) {
        return Err(too_large);
    }
    let capacity = declared_length.map_or(16 * 1024, |n| (n as usize).min(limit));
    let mut buffer = Vec::with_capacity(capacity);
    let mut seen = 0usize;
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|e| ApiError::BadRequest(format!("cannot read the request body: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if seen <= limit {
            buffer.extend_from_slice(&data);
        } else if seen > drain_limit {
            return Err(too_large);
        }
    }
    if seen > limit {
        return Err(too_large);
    }
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn limits() {
        let ok = read_limited(Body::from(vec![1u8; 100]), Some(100), 100).await;
        assert_eq!(ok.unwrap().len(), 100);
        let over = read_limited(Body::from(vec![1u8; 101]), Some(101), 100).await;
        assert!(matches!(
            over,
            Err(ApiError::PayloadTooLarge { limit: 100 })
        ));
        let announced = read_limited(Body::from(vec![1u8; 10]), Some(1_000), 100).await;
        assert!(matches!(announced, Err(ApiError::PayloadTooLarge { .. })));
        let unannounced = read_limited(Body::from(vec![1u8; 1_000]), None, 100).await;
        assert!(matches!(unannounced, Err(ApiError::PayloadTooLarge { .. })));
    }
}
