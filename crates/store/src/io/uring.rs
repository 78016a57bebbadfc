//! The io_uring batched-read backend (Linux).
//!
//! A directory that probes io_uring successfully at open keeps a
//! [`RingPool`]; each batch takes a ring of its own from it (creating one
//! if all are busy) and gives it back afterwards, so batches from several
//! threads run at once. A batch keeps up to [`MAX_IN_FLIGHT`] reads in
//! flight, refilling as completions arrive, and calls `done` on the calling
//! thread for each completed request.
//!
//! Soundness rests on one rule: a buffer the kernel may write is neither
//! freed nor moved until its completion has been reaped. Buffers are
//! allocated before submission and kept in a slab indexed by `user_data`;
//! the slab may move the `Vec` headers, never their heap storage. If a
//! batch unwinds (a panicking `done`) or the ring fails, [`Batch`]'s `Drop`
//! waits for every outstanding completion and, if even that fails, leaks
//! the ring and the buffers rather than free memory the kernel may still
//! write.

#![allow(unsafe_code)]

use std::io;
use std::mem;
use std::os::fd::AsRawFd;
use std::sync::Mutex;

use io_uring::{opcode, types, IoUring, Probe};

use super::direct::{eof, AlignedBuf, Window};
use super::pread_pool::{self, Reader};
use super::ReadRequest;

/// Submission queue entries per ring.
const RING_ENTRIES: u32 = 256;

/// Reads one batch keeps in flight.
const MAX_IN_FLIGHT: usize = 128;

/// Largest single read submitted; longer requests continue as short reads.
const MAX_CHUNK: usize = 1 << 30;

/// Idle rings kept for reuse; rings beyond this are closed when returned.
const MAX_IDLE_RINGS: usize = 16;

/// The `user_data` of the probe's no-op.
const PROBE_USER_DATA: u64 = u64::MAX;

/// The rings of one directory.
pub(super) struct RingPool {
    idle: Mutex<Vec<IoUring>>,
}

impl std::fmt::Debug for RingPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map(|idle| idle.len()).unwrap_or(0);
        f.debug_struct("RingPool")
            .field("idle_rings", &idle)
            .finish()
    }
}

impl RingPool {
    /// Creates a ring, checks that the kernel supports `IORING_OP_READ`
    /// and completes a no-op through it. Any failure (EPERM under seccomp
    /// or `io_uring_disabled`, ENOSYS, EINVAL on old kernels) is returned
    /// so the caller can fall back to the thread pool.
    pub(super) fn probe() -> io::Result<RingPool> {
        let mut ring = IoUring::new(RING_ENTRIES)?;
        let mut probe = Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        if !probe.is_supported(opcode::Read::CODE) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "io_uring without IORING_OP_READ",
            ));
        }
        let nop = opcode::Nop::new().build().user_data(PROBE_USER_DATA);
        // SAFETY: a no-op references no buffer or file descriptor, so there
        // is nothing that must outlive its execution.
        unsafe { ring.submission().push(&nop) }
            .map_err(|_| io::Error::other("io_uring probe: submission queue full"))?;
        loop {
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if let Some(cqe) = ring.completion().next() {
                if cqe.user_data() != PROBE_USER_DATA {
                    return Err(io::Error::other("io_uring probe: unexpected completion"));
                }
                if cqe.result() < 0 {
                    return Err(io::Error::from_raw_os_error(-cqe.result()));
                }
                break;
            }
        }
        Ok(RingPool {
            idle: Mutex::new(vec![ring]),
        })
    }

    fn take(&self) -> io::Result<IoUring> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(ring) => Ok(ring),
            None => IoUring::new(RING_ENTRIES),
        }
    }

    fn give_back(&self, ring: IoUring) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE_RINGS {
            idle.push(ring);
        }
    }

    /// Reads every request of the batch through a ring of the pool; falls
    /// back to the thread pool if no ring can be had or the ring fails.
    pub(super) fn read_batch(
        &self,
        reader: &Reader,
        requests: &[ReadRequest],
        done: &mut dyn FnMut(usize, io::Result<Vec<u8>>),
    ) {
        let ring = match self.take() {
            Ok(ring) => ring,
            Err(_) => {
                pread_pool::read_batch(reader, requests.iter().copied().enumerate(), done);
                return;
            }
        };
        let mut batch = Batch {
            ring: Some(ring),
            pool: self,
            slots: Vec::with_capacity(MAX_IN_FLIGHT),
            free: Vec::new(),
            in_flight: 0,
        };
        if let Err(unfinished) = batch.run(reader, requests, done) {
            // The ring failed: whatever it had not finished is read by the
            // pool. `batch` has already waited for (or leaked) its buffers.
            drop(batch);
            pread_pool::read_batch(reader, unfinished, done);
        }
    }
}

