//! Cutting a dump into lines on a thread of its own: lines up to the
//! long-line limit are gathered into batches (parsed in parallel by the
//! importing thread); a longer line is handed over as a stream of chunks
//! (its first part, then the rest through a bounded channel) so that no
//! line is ever held whole, whatever its length.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;

/// Bytes read from the input at a time.
const READ_BYTES: usize = 1 << 20;
/// Chunks of a long line in flight.
const LONG_LINE_CHUNKS_IN_FLIGHT: usize = 4;

/// One line of a batch: its number and where its bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineSpan {
    /// 1-based line number.
    pub number: u64,
    /// Start of the line in the batch's bytes.
    pub start: usize,
    /// End of the line (its newline excluded).
    pub end: usize,
}

/// Whole lines, back to back.
#[derive(Debug, Default)]
pub(crate) struct LineBatch {
    /// The lines' bytes.
    pub bytes: Vec<u8>,
    /// The lines.
    pub lines: Vec<LineSpan>,
}

/// What the splitter hands over, in input order.
pub(crate) enum Piece {
    /// Lines up to the long-line limit.
    Lines(LineBatch),
    /// A line longer than the limit: its first bytes, then the rest as
    /// chunks until the channel closes (at the line's end).
    LongLine {
        /// 1-based line number.
        number: u64,
        /// The line's first bytes.
        prefix: Vec<u8>,
        /// The rest of the line.
        rest: Receiver<Vec<u8>>,
    },
}

/// Splits `input` into pieces sent to `pieces` until the input ends, a
/// receiver goes away, or reading fails (the error is left in `failure`).
pub(crate) fn split(
    mut input: impl Read,
    pieces: SyncSender<Piece>,
    batch_bytes: usize,
    long_line_bytes: usize,
    bytes_read: &AtomicU64,
    failure: &Mutex<Option<io::Error>>,
) {
    let mut splitter = Splitter {
        pieces,
        batch: LineBatch::default(),
        line_start: 0,
        number: 1,
        streaming: None,
        batch_bytes,
        long_line_bytes,
    };
    let mut block = vec![0u8; READ_BYTES];
    loop {
        let n = match input.read(&mut block) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                return;
            }
        };
        if n == 0 {
            break;
        }
        bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        if !splitter.feed(&block[..n]) {
            return;
        }
    }
    splitter.finish();
}

struct Splitter {
    pieces: SyncSender<Piece>,
    batch: LineBatch,
    /// Start of the unfinished line in the batch.
    line_start: usize,
    /// Number of the unfinished line.
    number: u64,
    /// The rest of a long line goes here.
    streaming: Option<SyncSender<Vec<u8>>>,
    batch_bytes: usize,
    long_line_bytes: usize,
}

impl Splitter {
    /// Takes the next input bytes; `false` when a receiver is gone.
    fn feed(&mut self, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            if let Some(rest) = &self.streaming {
                let end = memchr::memchr(b'\n', data);
                let chunk = &data[..end.unwrap_or(data.len())];
                if !chunk.is_empty() && rest.send(chunk.to_vec()).is_err() {
                    return false;
                }
                match end {
                    Some(newline) => {
                        self.streaming = None;
                        self.number += 1;
                        data = &data[newline + 1..];
                    }
                    None => data = &[],
                }
                continue;
            }
            let line_len = self.batch.bytes.len() - self.line_start;
            // Bytes this line may still take before it is a long line.
            let room = self.long_line_bytes.saturating_sub(line_len);
            let window = &data[..data.len().min(room + 1)];
            match memchr::memchr(b'\n', window) {
                Some(newline) => {
                    self.batch.bytes.extend_from_slice(&data[..newline]);
                    self.end_line();
                    data = &data[newline + 1..];
                    if self.batch.bytes.len() >= self.batch_bytes && !self.send_batch() {
                        return false;
                    }
                }
                None if window.len() > room => {
                    self.batch.bytes.extend_from_slice(window);
                    data = &data[window.len()..];
                    if !self.start_long_line() {
                        return false;
                    }
                }
                None => {
                    self.batch.bytes.extend_from_slice(data);
                    data = &[];
                }
            }
        }
        true
    }

    fn end_line(&mut self) {
        self.batch.lines.push(LineSpan {
            number: self.number,
            start: self.line_start,
            end: self.batch.bytes.len(),
        });
        self.number += 1;
        self.line_start = self.batch.bytes.len();
    }

    /// Sends the batch's whole lines; `false` when the receiver is gone.
    fn send_batch(&mut self) -> bool {
        debug_assert_eq!(self.line_start, self.batch.bytes.len());
        if self.batch.lines.is_empty() {
            return true;
        }
        let batch = std::mem::take(&mut self.batch);
        self.line_start = 0;
        self.pieces.send(Piece::Lines(batch)).is_ok()
    }

    /// The unfinished line is too long: hand it over as a stream.
    fn start_long_line(&mut self) -> bool {
        let prefix = self.batch.bytes.split_off(self.line_start);
        if !self.send_batch() {
            return false;
        }
        self.batch.bytes.clear();
        self.line_start = 0;
        let (sender, receiver) = sync_channel(LONG_LINE_CHUNKS_IN_FLIGHT);
        self.streaming = Some(sender);
        self.pieces
            .send(Piece::LongLine {
                number: self.number,
                prefix,
                rest: receiver,
            })
            .is_ok()
    }

    /// The input ended.
    fn finish(mut self) {
        if self.streaming.take().is_some() {
            return;
        }
        if self.batch.bytes.len() > self.line_start {
            self.end_line();
        }
        self.send_batch();
    }
}

