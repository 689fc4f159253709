//! The I/O threads: the stdin reader (one bounded line at a time) and the stdout writer
//! (queued answers batched into one write), and [`Output`], where every answer goes.
//!
//! Each side is a thread doing blocking I/O rather than tokio's stdin/stdout, which run every
//! read and write on the blocking pool: one thread hand-off less per request.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use super::{MAX_IN_FLIGHT, MAX_LINE_BYTES};

/// Queued answers are gathered into one write of up to about this many bytes.
const WRITE_BATCH_BYTES: usize = 256 * 1024;

/// Lines read ahead of the server loop, at most.
const READ_AHEAD_LINES: usize = 64;

/// One line of input, as the reader thread reports it.
pub(super) enum Line {
    /// A line without its newline, at most [`MAX_LINE_BYTES`] long.
    Data(Vec<u8>),
    /// A line longer than [`MAX_LINE_BYTES`], consumed and dropped.
    TooLarge,
    /// The end of the input.
    Eof,
}

/// Read one line of at most `cap` bytes. An over-long line is consumed in chunks and reported
/// as [`Line::TooLarge`] with memory bounded by `cap` plus one buffer.
fn read_line<R: BufRead>(reader: &mut R, cap: usize) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut too_large = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(if too_large {
                Line::TooLarge
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Data(buf)
            });
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(pos) => (pos, pos + 1),
            None => (chunk.len(), chunk.len()),
        };
        if !too_large {
            if buf.len() + take > cap {
                too_large = true;
                buf = Vec::new();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        let newline = done > take;
        reader.consume(done);
        if newline {
            return Ok(if too_large {
                Line::TooLarge
            } else {
                Line::Data(buf)
            });
        }
    }
}

/// Start the reader thread on `reader`; its lines (or the read error that ended it) arrive on
/// the returned channel.
///
/// The thread is not joined: on a shutdown signal it may be blocked in a read that never
/// returns, and it ends with the process.
pub(super) fn spawn_reader<R: BufRead + Send + 'static>(
    reader: R,
) -> std::io::Result<mpsc::Receiver<std::io::Result<Line>>> {
    let (line_tx, lines) = mpsc::channel(READ_AHEAD_LINES);
    std::thread::Builder::new()
        .name("stdin-reader".into())
        .spawn(move || reader_thread(reader, line_tx))?;
    Ok(lines)
}

/// The reader thread: blocking reads of `reader`, one [`Line`] at a time into `lines`, until
/// EOF, a read error (sent as `Err`) or the receiver is gone. A full channel blocks it, which
/// is the back-pressure on a client that pipelines faster than we answer.
///
/// A blocking read here wakes as soon as the client writes.
fn reader_thread<R: BufRead>(mut reader: R, lines: mpsc::Sender<std::io::Result<Line>>) {
    loop {
        let line = read_line(&mut reader, MAX_LINE_BYTES);
        let last = !matches!(line, Ok(Line::Data(_) | Line::TooLarge));
        if lines.blocking_send(line).is_err() || last {
            return;
        }
    }
}

/// Where answers go: the output, shared by the writer thread and the request tasks, and the
/// queue the writer thread drains.
///
/// A task whose answer finds the queue empty and the output free writes it itself: one thread
/// wake-up less per round trip (on this project's VM a wake-up costs tens of µs). Otherwise
/// the answer is queued, and the writer thread sends every queued answer in one write and one
/// flush (under pipelining, one system call for many answers). Either way each answer is
/// flushed before anything waits on it. Answers may leave in any order; clients match them by
/// id.
pub(super) struct Output<W> {
    writer: Arc<parking_lot::Mutex<W>>,
    queue: mpsc::Sender<Vec<u8>>,
}

impl<W> Clone for Output<W> {
    fn clone(&self) -> Self {
        Output {
            writer: self.writer.clone(),
            queue: self.queue.clone(),
        }
    }
}

