//! The I/O threads: the stdin reader (one bounded line at a time, within the memory budget)
//! and the stdout writer (queued answers batched into one write), and [`Output`], where every
//! answer goes.
//!
//! Each side is a thread doing blocking I/O rather than tokio's stdin/stdout, which run every
//! read and write on the blocking pool: one thread hand-off less per request.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use super::budget::{self, Budget, Charge, MAX_REQUEST_COST};
use super::{MAX_IN_FLIGHT, MAX_LINE_BYTES};
use crate::protocol::jsonrpc::{self, Id};

/// Queued answers are gathered into one write of up to about this many bytes.
const WRITE_BATCH_BYTES: usize = 256 * 1024;

/// Lines read ahead of the server loop, at most (each already within the memory budget).
const READ_AHEAD_LINES: usize = 64;

/// Bytes read from the input at a time.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Where requests come from: stdin, or any reader (which cannot wait for input and a stop at
/// once, so that stopping waits for its next line or EOF).
pub trait Input: Read + Send + 'static {
    /// Wait until input (or EOF) is ready to read, `true`, or `stop` has something to read,
    /// `false`. The default says input is ready, and the next read may block.
    fn wait_readable(&self, stop: &std::io::PipeReader) -> bool {
        let _ = stop;
        true
    }
}

impl Input for std::io::Stdin {
    #[cfg(unix)]
    fn wait_readable(&self, stop: &std::io::PipeReader) -> bool {
        use std::os::fd::AsRawFd;
        let mut fds = [
            libc::pollfd {
                fd: self.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        loop {
            // SAFETY: `fds` is a valid array of two `pollfd` for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n > 0 {
                return fds[0].revents != 0;
            }
            // EINTR (or a failure, on which the read will report the error): ask again, or
            // let the read find out.
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return true;
            }
        }
    }
}

impl Input for std::io::Cursor<Vec<u8>> {}

/// One line of input, as the reader thread reports it.
pub(super) enum Line {
    /// A line without its newline, at most [`MAX_LINE_BYTES`] long, not blank, and its share
    /// of the memory budget (held until it is answered).
    Data(Vec<u8>, Charge),
    /// A line longer than [`MAX_LINE_BYTES`], consumed and dropped.
    TooLarge,
    /// A line that would cost more than [`MAX_REQUEST_COST`] to parse, dropped unparsed.
    TooCostly {
        /// Its id, read without parsing the rest.
        id: Id,
        /// Its estimated cost in bytes.
        cost: usize,
    },
    /// The end of the input, or of reading it (see [`ReaderStop`]).
    Eof,
}

/// What [`read_line`] found.
enum Read1 {
    Data(Vec<u8>),
    TooLarge,
    Eof,
    /// Asked to stop with no complete line left in the buffer.
    Stopped,
}

/// Read one line of at most `cap` bytes. An over-long line is consumed in chunks and reported
/// as [`Read1::TooLarge`] with memory bounded by `cap` plus one buffer. Once `stop` is set, no
/// more bytes are read from the input: a line complete in the buffer is still returned, and a
/// partial one is dropped.
fn read_line<R: Input>(
    reader: &mut BufReader<R>,
    cap: usize,
    stop: &ReaderStop,
) -> std::io::Result<Read1> {
    let mut buf = Vec::new();
    let mut too_large = false;
    loop {
        while reader.buffer().is_empty() {
            if stop.flag.load(Ordering::SeqCst) {
                if !buf.is_empty() || too_large {
                    tracing::info!("shutdown: an incomplete last line was dropped");
                }
                return Ok(Read1::Stopped);
            }
            if reader.get_ref().wait_readable(&stop.wake_rx) {
                break;
            }
        }
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(if too_large {
                Read1::TooLarge
            } else if buf.is_empty() {
                Read1::Eof
            } else {
                Read1::Data(buf)
            });
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
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
                Read1::TooLarge
            } else {
                Read1::Data(buf)
            });
        }
    }
}

/// Asks the reader thread to stop reading the input (see [`read_line`]): it then hands on the
/// complete lines it holds and ends with [`Line::Eof`]. A byte on a pipe wakes a reader that
/// waits for input ([`Input::wait_readable`]), so that an idle reader needs no timer.
#[derive(Clone)]
pub(super) struct ReaderStop {
    flag: Arc<AtomicBool>,
    wake_rx: Arc<std::io::PipeReader>,
    wake_tx: Arc<std::io::PipeWriter>,
}

