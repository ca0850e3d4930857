//! Provides compression utilities for encoding records.
//!
//! This module has implementations of gzip, Snappy, as well as a noop compression format that
//! allows encoding and decoding records into a [`Record`](crate::records::Record).

use crate::protocol::buf::{ByteBuf, ByteBufMut};
use crate::records::Compression;
use anyhow::Result;
use bytes::Bytes;

#[cfg(feature = "gzip")]
mod gzip;
#[cfg(feature = "lz4")]
mod lz4;
mod none;
#[cfg(feature = "snappy")]
mod snappy;
#[cfg(feature = "zstd")]
mod zstd;

#[cfg(feature = "gzip")]
pub use gzip::Gzip;
#[cfg(feature = "lz4")]
pub use lz4::Lz4;
pub use none::None;
#[cfg(feature = "snappy")]
pub use snappy::Snappy;
#[cfg(feature = "zstd")]
pub use zstd::Zstd;

/// A trait for record compression algorithms.
pub trait Compressor<B: ByteBufMut> {
    /// Target buffer type for compression.
    type BufMut: ByteBufMut;
    /// Compresses into provided [`ByteBufMut`], with records encoded by `F` into `R`.
    fn compress<R, F>(buf: &mut B, f: F) -> Result<R>
    where
        F: FnOnce(&mut Self::BufMut) -> Result<R>;
}

/// A trait for record decompression algorithms.
pub trait Decompressor<B: ByteBuf> {
    /// Target buffer type for decompression.
    type Buf: ByteBuf;
    /// Decompress records from `B` mapped using `F` into `R`.
    fn decompress<R, F>(buf: &mut B, f: F) -> Result<R>
    where
        F: FnOnce(&mut Self::Buf) -> Result<R>;
}

/// kdeck patch: bounded decompression. 0.18.0 unpacked a batch's records whole, so a few
/// kilobytes of zstd or a megabyte of gzip from a peer could become gigabytes in memory. Every
/// decompressor here now streams into a buffer that stops at a limit, and the [`Decompressor`]
/// impls (which [`RecordBatchDecoder`](crate::records::RecordBatchDecoder) uses) stop at
/// [`MAX_DECOMPRESSED_BATCH_BYTES`].
///
/// The most bytes one batch's records may decompress to: 64 MiB, 64 times Kafka's default
/// `max.message.bytes`, so an ordinary batch is far below it while one connection's bomb
/// costs at most this much memory.
pub const MAX_DECOMPRESSED_BATCH_BYTES: usize = 64 << 20;

/// kdeck patch: a compressed payload that decompresses to more than `limit` bytes. Found in
/// an `anyhow::Error` chain with `downcast_ref`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecompressedTooLarge {
    /// The limit the payload went past.
    pub limit: usize,
}

impl std::fmt::Display for DecompressedTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the records decompress to more than {} bytes", self.limit)
    }
}

impl std::error::Error for DecompressedTooLarge {}

/// kdeck patch: `input` decompressed with `compression`, refused with
/// [`DecompressedTooLarge`] as soon as the output would pass `limit` bytes (the decoders stream,
/// so a bomb is never unpacked whole). `Compression::None` returns `input` as it is.
pub fn decompress_bounded(compression: Compression, input: &[u8], limit: usize) -> Result<Bytes> {
    match compression {
        Compression::None => Ok(Bytes::copy_from_slice(input)),
        #[cfg(feature = "gzip")]
        Compression::Gzip => gzip::decompress_bounded(input, limit),
        #[cfg(feature = "snappy")]
        Compression::Snappy => snappy::decompress_bounded(input, limit),
        #[cfg(feature = "lz4")]
        Compression::Lz4 => lz4::decompress_bounded(input, limit),
        #[cfg(feature = "zstd")]
        Compression::Zstd => zstd::decompress_bounded(input, limit),
        #[allow(unreachable_patterns)]
        c => anyhow::bail!("Support for {c:?} is not enabled as a cargo feature"),
    }
}

/// kdeck patch: everything `reader` yields, or [`DecompressedTooLarge`] once it passes `limit`
/// bytes; memory stays within `limit` plus one chunk.
fn read_bounded(mut reader: impl std::io::Read, limit: usize) -> Result<Bytes> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 32 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(out.into()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if n > limit - out.len() {
            return Err(DecompressedTooLarge { limit }.into());
        }
        out.extend_from_slice(&chunk[..n]);
    }
}