/// One request being read: its buffer, and how much of it is filled.
struct Slot {
    index: usize,
    buf: SlotBuf,
    filled: usize,
}

/// Where a request's bytes are read to.
enum SlotBuf {
    /// Through the page cache: straight into the answer, from its offset.
    Buffered { offset: u64, bytes: Vec<u8> },
    /// `O_DIRECT`: the request's aligned window, into an aligned region.
    Direct { window: Window, buf: AlignedBuf },
}

impl Slot {
    fn new(index: usize, request: ReadRequest, direct: bool) -> io::Result<Slot> {
        let buf = if direct {
            let window = Window::of(request.offset, request.len)?;
            SlotBuf::Direct {
                window,
                buf: AlignedBuf::zeroed(window.span),
            }
        } else {
            if request.offset.checked_add(request.len as u64).is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "read range overflows the file offset",
                ));
            }
            SlotBuf::Buffered {
                offset: request.offset,
                bytes: vec![0u8; request.len],
            }
        };
        Ok(Slot {
            index,
            buf,
            filled: 0,
        })
    }

    /// The file offset of the next byte to read, and the part of the
    /// buffer still to fill.
    fn unfilled(&mut self) -> (u64, &mut [u8]) {
        let filled = self.filled;
        match &mut self.buf {
            SlotBuf::Buffered { offset, bytes } => (*offset + filled as u64, &mut bytes[filled..]),
            SlotBuf::Direct { window, buf } => (
                window.start + filled as u64,
                &mut buf.region_mut()[filled..],
            ),
        }
    }

    /// Counts `read` more bytes; `Some(answer)` once the request is
    /// complete or can no longer be (a direct read cut short by the end of
    /// the file), `None` while more must be read.
    fn advance(&mut self, read: usize) -> Option<io::Result<Vec<u8>>> {
        self.filled += read;
        match &mut self.buf {
            SlotBuf::Buffered { bytes, .. } => {
                self.filled = self.filled.min(bytes.len());
                (self.filled == bytes.len()).then(|| Ok(mem::take(bytes)))
            }
            SlotBuf::Direct { window, buf } => {
                if self.filled >= window.needed() {
                    Some(Ok(buf.take(window)))
                } else if !window.can_continue(self.filled) {
                    Some(Err(eof()))
                } else {
                    None
                }
            }
        }
    }
}

/// A ring taken from the pool for one batch, and the buffers it reads into.
struct Batch<'p> {
    /// `None` once the ring has been given back or leaked.
    ring: Option<IoUring>,
    pool: &'p RingPool,
    /// Slab of requests being read, indexed by `user_data`.
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Reads pushed to the submission queue whose completion has not been
    /// taken from the completion queue yet: the kernel may still write
    /// their buffers.
    in_flight: usize,
}

/// A completion taken from the ring: slot and result.
type Completion = (usize, i32);