impl<W: Write> Output<W> {
    /// Write and flush `line` (without its newline) at once if nothing is queued and the output
    /// is free; otherwise (or on an I/O error, which the writer thread will meet and report)
    /// hand the line back for the queue.
    fn write_now(&self, mut line: Vec<u8>) -> Result<(), Vec<u8>> {
        if self.queue.capacity() == self.queue.max_capacity()
            && let Some(mut w) = self.writer.try_lock()
        {
            line.push(b'\n');
            if w.write_all(&line).and_then(|()| w.flush()).is_ok() {
                return Ok(());
            }
            line.pop();
        }
        Err(line)
    }

    /// Send one answer line (without its newline). Waits while [`MAX_IN_FLIGHT`] answers are
    /// queued: a client that does not read its answers slows us down instead of filling memory.
    pub(super) async fn send(&self, line: Vec<u8>) {
        if let Err(line) = self.write_now(line) {
            let _ = self.queue.send(line).await;
        }
    }

    /// [`Output::send`] for a thread outside the async runtime (the write executor); with
    /// `direct` false the answer is always queued.
    pub(super) fn send_blocking(&self, line: Vec<u8>, direct: bool) {
        let queued = if direct {
            self.write_now(line)
        } else {
            Err(line)
        };
        if let Err(line) = queued {
            let _ = self.queue.blocking_send(line);
        }
    }
}

/// The running writer thread, to join once every [`Output`] is dropped.
pub(super) struct WriterThread(JoinHandle<std::io::Result<()>>);

impl WriterThread {
    /// Wait for the writer thread to write what is queued, flush and end (it ends when every
    /// [`Output`] is gone).
    ///
    /// # Errors
    /// The writer's I/O error, or an error saying the thread panicked.
    pub(super) async fn join(self) -> std::io::Result<()> {
        tokio::task::spawn_blocking(move || self.0.join())
            .await
            .map_err(std::io::Error::other)?
            .unwrap_or_else(|_| Err(std::io::Error::other("the stdout writer panicked")))
    }
}

/// Start the writer thread on `writer`: the [`Output`] to send answers to, and the thread.
pub(super) fn spawn_writer<W: Write + Send + 'static>(
    writer: W,
) -> std::io::Result<(Output<W>, WriterThread)> {
    let (queue, out_rx) = mpsc::channel::<Vec<u8>>(MAX_IN_FLIGHT);
    let writer = Arc::new(parking_lot::Mutex::new(writer));
    let out = Output {
        writer: writer.clone(),
        queue,
    };
    let thread = std::thread::Builder::new()
        .name("stdout-writer".into())
        .spawn(move || writer_thread(writer, out_rx))?;
    Ok((out, WriterThread(thread)))
}

/// The writer thread: see [`Output`].
fn writer_thread<W: Write>(
    writer: Arc<parking_lot::Mutex<W>>,
    mut out: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    let mut batch = Vec::new();
    while let Some(line) = out.blocking_recv() {
        batch.clear();
        batch.extend_from_slice(&line);
        batch.push(b'\n');
        while batch.len() < WRITE_BATCH_BYTES {
            match out.try_recv() {
                Ok(line) => {
                    batch.extend_from_slice(&line);
                    batch.push(b'\n');
                }
                Err(_) => break,
            }
        }
        let mut w = writer.lock();
        w.write_all(&batch)?;
        w.flush()?;
    }
    writer.lock().flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_reported_without_keeping_them() {
        let mut input: Vec<u8> = vec![b'x'; 100];
        input.push(b'\n');
        input.extend_from_slice(b"ok\nlast");
        let mut r = std::io::BufReader::with_capacity(8, &input[..]);
        assert!(matches!(read_line(&mut r, 10).unwrap(), Line::TooLarge));
        assert!(matches!(read_line(&mut r, 10).unwrap(), Line::Data(d) if d == b"ok"));
        assert!(matches!(read_line(&mut r, 10).unwrap(), Line::Data(d) if d == b"last"));
        assert!(matches!(read_line(&mut r, 10).unwrap(), Line::Eof));
    }
}
