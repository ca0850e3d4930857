//! One client connection: frames are read and handled concurrently, answers are written
//! strictly in request order, and at most `max_inflight_per_connection` requests wait for
//! their answer (the reader stops reading until the oldest is written). A produce request's
//! batches reach their broker before the next frame is read, so one connection's batches are
//! appended in the order sent, as by Kafka's one-request-at-a-time broker.

use std::sync::Arc;

use bytes::{BufMut, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use super::codec::{self, RequestBody};
use super::handlers::{self, Answer, Context, Unanswered};
use crate::engine::group::IN_PROCESS_HOST;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame length {length} is past socket_request_max_bytes {max}")]
    TooLarge { length: i64, max: u32 },
    #[error("negative frame length {0}")]
    Negative(i32),
    #[error("connection closed after {got} of {want} frame bytes")]
    Truncated { got: usize, want: usize },
    #[error("reading from the client failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The buffer a frame's payload is first read into, at most.
const FIRST_ALLOCATION: usize = 1024 * 1024;

/// Reads one frame's payload: `None` at a clean end of stream. The length is checked before
/// anything is allocated, and past 1 MiB the buffer grows only as bytes arrive.
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R, max: u32) -> Result<Option<Bytes>, FrameError> {
    let mut prefix = [0u8; 4];
    match reader.read_exact(&mut prefix).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let length = i32::from_be_bytes(prefix);
    if length < 0 {
        return Err(FrameError::Negative(length));
    }
    if length as u32 > max {
        return Err(FrameError::TooLarge {
            length: i64::from(length),
            max,
        });
    }
    let want = length as usize;
    // One allocation of the whole frame up to 1 MiB (a produce request of the default
    // max.request.size); beyond that the buffer doubles as bytes arrive, so a length claimed
    // but never sent costs little. It never grows past the frame: tokio's `read_to_end`
    // would reserve more at the end, and copy the whole frame to do it.
    let mut payload = Vec::with_capacity(want.min(FIRST_ALLOCATION));
    while payload.len() < want {
        if payload.len() == payload.capacity() {
            payload.reserve_exact((want - payload.len()).min(payload.capacity()));
        }
        let room = (want - payload.len()).min(payload.capacity() - payload.len());
        if reader.read_buf(&mut (&mut payload).limit(room)).await? == 0 {
            return Err(FrameError::Truncated {
                got: payload.len(),
                want,
            });
        }
    }
    Ok(Some(Bytes::from(payload)))
}

/// An answer on its way: a frame, nothing (acks=0 produce), or a failure that closes the
/// connection.
type Pending = oneshot::Receiver<Answer>;

