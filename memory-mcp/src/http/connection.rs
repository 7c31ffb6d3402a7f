//! One connection: HTTP/1.1 by hyper, with the deadlines of this module's own (hyper's header timer would also
//! run while a connection is idle): a request's headers within [`HEADER_TIMEOUT`] of its first byte, and the next
//! request within the idle timeout. The body's deadline is the front's ([`super::BODY_TIMEOUT`] from the end of
//! the headers): only a request whose token is accepted has its body read at all.

use std::convert::Infallible;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::ServerHandler;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio::time::Instant;

use super::HEADER_TIMEOUT;
use super::front::Front;

pub(super) async fn serve_connection<H, I>(stream: I, front: Arc<Front<H>>, mut stop: watch::Receiver<bool>)
where
    H: ServerHandler + Send + 'static,
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let idle = front.idle;
    let phase = Arc::new(Mutex::new(Phase::Idle(Instant::now())));
    let answering = Arc::clone(&phase);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let front = Arc::clone(&front);
        let busy = Busy::start(Arc::clone(&answering));
        async move {
            let response = front.answer(request).await;
            drop(busy);
            Ok::<_, Infallible>(response)
        }
    });
    // The two deadlines are this module's own (hyper's header timer would also run while a connection is idle).
    let mut builder = hyper::server::conn::http1::Builder::new();
    // What a connection may hold before its request is read: its headers (at most MAX_HEAD_BYTES, past which hyper
    // answers 431 and closes) in a buffer of at most READ_BUFFER_BYTES.
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(READ_BUFFER_BYTES);
    let io = Watched { io: stream, phase: Arc::clone(&phase), linger: None, lingered: 0 };
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let deadlines = async {
        loop {
            let now = Instant::now();
            let due = match *lock(&phase) {
                Phase::Idle(since) => since + idle,
                Phase::Head(since) => since + HEADER_TIMEOUT,
                Phase::Busy => now + Duration::from_secs(1),
            };
            if due <= now {
                break;
            }
            // Looked at again at least every second: the phase may change while this sleeps.
            tokio::time::sleep_until(due.min(now + Duration::from_secs(1))).await;
        }
    };
    tokio::select! {
        _ = connection.as_mut() => {}
        // Idle too long, or headers too slow: the connection is dropped, which closes it.
        () = deadlines => {}
        _ = stop.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Where a connection is, for its deadlines.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request since then: the idle timeout runs.
    Idle(Instant),
    /// A request's first byte arrived then: the header deadline runs.
    Head(Instant),
    /// A request is being answered.
    Busy,
}

fn lock(phase: &Mutex<Phase>) -> std::sync::MutexGuard<'_, Phase> {
    phase.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A request being answered; once dropped, its connection is idle again.
struct Busy(Arc<Mutex<Phase>>);

impl Busy {
    fn start(phase: Arc<Mutex<Phase>>) -> Busy {
        *lock(&phase) = Phase::Busy;
        Busy(phase)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *lock(&self.0) = Phase::Idle(Instant::now());
    }
}

/// A connection's stream that notes the first byte of a request arriving on an idle connection.
///
/// Its shutdown lingers: the write side is closed (the answer is flushed and a FIN sent), then what the client
/// still sends is read and thrown away until it closes too, for at most [`LINGER`] and [`LINGER_BYTES`]. Closing a
/// socket with unread input sends a reset, which can destroy the answer before the client reads it (a `401` to an
/// unread body, a `413`); lingering costs one fixed buffer and bounded time, never the body.
struct Watched<I> {
    io: I,
    phase: Arc<Mutex<Phase>>,
    /// Set once the write side is closed: when the lingering ends.
    linger: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Bytes thrown away while lingering.
    lingered: usize,
}

/// The longest request head (the request line and the headers) a connection reads; past it, `431`.
const MAX_HEAD_BYTES: usize = 32 * 1024;
/// The most a connection buffers of what it reads (hyper's default is about 400 KiB).
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// How long a closing connection reads and discards what its client still sends.
const LINGER: Duration = Duration::from_secs(2);
/// The most bytes a closing connection reads and discards.
const LINGER_BYTES: usize = 16 * 1024 * 1024;

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            let mut phase = lock(&self.phase);
            if let Phase::Idle(_) = *phase {
                *phase = Phase::Head(Instant::now());
            }
        }
        polled
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, data)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.linger.is_none() {
            std::task::ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            this.linger = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        let mut buffer = [0u8; 8192];
        loop {
            let mut read = ReadBuf::new(&mut buffer);
            match Pin::new(&mut this.io).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                    this.lingered = this.lingered.saturating_add(read.filled().len());
                    if this.lingered > LINGER_BYTES {
                        return Poll::Ready(Ok(()));
                    }
                }
                // The client closed too, or the connection failed: nothing more to wait for.
                Poll::Ready(_) => return Poll::Ready(Ok(())),
                Poll::Pending => {
                    return match this.linger.as_mut().map(|sleep| sleep.as_mut().poll(cx)) {
                        Some(Poll::Pending) => Poll::Pending,
                        _ => Poll::Ready(Ok(())),
                    };
                }
            }
        }
    }
}
