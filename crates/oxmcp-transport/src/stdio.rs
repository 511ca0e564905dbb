//! The server side of stdio: frames from stdin, lines to stdout.

use oxmcp_jsonrpc::{Inbound, Outbound};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::ndjson::{read_frames, write_frames};

/// The two channels a transport gives the engine.
#[derive(Debug)]
pub struct Channels {
    /// Incoming frames, one JSON text each.
    pub incoming: mpsc::Receiver<Inbound>,
    /// Outgoing encoded messages.
    pub outgoing: mpsc::Sender<Outbound>,
}

/// Queue depth between the transport tasks and the engine.
pub const QUEUE_DEPTH: usize = 1024;

/// Serves frames over any reader and writer; returns the channels and the writer task (which
/// ends, flushing, once every sender of `outgoing` is dropped).
pub fn from_io<R, W>(reader: R, writer: W, max_line: usize) -> (Channels, JoinHandle<()>)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    from_io_until(reader, writer, max_line, std::future::pending())
}

/// [`from_io`] that stops reading when `stop` completes (a graceful shutdown: the engine's
/// input ends, so it answers what it accepted and reads nothing more).
pub fn from_io_until<R, W>(
    reader: R,
    writer: W,
    max_line: usize,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> (Channels, JoinHandle<()>)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (in_tx, in_rx) = mpsc::channel(QUEUE_DEPTH);
    let (out_tx, out_rx) = mpsc::channel(QUEUE_DEPTH);
    tokio::spawn(read_frames(
        tokio::io::BufReader::with_capacity(64 * 1024, reader),
        max_line,
        in_tx,
        stop,
    ));
    let writer = tokio::spawn(write_frames(writer, out_rx));
    (
        Channels {
            incoming: in_rx,
            outgoing: out_tx,
        },
        writer,
    )
}

/// This process's stdin and stdout as a transport.
///
/// When both are pipes (the usual case for a server spawned by a client) they are read and
/// written non-blocking on the runtime itself; otherwise (either is a terminal or a file) both
/// through tokio's blocking-thread stdio, their descriptors' flags untouched.
pub fn stdio(max_line: usize) -> (Channels, JoinHandle<()>) {
    stdio_until(max_line, std::future::pending())
}

/// [`stdio`] that stops reading stdin when `stop` completes (see [`from_io_until`]).
pub fn stdio_until(
    max_line: usize,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> (Channels, JoinHandle<()>) {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt as _;
    use tokio::net::unix::pipe;
    let pipes = (|| {
        let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned().ok()?);
        let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().ok()?);
        // Both or neither: a descriptor made non-blocking here and then read or written by
        // tokio's blocking stdio fails with EAGAIN (and the flag is shared with the parent).
        let is_pipe = |f: &std::fs::File| f.metadata().is_ok_and(|m| m.file_type().is_fifo());
        if !is_pipe(&stdin) || !is_pipe(&stdout) {
            return None;
        }
        let rx = pipe::Receiver::from_file(stdin).ok()?;
        match pipe::Sender::from_file(stdout) {
            Ok(tx) => Some((rx, tx)),
            Err(e) => {
                // A pipe opened for reading only, say: stdin goes back to blocking.
                tracing::debug!("stdout is a pipe tokio does not take ({e})");
                if let Err(e) = rx.into_blocking_fd() {
                    tracing::warn!("stdin could not be made blocking again: {e}");
                }
                None
            }
        }
    })();
    match pipes {
        Some((rx, tx)) => from_io_until(rx, tx, max_line, stop),
        None => from_io_until(tokio::io::stdin(), tokio::io::stdout(), max_line, stop),
    }
}
