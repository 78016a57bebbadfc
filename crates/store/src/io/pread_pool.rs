//! The portable batched-read backend: a process-wide pool of threads that
//! issue blocking `pread` calls (`FileExt::read_exact_at`).
//!
//! Every batch sends its reads to the shared queue and receives the results
//! on a channel of its own, so the caller runs `done` on its own thread.
//! A batch keeps at most [`MAX_IN_FLIGHT_PER_BATCH`] reads queued or
//! running, refilling as results arrive: batches running at the same time
//! interleave instead of one waiting behind the whole of another, and no
//! batch ever waits for anything but its own reads, which the workers
//! always finish (a worker blocks on nothing but the `pread` itself), so
//! concurrent batches cannot deadlock.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::{direct, ReadRequest};

/// Threads in the process-wide pool.
pub(super) const POOL_THREADS: usize = 32;

/// Reads one batch keeps queued or running at once.
const MAX_IN_FLIGHT_PER_BATCH: usize = 64;

/// The result of one read, tagged with its index in the batch.
type Reply = (usize, io::Result<Vec<u8>>);

/// A descriptor to read from, and whether it was opened `O_DIRECT`
/// (its reads then go through [`direct::read_exact`]).
#[derive(Clone, Debug)]
pub(super) struct Reader {
    pub(super) file: Arc<File>,
    pub(super) direct: bool,
}

impl Reader {
    /// Reads `len` bytes at `offset`; a range past the end of the file is
    /// an `UnexpectedEof` error.
    pub(super) fn read_exact(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        if self.direct {
            direct::read_exact(&self.file, offset, len)
        } else {
            read_exact(&self.file, offset, len)
        }
    }
}

/// One `pread` for a worker.
struct Job {
    reader: Reader,
    offset: u64,
    len: usize,
    index: usize,
    /// Taken when the reply is sent; a job dropped without running (or
    /// whose read panicked) still answers, with an error, from `Drop`.
    reply: Option<Sender<Reply>>,
}

impl Job {
    fn run(mut self) {
        let result = self.reader.read_exact(self.offset, self.len);
        if let Some(reply) = self.reply.take() {
            // The batch may be gone (its `done` panicked); nobody to tell.
            let _ = reply.send((self.index, result));
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send((
                self.index,
                Err(io::Error::other(
                    "batched read was dropped before it completed",
                )),
            ));
        }
    }
}

/// Reads `len` bytes at `offset` through the page cache; a range past the
/// end of the file is an `UnexpectedEof` error.
pub(super) fn read_exact(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// The queue the workers take jobs from.
struct Shared {
    queue: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

struct Pool {
    shared: Arc<Shared>,
    /// Workers actually started (spawning may fail under resource limits).
    threads: usize,
}

static POOL: OnceLock<Pool> = OnceLock::new();

fn pool() -> &'static Pool {
    POOL.get_or_init(|| {
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        });
        let mut threads = 0;
        for n in 0..POOL_THREADS {
            let worker_shared = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("ubt-pread-{n}"))
                .stack_size(256 * 1024)
                .spawn(move || worker(&worker_shared));
            if spawned.is_ok() {
                threads += 1;
            }
        }
        Pool { shared, threads }
    })
}

fn worker(shared: &Shared) {
    loop {
        let job = {
            let mut queue = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(job) = queue.pop_front() {
                    break job;
                }
                queue = shared.ready.wait(queue).unwrap_or_else(|e| e.into_inner());
            }
        };
        // A panic inside the read (allocation aside, there is none to
        // expect) must not kill the worker; the job answers from `Drop`.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| job.run()));
    }
}

/// Reads `jobs` (index in the batch, request) through the pool, calling
/// `done` on this thread as each completes.
pub(super) fn read_batch(
    reader: &Reader,
    jobs: impl IntoIterator<Item = (usize, ReadRequest)>,
    done: &mut dyn FnMut(usize, io::Result<Vec<u8>>),
) {
    let pool = pool();
    let mut jobs = jobs.into_iter();
    if pool.threads == 0 {
        // No worker could be started: read one after another here.
        for (index, request) in jobs {
            done(index, reader.read_exact(request.offset, request.len));
        }
        return;
    }
    let (reply, results) = mpsc::channel::<Reply>();
    let mut in_flight = 0usize;
    let mut exhausted = false;
    loop {
        if !exhausted && in_flight < MAX_IN_FLIGHT_PER_BATCH {
            let mut queue = pool.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            let mut queued = 0usize;
            while in_flight < MAX_IN_FLIGHT_PER_BATCH {
                let Some((index, request)) = jobs.next() else {
                    exhausted = true;
                    break;
                };
                queue.push_back(Job {
                    reader: reader.clone(),
                    offset: request.offset,
                    len: request.len,
                    index,
                    reply: Some(reply.clone()),
                });
                in_flight += 1;
                queued += 1;
            }
            drop(queue);
            for _ in 0..queued.min(pool.threads) {
                pool.shared.ready.notify_one();
            }
        }
        if in_flight == 0 {
            break;
        }
        // Every queued job answers exactly once (from `run` or `Drop`), and
        // this thread holds a sender, so `recv` only fails if that promise
        // were broken; report the rest as lost rather than hang or panic.
        match results.recv() {
            Ok((index, result)) => {
                in_flight -= 1;
                done(index, result);
            }
            Err(_) => break,
        }
    }
}
