//! While draining, tell HTTP/1 clients not to reuse the connection: they reconnect, and once
//! endpoints have moved on they reconnect elsewhere instead of sending into a closing socket.
//! (HTTP/2 gets a GOAWAY from the graceful shutdown instead.)
//!
//! A tower layer rather than `axum::middleware::from_fn`: that one clones the inner route and
//! boxes a future on every request, several times the work of the flag check it wraps.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::http::{header, HeaderValue, Request, Response, Version};
use tower::{Layer, Service};

use super::AppState;

#[derive(Clone, Copy)]
pub struct CloseWhileDrainingLayer {
    state: AppState,
}

impl CloseWhileDrainingLayer {
    pub fn new(state: AppState) -> Self {
        CloseWhileDrainingLayer { state }
    }
}

impl<S> Layer<S> for CloseWhileDrainingLayer {
    type Service = CloseWhileDraining<S>;

    fn layer(&self, inner: S) -> CloseWhileDraining<S> {
        CloseWhileDraining {
            inner,
            state: self.state,
        }
    }
}

#[derive(Clone)]
pub struct CloseWhileDraining<S> {
    inner: S,
    state: AppState,
}

impl<S, B, R> Service<Request<B>> for CloseWhileDraining<S>
where
    S: Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = Closing<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Closing<S::Future> {
        let http1 = matches!(request.version(), Version::HTTP_10 | Version::HTTP_11);
        Closing {
            inner: self.inner.call(request),
            // The flag is read when the response is ready, not now: a request that was in
            // flight when draining started still closes its connection.
            state: http1.then_some(self.state),
        }
    }
}

pin_project_lite::pin_project! {
    pub struct Closing<F> {
        #[pin]
        inner: F,
        state: Option<AppState>,
    }
}

impl<F, R, E> Future for Closing<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = Result<Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = std::task::ready!(this.inner.poll(cx))?;
        if this.state.as_ref().is_some_and(AppState::is_draining) {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        Poll::Ready(Ok(response))
    }
}
