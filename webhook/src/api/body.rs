//! Reading a request body with a size limit.
//!
//! An oversized body is still read (and discarded) up to one more `limit` before the 413 goes
//! out: a server that answers and closes while the client is still sending makes the kernel
//! reset the connection, and the client may then never see the 413. Bodies announced as larger
//! than that are refused at once.
//!
//! A body that arrives as one frame (a review almost always does) is handed on as that frame's
//! bytes, not copied.

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;

use super::error::ApiError;

pub async fn read_limited(
    body: Body,
    declared_length: Option<u64>,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let too_large = ApiError::PayloadTooLarge { limit };
    let drain_limit = limit.saturating_mul(2);
    if declared_length.is_some_and(|n| n > drain_limit as u64) {
        return Err(too_large);
    }
    let mut parts = Parts::default();
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
            parts.push(data, declared_length, limit);
        } else if seen > drain_limit {
            return Err(too_large);
        }
    }
    if seen > limit {
        return Err(too_large);
    }
    Ok(parts.into_bytes())
}

/// The frames read so far: none, the first one as it came, or several joined.
#[derive(Default)]
enum Parts {
    #[default]
    None,
    One(Bytes),
    Joined(BytesMut),
}

impl Parts {
    fn push(&mut self, data: Bytes, declared_length: Option<u64>, limit: usize) {
        *self = match std::mem::take(self) {
            Parts::None => Parts::One(data),
            Parts::One(first) => {
                let capacity = declared_length.map_or(16 * 1024, |n| (n as usize).min(limit));
                let mut joined = BytesMut::with_capacity(capacity.max(first.len() + data.len()));
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&data);
                Parts::Joined(joined)
            }
            Parts::Joined(mut joined) => {
                joined.extend_from_slice(&data);
                Parts::Joined(joined)
            }
        };
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Parts::None => Bytes::new(),
            Parts::One(bytes) => bytes,
            Parts::Joined(joined) => joined.freeze(),
        }
    }
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

    /// A body that arrives in the given frames.
    struct Frames(std::collections::VecDeque<&'static [u8]>);

    impl http_body::Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            let next = self.0.pop_front();
            std::task::Poll::Ready(next.map(|chunk| Ok(http_body::Frame::data(Bytes::from(chunk)))))
        }
    }

    #[tokio::test]
    async fn frames_are_joined_and_a_single_frame_is_passed_on() {
        let frames = |chunks: &[&'static [u8]]| Body::new(Frames(chunks.iter().copied().collect()));
        let one = read_limited(frames(&[b"{\"a\":1}"]), Some(7), 100).await;
        assert_eq!(&one.unwrap()[..], b"{\"a\":1}");
        let three = read_limited(frames(&[b"{\"a\"", b":", b"1}"]), None, 100).await;
        assert_eq!(&three.unwrap()[..], b"{\"a\":1}");
        let none = read_limited(frames(&[]), None, 100).await;
        assert!(none.unwrap().is_empty());
        let over = read_limited(frames(&[b"12345", b"678"]), None, 7).await;
        assert!(matches!(over, Err(ApiError::PayloadTooLarge { limit: 7 })));
    }
}