impl ReaderStop {
    fn new() -> std::io::Result<Self> {
        let (rx, tx) = std::io::pipe()?;
        Ok(ReaderStop {
            flag: Arc::new(AtomicBool::new(false)),
            wake_rx: Arc::new(rx),
            wake_tx: Arc::new(tx),
        })
    }

    /// Stop reading new bytes.
    pub(super) fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let _ = (&*self.wake_tx).write_all(b"x");
    }
}

/// Start the reader thread on `reader`; its lines (or the read error that ended it) arrive on
/// the returned channel, each within `budget`.
///
/// The thread is not joined: a reader without [`Input::wait_readable`] may be blocked in a
/// read that never returns, and it ends with the process.
pub(super) fn spawn_reader<R: Input>(
    reader: R,
    budget: Arc<Budget>,
) -> std::io::Result<(mpsc::Receiver<std::io::Result<Line>>, ReaderStop)> {
    let (line_tx, lines) = mpsc::channel(READ_AHEAD_LINES);
    let stop = ReaderStop::new()?;
    let thread_stop = stop.clone();
    let reader = BufReader::with_capacity(READ_BUFFER_BYTES, reader);
    std::thread::Builder::new()
        .name("stdin-reader".into())
        .spawn(move || reader_thread(reader, line_tx, &budget, &thread_stop))?;
    Ok((lines, stop))
}

