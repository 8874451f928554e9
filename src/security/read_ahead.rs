//! A read-ahead buffer between a TLS session and its socket.
//!
//! rustls pulls ciphertext from the socket at most 4 KiB per read (`read_tls`), so a 16 KiB
//! TLS record costs four `recvfrom` calls and a 1 MiB produce request about 260, where the
//! plaintext path reads the same request in a few large reads straight into the frame
//! buffer. This layer answers rustls's small reads from one large read of up to
//! [`READ_AHEAD_BYTES`]: one system call per 64 KiB of ciphertext instead of sixteen, for a
//! copy in memory.
//!
//! The buffer exists only while bytes are flowing: it is allocated on the first small read
//! and released as soon as the socket has nothing more (the read would block), so an idle TLS
//! connection holds none of it. Writes pass straight through.
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most ciphertext read from the socket at once: four full TLS records.
pub const READ_AHEAD_BYTES: usize = 64 * 1024;

/// `io` with reads served from a buffer filled [`READ_AHEAD_BYTES`] at a time.
#[derive(Debug)]
pub struct ReadAhead<T> {
    io: T,
    /// Bytes read from `io` and not yet handed out; empty (and unallocated) when idle.
    buf: BytesMut,
}

impl<T> ReadAhead<T> {
    pub fn new(io: T) -> ReadAhead<T> {
        ReadAhead {
            io,
            buf: BytesMut::new(),
        }
    }

    pub fn get_ref(&self) -> &T {
        &self.io
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ReadAhead<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if me.buf.is_empty() {
            // A reader asking for as much as the buffer holds gains nothing from it.
            if out.remaining() >= READ_AHEAD_BYTES {
                return Pin::new(&mut me.io).poll_read(cx, out);
            }
            // Reuses the allocation while bytes flow (the buffer is empty, so nothing moves).
            me.buf.reserve(READ_AHEAD_BYTES);
            match tokio_util::io::poll_read_buf(Pin::new(&mut me.io), cx, &mut me.buf) {
                Poll::Pending => {
                    // Drained: let the memory go until the socket has bytes again.
                    me.buf = BytesMut::new();
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                // Zero bytes is the end of the stream: handed on as an empty read below.
                Poll::Ready(Ok(_)) => {}
            }
        }
        let n = out.remaining().min(me.buf.len());
        out.put_slice(&me.buf[..n]);
        me.buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ReadAhead<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Counts the reads that reach the inner stream.
    struct Counting<T> {
        io: T,
        reads: usize,
    }

    impl<T: AsyncRead + Unpin> AsyncRead for Counting<T> {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            out: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let me = self.get_mut();
            let r = Pin::new(&mut me.io).poll_read(cx, out);
            if r.is_ready() {
                me.reads += 1;
            }
            r
        }
    }

    #[tokio::test]
    async fn small_reads_are_served_from_one_large_read_and_the_bytes_stay_in_order() {
        let (mut tx, rx) = tokio::io::duplex(4 * READ_AHEAD_BYTES);
        let data: Vec<u8> = (0..3 * READ_AHEAD_BYTES).map(|i| (i % 251) as u8).collect();
        tx.write_all(&data).await.unwrap();
        drop(tx);
        let mut r = ReadAhead::new(Counting { io: rx, reads: 0 });
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = r.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(got, data);
        // 192 KiB in 4 KiB reads: 48 reads from above, 3 full reads and the EOF below.
        assert_eq!(r.get_ref().reads, 4);
    }

    #[tokio::test]
    async fn the_buffer_is_released_when_the_socket_has_nothing_more() {
        let (mut tx, rx) = tokio::io::duplex(READ_AHEAD_BYTES);
        tx.write_all(b"abc").await.unwrap();
        let mut r = ReadAhead::new(rx);
        let mut one = [0u8; 1];
        r.read_exact(&mut one).await.unwrap();
        // One large read: the rest of its buffer (less the byte handed out) waits.
        assert_eq!(r.buf.capacity(), READ_AHEAD_BYTES - 1);
        assert_eq!(&r.buf[..], b"bc");
        let mut two = [0u8; 2];
        r.read_exact(&mut two).await.unwrap();
        assert_eq!((&one[..], &two[..]), (&b"a"[..], &b"bc"[..]));
        // The next read finds nothing: it waits without holding the buffer.
        let pending = tokio::time::timeout(std::time::Duration::from_millis(50), r.read(&mut one));
        assert!(pending.await.is_err());
        assert_eq!(r.buf.capacity(), 0);
        tx.write_all(b"d").await.unwrap();
        r.read_exact(&mut one).await.unwrap();
        assert_eq!(&one, b"d");
    }

    #[tokio::test]
    async fn large_reads_bypass_the_buffer_and_writes_pass_through() {
        let (mut a, b) = tokio::io::duplex(4 * READ_AHEAD_BYTES);
        let mut r = ReadAhead::new(b);
        r.write_all(b"to the peer").await.unwrap();
        let mut seen = [0u8; 11];
        a.read_exact(&mut seen).await.unwrap();
        assert_eq!(&seen, b"to the peer");
        a.write_all(&[7u8; 1000]).await.unwrap();
        let mut big = vec![0u8; READ_AHEAD_BYTES];
        let n = r.read(&mut big).await.unwrap();
        assert_eq!(n, 1000);
        assert_eq!(r.buf.capacity(), 0, "not buffered");
    }
}