/// Serves one connection over any byte stream: a TCP socket from the listener, or one end of
/// an in-memory pipe ([`super::connect_in_memory`]). `peer` names the other end in logs.
pub async fn serve<S>(
    stream: S,
    peer: String,
    ctx: Arc<Context>,
    mut paused: watch::Receiver<bool>,
    mut closed: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let broker = ctx.broker;
    let (mut reader, mut writer) = tokio::io::split(stream);
    let (queue, mut answers) = mpsc::channel::<Pending>(ctx.config.max_inflight_per_connection.max(1));
    let reader_peer = peer.clone();
    let mut write_loop = tokio::spawn(async move {
        while let Some(pending) = answers.recv().await {
            match pending.await {
                Ok(Ok(Some(frame))) => {
                    if writer.write_all(&frame).await.is_err() {
                        return;
                    }
                }
                Ok(Ok(None)) => {}
                Ok(Err(Unanswered::BrokerDown)) => {
                    tracing::debug!(broker, %peer, "closing the connection: the broker went down");
                    return;
                }
                Ok(Err(e)) => {
                    tracing::warn!(broker, %peer, "closing the connection: {e}");
                    return;
                }
                Err(_) => return,
            }
        }
    });
    let max = ctx.config.socket_request_max_bytes;
    // Kafka shows a group member's host as `/` and its address; an in-memory pipe is in
    // kdeck's own process.
    let client_host = reader_peer
        .parse::<std::net::SocketAddr>()
        .map_or_else(|_| IN_PROCESS_HOST.to_string(), |a| format!("/{}", a.ip()));
    let read_loop = async move {
        let peer = reader_peer;
        loop {
            let frame = match read_frame(&mut reader, max).await {
                Ok(Some(frame)) => frame,
                Ok(None) => return,
                // A client killed or interrupted mid-connection (kcat's Ctrl-C): routine.
                Err(FrameError::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    tracing::debug!(broker, %peer, "the client reset the connection");
                    return;
                }
                Err(e) => {
                    tracing::warn!(broker, %peer, "closing the connection: {e}");
                    return;
                }
            };
            let request = match codec::decode_request(frame) {
                Ok(r) => codec::DecodedRequest {
                    client_host: client_host.clone(),
                    ..r
                },
                Err(e) => {
                    tracing::warn!(broker, %peer, "closing the connection: {e}");
                    return;
                }
            };
            // A paused broker reads nothing more, as a frozen process would.
            while *paused.borrow_and_update() {
                if paused.changed().await.is_err() {
                    return;
                }
            }
            let in_order = matches!(request.body, RequestBody::Produce(_));
            let (queued, wait_queued) = oneshot::channel();
            let (tx, rx) = oneshot::channel();
            let ctx = Arc::clone(&ctx);
            tokio::spawn(async move {
                let _ = tx.send(handlers::handle(&ctx, request, queued).await);
            });
            if in_order {
                // Only the drop of `queued` is awaited: it carries no value.
                let _ = wait_queued.await;
            }
            if queue.send(rx).await.is_err() {
                return;
            }
        }
    };
    // Biased: tokio's default picks a branch at random, and a simulated seed must replay.
    tokio::select! {
        biased;
        _ = closed.changed() => {
            write_loop.abort();
            return;
        }
        // An answer that closes the connection: reading on would be for nothing.
        _ = &mut write_loop => return,
        _ = read_loop => {}
    }
    // Answers already promised are still written, unless the listener closes meanwhile.
    tokio::select! {
        biased;
        _ = closed.changed() => {}
        _ = write_loop => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of `len` bytes, its length prefix first, written in 7 KiB pieces by a task
    /// while the reader reads: the reader sees it as a socket delivers it.
    async fn read_sent(len: usize, send: usize) -> Result<Option<Bytes>, FrameError> {
        let (mut ours, mut theirs) = tokio::io::duplex(64 * 1024);
        let payload: Vec<u8> = (0..send).map(|i| (i % 251) as u8).collect();
        let writer = tokio::spawn(async move {
            let _ = ours.write_all(&(len as i32).to_be_bytes()).await;
            for piece in payload.chunks(7 * 1024) {
                if ours.write_all(piece).await.is_err() {
                    return;
                }
            }
        });
        let frame = read_frame(&mut theirs, 100 * 1024 * 1024).await;
        let _ = writer.await;
        frame
    }

    #[tokio::test]
    async fn a_frame_larger_than_the_first_allocation_arrives_whole_and_exact() {
        for len in [0, 100, FIRST_ALLOCATION, 3 * FIRST_ALLOCATION + 1] {
            let frame = read_sent(len, len).await.expect("a whole frame").expect("not the end");
            assert_eq!(frame.len(), len);
            assert!(
                frame.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8),
                "bytes of a {len}-byte frame"
            );
        }
    }

    #[tokio::test]
    async fn a_frame_cut_short_is_truncated_with_what_arrived() {
        match read_sent(2 * FIRST_ALLOCATION, 10_000).await {
            Err(FrameError::Truncated { got, want }) => assert_eq!((got, want), (10_000, 2 * FIRST_ALLOCATION)),
            other => panic!("expected a truncated frame, got {other:?}"),
        }
    }
}