/// The bytes of a long line: its prefix, then the chunks until the
/// channel closes.
pub(crate) struct ChunkReader {
    current: Vec<u8>,
    position: usize,
    rest: Receiver<Vec<u8>>,
}

impl ChunkReader {
    /// Reads `prefix`, then `rest`.
    pub fn new(prefix: Vec<u8>, rest: Receiver<Vec<u8>>) -> ChunkReader {
        ChunkReader {
            current: prefix,
            position: 0,
            rest,
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.position == self.current.len() {
            match self.rest.recv() {
                Ok(chunk) => {
                    self.current = chunk;
                    self.position = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.position);
        buf[..n].copy_from_slice(&self.current[self.position..self.position + n]);
        self.position += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the splitter makes of `input`: (number, line) pairs, long lines
    /// marked.
    fn lines_of(input: &[u8], long_line_bytes: usize) -> Vec<(u64, String, bool)> {
        let (sender, receiver) = sync_channel(2);
        let bytes_read = AtomicU64::new(0);
        let failure = Mutex::new(None);
        let mut out = Vec::new();
        std::thread::scope(|scope| {
            let (bytes_read, failure) = (&bytes_read, &failure);
            scope.spawn(move || split(input, sender, 7, long_line_bytes, bytes_read, failure));
            for piece in receiver {
                match piece {
                    Piece::Lines(batch) => {
                        for span in batch.lines {
                            let text = String::from_utf8_lossy(&batch.bytes[span.start..span.end]);
                            out.push((span.number, text.into_owned(), false));
                        }
                    }
                    Piece::LongLine {
                        number,
                        prefix,
                        rest,
                    } => {
                        let mut text = Vec::new();
                        let _ = ChunkReader::new(prefix, rest).read_to_end(&mut text);
                        out.push((number, String::from_utf8_lossy(&text).into_owned(), true));
                    }
                }
            }
        });
        assert_eq!(bytes_read.load(Ordering::Relaxed), input.len() as u64);
        out
    }

    #[test]
    fn lines_keep_their_numbers_and_long_ones_stream() {
        let input = b"ab\n\nlong line here\ncd\nxxxxx";
        let got = lines_of(input, 5);
        let expected = [
            (1, "ab", false),
            (2, "", false),
            (3, "long line here", true),
            (4, "cd", false),
            (5, "xxxxx", false),
        ];
        let expected: Vec<(u64, String, bool)> = expected
            .iter()
            .map(|(n, t, l)| (*n, t.to_string(), *l))
            .collect();
        assert_eq!(got, expected);
        let got = lines_of(b"abcdef", 5);
        assert_eq!(got, vec![(1, "abcdef".to_string(), true)]);
        assert_eq!(lines_of(b"", 5), vec![]);
        assert_eq!(lines_of(b"a\n", 5), vec![(1, "a".to_string(), false)]);
    }
}