/// The reader thread: reads of `reader`, one [`Line`] at a time into `lines`, until EOF, a
/// stop, a read error (sent as `Err`) or the receiver is gone. Waiting for the memory budget
/// (and a full channel) blocks it, which is the back-pressure on a client that sends faster
/// than we answer: the rest stays in the pipe.
fn reader_thread<R: Input>(
    mut reader: BufReader<R>,
    lines: mpsc::Sender<std::io::Result<Line>>,
    budget: &Arc<Budget>,
    stop: &ReaderStop,
) {
    loop {
        let line = match read_line(&mut reader, MAX_LINE_BYTES, stop) {
            Ok(Read1::Data(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(Read1::Data(bytes)) => match budget::cost_of(&bytes) {
                cost if cost > MAX_REQUEST_COST => Ok(Line::TooCostly {
                    id: jsonrpc::peek_id(&bytes),
                    cost,
                }),
                cost => {
                    let charge = budget.request(cost);
                    Ok(Line::Data(bytes, charge))
                }
            },
            Ok(Read1::TooLarge) => Ok(Line::TooLarge),
            Ok(Read1::Eof | Read1::Stopped) => Ok(Line::Eof),
            Err(e) => Err(e),
        };
        let last = !matches!(
            line,
            Ok(Line::Data(..) | Line::TooLarge | Line::TooCostly { .. })
        );
        if lines.blocking_send(line).is_err() || last {
            return;
        }
    }
}

/// Answers due, made and written, for the shutdown log.
#[derive(Default)]
pub(super) struct Tally {
    /// Lines read that are to be answered (not notifications).
    pub(super) due: AtomicUsize,
    /// Answers handed to [`Output`].
    pub(super) made: AtomicUsize,
    /// Answers written and flushed.
    pub(super) written: AtomicUsize,
}

/// Where answers go: the output, shared by the writer thread and the request tasks, and the
/// queue the writer thread drains.
///
/// A task whose answer finds the queue empty and the output free writes it itself: one thread
/// wake-up less per round trip (on this project's VM a wake-up costs tens of µs). Otherwise
/// the answer is queued, counted in the memory budget until written, and the writer thread
/// sends every queued answer in one write and one flush (under pipelining, one system call for
/// many answers). Either way each answer is flushed before anything waits on it. Answers may
/// leave in any order; clients match them by id.
pub(super) struct Output<W> {
    writer: Arc<parking_lot::Mutex<W>>,
    queue: mpsc::Sender<(Vec<u8>, Charge)>,
    budget: Arc<Budget>,
    tally: Arc<Tally>,
}

impl<W> Clone for Output<W> {
    fn clone(&self) -> Self {
        Output {
            writer: self.writer.clone(),
            queue: self.queue.clone(),
            budget: self.budget.clone(),
            tally: self.tally.clone(),
        }
    }
}

impl<W: Write> Output<W> {
    /// Write and flush `line` (without its newline) at once if nothing is queued and the output
    /// is free; otherwise (or on an I/O error, which the writer thread will meet and report)
    /// hand the line back for the queue.
    fn write_now(&self, mut line: Vec<u8>) -> Result<(), Vec<u8>> {
        self.tally.made.fetch_add(1, Ordering::Relaxed);
        if self.queue.capacity() == self.queue.max_capacity()
            && let Some(mut w) = self.writer.try_lock()
        {
            line.push(b'\n');
            if w.write_all(&line).and_then(|()| w.flush()).is_ok() {
                self.tally.written.fetch_add(1, Ordering::Relaxed);
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
            let charge = self.budget.answer(line.len());
            let _ = self.queue.send((line, charge)).await;
        }
    }

    /// [`Output::send`] for a thread outside the async runtime (the write executor); with
    /// `direct` false the answer is always queued.
    pub(super) fn send_blocking(&self, line: Vec<u8>, direct: bool) {
        let queued = if direct {
            self.write_now(line)
        } else {
            self.tally.made.fetch_add(1, Ordering::Relaxed);
            Err(line)
        };
        if let Err(line) = queued {
            let charge = self.budget.answer(line.len());
            let _ = self.queue.blocking_send((line, charge));
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

/// Start the writer thread on `writer`: the [`Output`] to send answers to (counted in
/// `budget` while queued, and in `tally`), and the thread.
pub(super) fn spawn_writer<W: Write + Send + 'static>(
    writer: W,
    budget: Arc<Budget>,
    tally: Arc<Tally>,
) -> std::io::Result<(Output<W>, WriterThread)> {
    let (queue, out_rx) = mpsc::channel(MAX_IN_FLIGHT);
    let writer = Arc::new(parking_lot::Mutex::new(writer));
    let out = Output {
        writer: writer.clone(),
        queue,
        budget,
        tally: tally.clone(),
    };
    let thread = std::thread::Builder::new()
        .name("stdout-writer".into())
        .spawn(move || writer_thread(writer, out_rx, &tally))?;
    Ok((out, WriterThread(thread)))
}

/// The writer thread: see [`Output`]. An answer's charge is given back once it is written.
fn writer_thread<W: Write>(
    writer: Arc<parking_lot::Mutex<W>>,
    mut out: mpsc::Receiver<(Vec<u8>, Charge)>,
    tally: &Tally,
) -> std::io::Result<()> {
    let mut batch = Vec::new();
    let mut charges = Vec::new();
    while let Some((line, charge)) = out.blocking_recv() {
        batch.clear();
        batch.extend_from_slice(&line);
        batch.push(b'\n');
        drop(line);
        charges.push(charge);
        while batch.len() < WRITE_BATCH_BYTES {
            match out.try_recv() {
                Ok((line, charge)) => {
                    batch.extend_from_slice(&line);
                    batch.push(b'\n');
                    charges.push(charge);
                }
                Err(_) => break,
            }
        }
        let mut w = writer.lock();
        w.write_all(&batch)?;
        w.flush()?;
        drop(w);
        tally.written.fetch_add(charges.len(), Ordering::Relaxed);
        charges.clear();
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
        let mut r = BufReader::with_capacity(8, std::io::Cursor::new(input));
        let go = ReaderStop::new().unwrap();
        assert!(matches!(
            read_line(&mut r, 10, &go).unwrap(),
            Read1::TooLarge
        ));
        assert!(matches!(read_line(&mut r, 10, &go).unwrap(), Read1::Data(d) if d == b"ok"));
        assert!(matches!(read_line(&mut r, 10, &go).unwrap(), Read1::Data(d) if d == b"last"));
        assert!(matches!(read_line(&mut r, 10, &go).unwrap(), Read1::Eof));
    }

    #[test]
    fn a_stop_delivers_the_complete_lines_buffered_and_reads_nothing_more() {
        let input = b"one\ntwo\nthr".to_vec();
        let mut r = BufReader::with_capacity(64, std::io::Cursor::new(input));
        let stop = ReaderStop::new().unwrap();
        assert!(matches!(read_line(&mut r, 10, &stop).unwrap(), Read1::Data(d) if d == b"one"));
        stop.stop();
        assert!(matches!(read_line(&mut r, 10, &stop).unwrap(), Read1::Data(d) if d == b"two"));
        assert!(matches!(
            read_line(&mut r, 10, &stop).unwrap(),
            Read1::Stopped
        ));
    }
}
