//! The byte stream of one connection, plaintext or TLS, for both ends: the broker's accepted
//! connections and the peer client's outbound ones. It reads and writes like any tokio
//! stream, so a phase that runs before the request loop (the SASL exchange) can read and
//! write frames on it; the request loop then splits it (a TCP stream without a lock, a TLS
//! stream with tokio's split), so PLAINTEXT costs nothing extra.
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::read_ahead::ReadAhead;

pub enum SecuredStream {
    Plain(TcpStream),
    /// Boxed: a TLS session is ~1 KB of state that a plaintext connection should not carry.
    /// The socket reads ahead under rustls ([`ReadAhead`]): rustls alone reads 4 KiB at a time.
    Tls(Box<tokio_rustls::TlsStream<ReadAhead<TcpStream>>>),
}

impl SecuredStream {
    pub fn is_tls(&self) -> bool {
        matches!(self, SecuredStream::Tls(_))
    }

    /// The TCP socket under the stream.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            SecuredStream::Plain(s) => s,
            SecuredStream::Tls(s) => s.get_ref().0.get_ref(),
        }
    }
}

impl AsyncRead for SecuredStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SecuredStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            SecuredStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for SecuredStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            SecuredStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            SecuredStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SecuredStream::Plain(s) => Pin::new(s).poll_flush(cx),
            SecuredStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SecuredStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            SecuredStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            SecuredStream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            SecuredStream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            SecuredStream::Plain(s) => s.is_write_vectored(),
            SecuredStream::Tls(s) => s.is_write_vectored(),
        }
    }
}