impl Batch<'_> {
    /// Runs the batch. On a ring failure, returns the requests not yet
    /// answered (index, request), to be read another way.
    fn run(
        &mut self,
        reader: &Reader,
        requests: &[ReadRequest],
        done: &mut dyn FnMut(usize, io::Result<Vec<u8>>),
    ) -> Result<(), Vec<(usize, ReadRequest)>> {
        let fd = types::Fd(reader.file.as_raw_fd());
        let mut next = 0usize;
        // Slots holding a request that is not in flight but must be
        // (re)submitted: new, short-read remainders, EINTR/EAGAIN retries.
        let mut pending: Vec<usize> = Vec::new();
        let mut completions: Vec<Completion> = Vec::with_capacity(MAX_IN_FLIGHT);
        loop {
            // Fill the submission queue up to MAX_IN_FLIGHT reads.
            while self.in_flight < MAX_IN_FLIGHT {
                let slot = if let Some(slot) = pending.pop() {
                    slot
                } else if next < requests.len() {
                    let index = next;
                    let request = requests[index];
                    next += 1;
                    if request.len == 0 {
                        done(index, Ok(Vec::new()));
                        continue;
                    }
                    match Slot::new(index, request, reader.direct) {
                        Ok(slot) => self.insert(slot),
                        Err(error) => {
                            done(index, Err(error));
                            continue;
                        }
                    }
                } else {
                    break;
                };
                if !self.push(fd, slot) {
                    // Submission queue full (entries not yet consumed by
                    // the kernel): retry after the next submit.
                    pending.push(slot);
                    break;
                }
            }
            if self.in_flight == 0 {
                // Nothing in flight means the submission queue is empty, so
                // the fill above stopped only because there is no more work.
                debug_assert!(pending.is_empty() && next == requests.len());
                return Ok(());
            }
            let Some(ring) = self.ring.as_mut() else {
                return Err(self.unfinished(requests, next));
            };
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) => match e.raw_os_error() {
                    // Interrupted, or the kernel is short of resources or
                    // has completions to flush: reap what is there, retry.
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY) => {
                        if ring.completion().is_empty() {
                            std::thread::yield_now();
                        }
                    }
                    _ => {
                        // The ring is unusable. Reap what completed, then
                        // give up on it; `abandon` keeps in-flight buffers
                        // alive for ever.
                        self.reap(&mut completions);
                        self.finish(&mut completions, &mut pending, done);
                        return Err(self.unfinished(requests, next));
                    }
                },
            }
            self.reap(&mut completions);
            self.finish(&mut completions, &mut pending, done);
        }
    }

    fn insert(&mut self, slot: Slot) -> usize {
        match self.free.pop() {
            Some(id) => {
                self.slots[id] = Some(slot);
                id
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        }
    }

    fn remove(&mut self, id: usize) -> Option<Slot> {
        let slot = self.slots.get_mut(id).and_then(Option::take);
        if slot.is_some() {
            self.free.push(id);
        }
        slot
    }

    /// Pushes the read of the unfilled part of slot `id`; false if the
    /// submission queue is full.
    fn push(&mut self, fd: types::Fd, id: usize) -> bool {
        let Some(ring) = self.ring.as_mut() else {
            return false;
        };
        let Some(Some(slot)) = self.slots.get_mut(id) else {
            return false;
        };
        let (offset, unfilled) = slot.unfilled();
        #[allow(clippy::cast_possible_truncation)] // at most MAX_CHUNK (1 GiB)
        let len = unfilled.len().min(MAX_CHUNK) as u32;
        // The slot is unfinished, so `unfilled` is not empty and `len`
        // bytes from its start fit in the buffer.
        let buf = unfilled.as_mut_ptr();
        let entry = opcode::Read::new(fd, buf, len)
            .offset(offset)
            .build()
            .user_data(id as u64);
        // SAFETY: the entry points at `len` bytes inside the heap allocation
        // of the slot's buffer (a `Vec`), which stays allocated and unmoved until the
        // completion is reaped: the slot is only removed from the slab
        // after its completion is taken from the ring (`finish`), the
        // slab's growth moves `Vec` headers but never their heap storage,
        // and if the batch ends early (`Drop`) it waits for every
        // outstanding completion or leaks the buffers. No other reference
        // to the buffer is used meanwhile. `fd` is the batch's file, which
        // the caller borrows for the whole batch, and the kernel holds its
        // own reference to the file once the read is submitted.
        let pushed = unsafe { ring.submission().push(&entry) }.is_ok();
        if pushed {
            self.in_flight += 1;
        }
        pushed
    }

    /// Moves every available completion from the ring into `completions`;
    /// from then on the kernel no longer touches those buffers.
    fn reap(&mut self, completions: &mut Vec<Completion>) {
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        for cqe in ring.completion() {
            self.in_flight = self.in_flight.saturating_sub(1);
            #[allow(clippy::cast_possible_truncation)] // the slot id `push` stored
            let id = cqe.user_data() as usize;
            completions.push((id, cqe.result()));
        }
    }

    /// Acts on reaped completions: answers finished requests, queues short
    /// reads and retries in `pending`.
    fn finish(
        &mut self,
        completions: &mut Vec<Completion>,
        pending: &mut Vec<usize>,
        done: &mut dyn FnMut(usize, io::Result<Vec<u8>>),
    ) {
        for (id, result) in completions.drain(..) {
            if result < 0 {
                let errno = -result;
                if errno == libc::EINTR || errno == libc::EAGAIN {
                    pending.push(id);
                } else if let Some(slot) = self.remove(id) {
                    done(slot.index, Err(io::Error::from_raw_os_error(errno)));
                }
                continue;
            }
            if result == 0 {
                if let Some(slot) = self.remove(id) {
                    done(slot.index, Err(eof()));
                }
                continue;
            }
            let Some(Some(slot)) = self.slots.get_mut(id) else {
                continue;
            };
            if let Some(answer) = slot.advance(result as usize) {
                if let Some(slot) = self.remove(id) {
                    done(slot.index, answer);
                }
            } else {
                pending.push(id);
            }
        }
    }

    /// The requests not answered yet, after a ring failure: those in
    /// flight or pending, and those never started.
    fn unfinished(&mut self, requests: &[ReadRequest], next: usize) -> Vec<(usize, ReadRequest)> {
        // Pending slots are still in the slab, so they are listed too.
        let mut left: Vec<(usize, ReadRequest)> = Vec::new();
        for slot in self.slots.iter().flatten() {
            left.push((slot.index, requests[slot.index]));
        }
        left.extend(requests.iter().copied().enumerate().skip(next));
        left
    }

    /// Waits until the kernel has finished with every buffer of the batch.
    fn drain(&mut self) -> io::Result<()> {
        let mut discarded: Vec<Completion> = Vec::new();
        while self.in_flight > 0 {
            let Some(ring) = self.ring.as_mut() else {
                return Err(io::Error::other("io_uring ring missing"));
            };
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY) => {}
                    _ => return Err(e),
                },
            }
            self.reap(&mut discarded);
            discarded.clear();
        }
        Ok(())
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if self.drain().is_ok() {
            self.slots.clear();
            if let Some(ring) = self.ring.take() {
                self.pool.give_back(ring);
            }
        } else {
            // The kernel may still write into buffers of reads we cannot
            // wait for: leak them and the ring (closing it would not wait
            // for the reads either) rather than free that memory.
            mem::forget(mem::take(&mut self.slots));
            if let Some(ring) = self.ring.take() {
                mem::forget(ring);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests {
    use super::*;
    use std::fs::File;
    use std::sync::Arc;

    #[test]
    fn probe_and_ring_reuse() {
        let Ok(pool) = RingPool::probe() else {
            // io_uring not allowed here; the pool backend is tested instead.
            return;
        };
        let path = std::env::temp_dir().join(format!("ubt-uring-unit-{}", std::process::id()));
        let content: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let mut readers = vec![Reader {
            file: Arc::new(File::open(&path).unwrap()),
            direct: false,
        }];
        match super::super::direct::tests::open_direct(&path) {
            Some(file) => readers.push(Reader {
                file: Arc::new(file),
                direct: true,
            }),
            None => eprintln!("skipping direct reads: the temporary directory refuses O_DIRECT"),
        }
        // More requests than MAX_IN_FLIGHT and than ring entries, one
        // zero-length, one straddling the end, one past it.
        let mut requests: Vec<ReadRequest> = (0..1000)
            .map(|i| ReadRequest {
                offset: (i * 97) as u64,
                len: 1 + i % 300,
            })
            .collect();
        requests.push(ReadRequest { offset: 5, len: 0 });
        requests.push(ReadRequest {
            offset: 99_990,
            len: 20,
        });
        requests.push(ReadRequest {
            offset: 200_000,
            len: 1,
        });
        requests.push(ReadRequest {
            offset: u64::MAX - 1,
            len: 4,
        });
        for (round, reader) in (0..3).flat_map(|round| readers.iter().map(move |r| (round, r))) {
            let mut seen = vec![0u32; requests.len()];
            pool.read_batch(reader, &requests, &mut |index, result| {
                seen[index] += 1;
                let r = requests[index];
                if index < 1001 {
                    let start = r.offset as usize;
                    assert_eq!(result.unwrap(), &content[start..start + r.len]);
                } else {
                    assert!(result.is_err(), "request {index} should fail");
                }
            });
            assert!(
                seen.iter().all(|&n| n == 1),
                "round {round}, direct {}",
                reader.direct
            );
        }
        assert_eq!(pool.idle.lock().unwrap().len(), 1);
        std::fs::remove_file(&path).unwrap();
    }
}
