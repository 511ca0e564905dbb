//! Newline-delimited JSON framing with a size limit.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use oxmcp_jsonrpc::{Inbound, Outbound};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Default maximum size of one line: 4 MiB.
pub const DEFAULT_MAX_LINE: usize = 4 * 1024 * 1024;

/// What reading one line gave.
#[derive(Debug, PartialEq, Eq)]
pub enum LineRead {
    /// A complete line (without the newline, and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the limit; its bytes were skipped up to the next newline.
    TooLong(usize),
    /// Bytes after the last newline when the input ended: an incomplete message, discarded.
    Partial(usize),
    /// End of input.
    Eof,
}

/// Reads newline-delimited frames, never buffering more than `max` bytes of one line.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// A reader with a line limit.
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            max,
            buf: Vec::new(),
        }
    }

    /// Reads the next line.
    ///
    /// # Errors
    /// I/O errors of the underlying reader.
    pub async fn next_line(&mut self) -> std::io::Result<LineRead> {
        let mut skipped: Option<usize> = None;
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                if let Some(n) = skipped {
                    return Ok(LineRead::TooLong(n));
                }
                if self.buf.is_empty() {
                    return Ok(LineRead::Eof);
                }
                // Messages end with a newline: what is left is an incomplete message.
                let n = self.buf.len();
                self.buf.clear();
                return Ok(LineRead::Partial(n));
            }
            let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], Some(i + 1)),
                None => (available, None),
            };
            let used = done.unwrap_or(chunk.len());
            match &mut skipped {
                Some(n) => *n += chunk.len(),
                None if self.buf.len() + chunk.len() > self.max => {
                    skipped = Some(self.buf.len() + chunk.len());
                    self.buf.clear();
                }
                None => self.buf.extend_from_slice(chunk),
            }
            self.inner.consume(used);
            if done.is_some() {
                if let Some(n) = skipped {
                    return Ok(LineRead::TooLong(n));
                }
                let mut line = std::mem::take(&mut self.buf);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(LineRead::Line(line));
            }
        }
    }
}

/// Reads lines from `reader` into `tx` until EOF, the receiver goes away or `stop` completes
/// (then the engine's input ends). Blank lines are skipped; oversized lines are logged and
/// dropped (there is no id to answer).
pub async fn read_frames<R: AsyncBufRead + Unpin>(
    reader: R,
    max_line: usize,
    tx: mpsc::Sender<Inbound>,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut lines = LineReader::new(reader, max_line);
    // Polled only when it wakes, not before every line: a cancellation token's `cancelled()`
    // takes two locks each time it is polled.
    let mut stop: FuturesUnordered<_> = std::iter::once(stop).collect();
    loop {
        let line = tokio::select! {
            biased;
            Some(()) = stop.next() => return,
            line = lines.next_line() => line,
        };
        match line {
            Ok(LineRead::Line(line)) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                if tx.send(Inbound::Frame(line)).await.is_err() {
                    return;
                }
            }
            Ok(LineRead::TooLong(n)) => {
                tracing::warn!(bytes = n, limit = max_line, "dropped an oversized line");
            }
            Ok(LineRead::Partial(n)) => {
                tracing::warn!(bytes = n, "input ended inside a line; discarded it");
            }
            Ok(LineRead::Eof) => return,
            Err(e) => {
                tracing::warn!("read error: {e}");
                return;
            }
        }
    }
}

/// Writes each received message's line plus `\n`, flushing whenever the queue is
/// momentarily empty (so pipelined responses go out in few writes). Stream signals
/// ([`Outbound::CloseStream`], [`Outbound::Ended`]) mean nothing on a single stream.
pub async fn write_frames<W>(writer: W, mut rx: mpsc::Receiver<Outbound>)
where
    W: AsyncWrite + Unpin,
{
    let mut w = tokio::io::BufWriter::with_capacity(64 * 1024, writer);
    while let Some(out) = rx.recv().await {
        if write_line(&mut w, &out).await.is_err() {
            return;
        }
        while let Ok(out) = rx.try_recv() {
            if write_line(&mut w, &out).await.is_err() {
                return;
            }
        }
        if let Err(e) = w.flush().await {
            tracing::debug!("write error: {e}");
            return;
        }
    }
    let _ = w.flush().await;
    let _ = w.shutdown().await;
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, out: &Outbound) -> std::io::Result<()> {
    let Some(line) = out.line() else {
        return Ok(());
    };
    w.write_all(line.as_bytes()).await?;
    w.write_all(b"\n").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn limits_and_recovers() {
        let input = b"short\n0123456789abcdef\r\nok\r\nlast".to_vec();
        let mut r = LineReader::new(tokio::io::BufReader::with_capacity(4, &input[..]), 8);
        assert_eq!(
            r.next_line().await.unwrap(),
            LineRead::Line(b"short".to_vec())
        );
        assert_eq!(r.next_line().await.unwrap(), LineRead::TooLong(17));
        assert_eq!(r.next_line().await.unwrap(), LineRead::Line(b"ok".to_vec()));
        assert_eq!(r.next_line().await.unwrap(), LineRead::Partial(4));
        assert_eq!(r.next_line().await.unwrap(), LineRead::Eof);
    }
}
