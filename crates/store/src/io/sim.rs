//! A simulated in-memory disk for crash and fault tests, in the spirit of
//! SQLite's crash VFS and redb's `CrashBackend`.
//!
//! [`SimDir`] implements [`StoreDir`] and hands out [`SimFile`]s
//! implementing [`StoreFile`]. Nothing here touches the real filesystem,
//! reads a clock or uses thread randomness: every outcome is a function of
//! the operations issued and of the seeds the test passes.
//!
//! # Model
//!
//! Each file has a **durable image** (the bytes that survive power loss)
//! and a **pending list** of writes and `set_len` calls not yet synced.
//! The **live image**, which reads see, is the durable image with the
//! pending operations replayed on top in order. [`StoreFile::sync_data`]
//! moves a file's pending operations into its durable image.
//!
//! The *name* of a file created by `open_file(name, true)` is itself
//! pending until the next [`StoreDir::sync_dir`]: a crash before that loses
//! the file entirely, whatever was synced into it (as on a real
//! filesystem, where the directory entry needs its own `fsync`).
//!
//! # Operation counter
//!
//! Every call of `read_exact_at`, `write_all_at`, `sync_data`, `set_len`,
//! `len` (and so `is_empty`), `open_file`, `exists` and `sync_dir` is one
//! **operation** and takes the next index of a counter shared by the whole
//! directory, starting at 0 ([`SimDir::op_count`] is the number taken so
//! far, i.e. the index of the next operation). `open_file_read_only` is
//! an operation like `open_file`, and reads of a read-only file are
//! operations exactly like reads of a read-write one. Batched reads use the
//! trait's default implementation: one operation per request. Failed
//! operations take an index too. `lock_exclusive`, `lock_shared`,
//! `describe`, `read_backend`, the test helpers of [`SimDir`], and the
//! writes, `set_len` calls and syncs that a read-only file refuses (see
//! below) are not operations and never fail by injection.
//!
//! Operations that change something (creations, writes, `set_len`, syncs,
//! directory syncs) and succeed are recorded in an event log
//! ([`SimDir::events`]) so that tests can enumerate crash points.
//!
//! # Locks, read-only files and read-only media
//!
//! The directory has a readers-writer lock like a real one:
//! `lock_exclusive` is refused (`WouldBlock`) while any shared or exclusive
//! guard of the directory (or of a clone of its handle) is alive,
//! `lock_shared` while an exclusive one is.
//!
//! A file opened with `open_file_read_only` refuses `write_all_at`,
//! `set_len` and `sync_data` with `PermissionDenied`, changing nothing,
//! recording nothing and taking no operation index (a real read-only file
//! refuses them before any system call); its reads and lengths behave
//! exactly like those of a read-write file, fault injection included.
//!
//! [`SimDir::set_read_only_media`] makes the disk read-only, as a
//! read-only mount: every write, `set_len`, `sync_data`, `sync_dir`, file
//! creation and read-write open of an existing file fails with `EROFS`
//! (each still one operation, crashes and injected faults taking
//! precedence), while reads, lengths, listings and read-only opens keep
//! working. [`SimDir::mutating_op_count`] counts every call that would
//! change the disk (writes, `set_len`, syncs, directory syncs, and
//! `open_file` with `create`), whether it succeeded, failed or was refused,
//! so that a test can prove that a read-only open never even tried to
//! write.
//!
//! # Crashes
//!
//! [`SimDir::crash_image`] builds a new, independent directory holding what
//! a disk could contain after power loss at this moment ([`CrashMode`]:
//! unsynced writes dropped, kept, a random subset kept in order or
//! reordered, kept writes torn at a sector boundary or at any byte).
//! [`SimDir::set_crash_at`] stops a workload exactly at the n-th operation:
//! that operation and every later one fail with
//! `io::Error::other("simulated crash")` and change nothing, so an image
//! taken afterwards reflects exactly the operations before index n.
//!
//! # Faults
//!
//! [`SimDir::fail_op`] makes the operation with a given **absolute** index
//! fail with `EIO` or `ENOSPC`, once or (for `EIO`) persistently, or makes
//! the disk full from that operation on (writes and growing `set_len` calls
//! fail with `ENOSPC` until the faults are cleared). A failed operation
//! changes nothing: a failed write leaves the live image as it
//! was, a failed sync leaves the pending operations pending (a harness that
//! wants Linux's "fsync failure loses the dirty pages" behaviour can take a
//! [`CrashMode::DropUnsynced`] image).

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ubt_spec::rng::SplitMix64;

use super::{DirLock, ReadBackendKind, StoreDir, StoreFile};

mod crash;

pub use crash::CrashMode;

/// The sector size of the simulated disk: torn writes land in whole
/// sectors of this many bytes (aligned to file offsets).
pub const SECTOR_SIZE: u64 = 512;

/// The largest file the simulated disk holds (4 GiB); writes or `set_len`
/// beyond it fail with `EFBIG` instead of exhausting memory.
pub const MAX_FILE_LEN: u64 = 1 << 32;

/// An injected failure ([`SimDir::fail_op`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// The operation fails once with `EIO`.
    Eio,
    /// The operation fails once with `ENOSPC`.
    Enospc,
    /// The operation and every later one fail with `EIO`.
    EioPersistent,
    /// The disk is full from this operation on: every write and every
    /// `set_len` that grows a file fails with `ENOSPC` (changing nothing)
    /// until [`SimDir::clear_faults`] frees space; reads, syncs, lengths
    /// and shrinking `set_len` calls keep working.
    DiskFull,
}

/// What an operation is, as far as injected faults care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpKind {
    /// Needs free space: a write, or a `set_len` that grows the file.
    Allocating,
    /// Anything else.
    Other,
}

/// One recorded operation of the event log ([`SimDir::events`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimEvent {
    /// The operation's index in the directory's operation counter.
    pub index: u64,
    /// The file concerned; `None` for directory syncs.
    pub file: Option<String>,
    /// What happened.
    pub kind: SimEventKind,
}

/// What a recorded [`SimEvent`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimEventKind {
    /// `open_file` created the file (its name pending until `sync_dir`).
    Create,
    /// `len` bytes written at `offset`.
    Write {
        /// Byte offset in the file.
        offset: u64,
        /// Bytes written.
        len: u64,
    },
    /// The file was truncated or extended to `len` bytes.
    SetLen {
        /// The new length.
        len: u64,
    },
    /// `sync_data` on the file.
    Sync,
    /// `sync_dir` on the directory.
    SyncDir,
}

/// A write or `set_len` not yet synced.
#[derive(Clone)]
enum PendingOp {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

impl PendingOp {
    fn apply(&self, image: &mut Vec<u8>) {
        match self {
            PendingOp::Write { offset, data } => apply_write(image, *offset, data),
            PendingOp::SetLen(len) => image.resize(to_index(*len), 0),
        }
    }
}

/// An offset or length in a simulated file as an index (saturating: an
/// index past every file). Offsets are at most [`MAX_FILE_LEN`], which a
/// 64-bit `usize` holds.
fn to_index(offset: u64) -> usize {
    usize::try_from(offset).unwrap_or(usize::MAX)
}

/// Writes `data` at `offset`, zero-filling any gap past the end. Offsets
/// are checked against [`MAX_FILE_LEN`] before anything is recorded.
fn apply_write(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let start = to_index(offset);
    let end = start + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(data);
}

/// One simulated file.
struct FileState {
    name: String,
    durable: Vec<u8>,
    live: Vec<u8>,
    pending: Vec<PendingOp>,
    /// Bytes of data in `pending`, to choose between replaying the pending
    /// writes and copying the live image at sync.
    pending_bytes: usize,
    /// Whether the name survives a crash (set by `sync_dir`).
    name_durable: bool,
}

impl FileState {
    fn with_image(name: &str, image: Vec<u8>) -> Self {
        FileState {
            name: name.to_owned(),
            durable: image.clone(),
            live: image,
            pending: Vec::new(),
            pending_bytes: 0,
            name_durable: true,
        }
    }

    fn push_pending(&mut self, op: PendingOp) {
        if let PendingOp::Write { data, .. } = &op {
            self.pending_bytes += data.len();
        }
        self.pending.push(op);
    }

    fn sync(&mut self) {
        if self.pending_bytes >= self.live.len() {
            self.durable.clone_from(&self.live);
        } else {
            for op in &self.pending {
                op.apply(&mut self.durable);
            }
        }
        self.pending.clear();
        self.pending_bytes = 0;
    }

    /// Rebuilds the live image from the durable image and the pending list.
    fn replay_live(&mut self) {
        let mut live = self.durable.clone();
        for op in &self.pending {
            op.apply(&mut live);
        }
        self.live = live;
    }

    /// Overwrites the overlap of every pending write with `[offset, ..)`
    /// by the corresponding bytes of `bytes`.
    fn patch_pending(&mut self, offset: u64, bytes: &[u8]) {
        let end = offset + bytes.len() as u64;
        for op in &mut self.pending {
            if let PendingOp::Write {
                offset: w_off,
                data,
            } = op
            {
                let w_end = *w_off + data.len() as u64;
                let lo = offset.max(*w_off);
                let hi = end.min(w_end);
                if lo < hi {
                    data[to_index(lo - *w_off)..to_index(hi - *w_off)]
                        .copy_from_slice(&bytes[to_index(lo - offset)..to_index(hi - offset)]);
                }
            }
        }
    }
}

/// The shared state of a simulated directory.
struct Disk {
    files: Vec<FileState>,
    names: BTreeMap<String, usize>,
    ops: u64,
    events: Vec<SimEvent>,
    crash_at: Option<u64>,
    crashed: bool,
    faults: BTreeMap<u64, FaultKind>,
    persistent_from: Option<u64>,
    /// First operation index of a full disk ([`FaultKind::DiskFull`]).
    full_from: Option<u64>,
    /// Whether an exclusive lock guard is alive.
    exclusive: bool,
    /// How many shared lock guards are alive.
    shared: usize,
    /// Every mutating call fails with `EROFS` ([`SimDir::set_read_only_media`]).
    read_only_media: bool,
    /// Mutating calls so far ([`SimDir::mutating_op_count`]).
    mutating_calls: u64,
    /// Most requests in one batched read ([`SimDir::largest_read_batch`]).
    largest_read_batch: usize,
}

impl Disk {
    fn new() -> Self {
        Disk {
            files: Vec::new(),
            names: BTreeMap::new(),
            ops: 0,
            events: Vec::new(),
            crash_at: None,
            crashed: false,
            faults: BTreeMap::new(),
            persistent_from: None,
            full_from: None,
            exclusive: false,
            shared: 0,
            read_only_media: false,
            mutating_calls: 0,
            largest_read_batch: 0,
        }
    }

    /// Takes the next operation index, or fails it by crash or fault.
    fn begin_op(&mut self) -> io::Result<u64> {
        self.begin(OpKind::Other)
    }

    /// Like [`Disk::begin_op`] for an operation that needs free space.
    fn begin_allocating_op(&mut self) -> io::Result<u64> {
        self.begin(OpKind::Allocating)
    }

    fn begin(&mut self, kind: OpKind) -> io::Result<u64> {
        let index = self.ops;
        self.ops += 1;
        if self.crash_at.is_some_and(|n| index >= n) {
            self.crashed = true;
            return Err(io::Error::other("simulated crash"));
        }
        if self.persistent_from.is_some_and(|start| index >= start) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        if kind == OpKind::Allocating && self.full_from.is_some_and(|start| index >= start) {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        match self.faults.remove(&index) {
            Some(FaultKind::Eio | FaultKind::EioPersistent | FaultKind::DiskFull) => {
                Err(io::Error::from_raw_os_error(libc::EIO))
            }
            Some(FaultKind::Enospc) => Err(io::Error::from_raw_os_error(libc::ENOSPC)),
            None => Ok(index),
        }
    }

    /// Counts a call that would change the disk ([`SimDir::mutating_op_count`]).
    fn count_mutating(&mut self) {
        self.mutating_calls += 1;
    }

    /// Fails with `EROFS` if the media is read-only.
    fn check_writable_media(&self) -> io::Result<()> {
        if self.read_only_media {
            return Err(io::Error::from_raw_os_error(libc::EROFS));
        }
        Ok(())
    }

    fn record(&mut self, index: u64, file: Option<usize>, kind: SimEventKind) {
        let file = file.map(|i| self.files[i].name.clone());
        self.events.push(SimEvent { index, file, kind });
    }

    fn file_mut(&mut self, name: &str) -> io::Result<&mut FileState> {
        match self.names.get(name) {
            Some(&i) => Ok(&mut self.files[i]),
            None => Err(not_found(name)),
        }
    }

    fn add_file(&mut self, name: &str, state: FileState) -> usize {
        let index = self.files.len();
        self.files.push(state);
        self.names.insert(name.to_owned(), index);
        index
    }
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("simulated file {name:?} does not exist"),
    )
}

/// The end of `[offset, offset + len)`, if it fits the simulated disk.
fn checked_end(offset: u64, len: usize) -> io::Result<u64> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= MAX_FILE_LEN => Ok(end),
        _ => Err(io::Error::from_raw_os_error(libc::EFBIG)),
    }
}

fn lock_disk(disk: &Mutex<Disk>) -> MutexGuard<'_, Disk> {
    disk.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

static NEXT_DIR_ID: AtomicU64 = AtomicU64::new(0);

/// A simulated directory: a cheaply cloneable handle (clones share the same
/// disk) implementing [`StoreDir`]. See the [module docs](self).
#[derive(Clone)]
pub struct SimDir {
    id: u64,
    disk: Arc<Mutex<Disk>>,
}

impl fmt::Debug for SimDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let disk = self.lock();
        f.debug_struct("SimDir")
            .field("id", &self.id)
            .field("files", &disk.names.keys().collect::<Vec<_>>())
            .field("ops", &disk.ops)
            .field("read_only_media", &disk.read_only_media)
            .finish()
    }
}

impl Default for SimDir {
    fn default() -> Self {
        SimDir::new()
    }
}

impl SimDir {
    /// An empty simulated directory.
    pub fn new() -> Self {
        SimDir::from_disk(Disk::new())
    }

    fn from_disk(disk: Disk) -> Self {
        SimDir {
            id: NEXT_DIR_ID.fetch_add(1, Ordering::Relaxed),
            disk: Arc::new(Mutex::new(disk)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Disk> {
        lock_disk(&self.disk)
    }

    /// The number of operations issued so far, i.e. the index the next
    /// operation will take (see the [module docs](self)).
    pub fn op_count(&self) -> u64 {
        self.lock().ops
    }

    /// The number of calls so far that would change the disk: every
    /// `write_all_at`, `set_len` and `sync_data` of any file (read-only
    /// ones included), every `sync_dir` and every `open_file` with
    /// `create` set, whether it succeeded, failed (crash, injected fault,
    /// read-only media) or was refused by a read-only file. Not an
    /// operation. A test proves that nothing tried to write between two
    /// points by comparing this count.
    pub fn mutating_op_count(&self) -> u64 {
        self.lock().mutating_calls
    }

    /// The most requests any one batched read (`read_batch`,
    /// `read_batch_each`) of any file asked for so far: how many reads a
    /// caller holds in memory at once. Not an operation.
    pub fn largest_read_batch(&self) -> usize {
        self.lock().largest_read_batch
    }

    /// Makes the media read-only (`true`) or writable again (`false`): see
    /// the [module docs](self). Not an operation.
    pub fn set_read_only_media(&self, read_only: bool) {
        self.lock().read_only_media = read_only;
    }

    /// Whether the media is read-only ([`SimDir::set_read_only_media`]).
    pub fn read_only_media(&self) -> bool {
        self.lock().read_only_media
    }

    /// Every successful creation, write, `set_len`, sync and directory sync
    /// so far, in order.
    pub fn events(&self) -> Vec<SimEvent> {
        self.lock().events.clone()
    }

    /// Makes the operation with index `n` and every later one fail with
    /// `io::Error::other("simulated crash")` (kind `Other`) without effect;
    /// `None` lifts the crash. Either way resets [`SimDir::crashed`].
    pub fn set_crash_at(&self, n: Option<u64>) {
        let mut disk = self.lock();
        disk.crash_at = n;
        disk.crashed = false;
    }

    /// Whether an operation has been refused by [`SimDir::set_crash_at`]
    /// since it was last called.
    pub fn crashed(&self) -> bool {
        self.lock().crashed
    }

    /// Makes the operation with the **absolute** index `n` fail with the
    /// error of `kind` (`EIO` or `ENOSPC` as raw OS errors), without
    /// effect. [`FaultKind::EioPersistent`] also fails every operation
    /// after it. An index already passed never fires for the one-shot
    /// kinds; for the persistent kind it fails every further operation. A
    /// later call for the same index replaces a one-shot fault.
    pub fn fail_op(&self, n: u64, kind: FaultKind) {
        let mut disk = self.lock();
        match kind {
            FaultKind::EioPersistent => {
                disk.persistent_from = Some(disk.persistent_from.map_or(n, |s| s.min(n)));
            }
            FaultKind::DiskFull => {
                disk.full_from = Some(disk.full_from.map_or(n, |s| s.min(n)));
            }
            FaultKind::Eio | FaultKind::Enospc => {
                disk.faults.insert(n, kind);
            }
        }
    }

    /// Removes every injected fault (not the crash point).
    pub fn clear_faults(&self) {
        let mut disk = self.lock();
        disk.faults.clear();
        disk.persistent_from = None;
        disk.full_from = None;
    }

    /// A new, independent directory holding what the disk could contain
    /// after power loss now, according to `mode`; `seed` drives the choices
    /// of the random modes (all but [`CrashMode::DropUnsynced`] and
    /// [`CrashMode::KeepUnsynced`]; the same
    /// state, mode and seed always give the same image). The new directory
    /// has no pending operations, every name durable, an operation counter
    /// and a mutating-call count at 0, no events, faults, crash point or
    /// lock, and writable media.
    pub fn crash_image(&self, mode: CrashMode, seed: u64) -> SimDir {
        let disk = self.lock();
        let mut rng = SplitMix64(seed);
        let mut image_disk = Disk::new();
        for (name, &index) in &disk.names {
            if let Some(image) = crash::file_image(&disk.files[index], mode, &mut rng) {
                image_disk.add_file(name, FileState::with_image(name, image));
            }
        }
        SimDir::from_disk(image_disk)
    }

    /// The names of the files in the directory (durable or not), sorted.
    pub fn file_names(&self) -> Vec<String> {
        self.lock().names.keys().cloned().collect()
    }

    /// The live image of `name` (what reads see), if the file exists.
    pub fn file_bytes(&self, name: &str) -> Option<Vec<u8>> {
        let disk = self.lock();
        disk.names.get(name).map(|&i| disk.files[i].live.clone())
    }

    /// The durable image of `name`'s data, if the file exists (even if its
    /// name is not yet durable).
    pub fn durable_bytes(&self, name: &str) -> Option<Vec<u8>> {
        let disk = self.lock();
        disk.names.get(name).map(|&i| disk.files[i].durable.clone())
    }

    /// The number of pending (unsynced) writes and `set_len` calls of
    /// `name`, if the file exists.
    pub fn pending_ops(&self, name: &str) -> Option<usize> {
        let disk = self.lock();
        disk.names.get(name).map(|&i| disk.files[i].pending.len())
    }

    /// Flips bit `bit` (0..8, 0 the least significant) of the byte at
    /// `byte_offset` of `name`, as media corruption: in the durable image
    /// (if the byte lies inside it), in every pending write covering it
    /// (so that a later sync or crash image keeps the corruption) and so in
    /// the live image. Not an operation: never counted nor failed.
    ///
    /// Errors: `NotFound` if the file does not exist, `InvalidInput` if
    /// `bit >= 8` or the byte lies outside both images. A byte that only
    /// exists as zero fill of a pending extension (no pending write covers
    /// it) stays zero in the live image.
    pub fn flip_bit(&self, name: &str, byte_offset: u64, bit: u8) -> io::Result<()> {
        if bit >= 8 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bit {bit} is not in 0..8"),
            ));
        }
        let mut disk = self.lock();
        let file = disk.file_mut(name)?;
        let offset = to_index(byte_offset);
        if byte_offset >= file.durable.len() as u64 && byte_offset >= file.live.len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("offset {byte_offset} lies outside simulated file {name:?}"),
            ));
        }
        let mask = 1u8 << bit;
        if let Some(byte) = file.durable.get_mut(offset) {
            *byte ^= mask;
        }
        if file.pending.is_empty() {
            if let Some(byte) = file.live.get_mut(offset) {
                *byte ^= mask;
            }
        } else {
            for op in &mut file.pending {
                if let PendingOp::Write {
                    offset: w_off,
                    data,
                } = op
                {
                    if byte_offset >= *w_off && byte_offset - *w_off < data.len() as u64 {
                        data[to_index(byte_offset - *w_off)] ^= mask;
                    }
                }
            }
            file.replay_live();
        }
        Ok(())
    }

    /// Writes `bytes` at `offset` of `name` directly into the durable and
    /// live images (zero-filling any gap), creating the file with a durable
    /// name if it is missing. Pending writes overlapping the range are
    /// patched too, so that a later sync or crash image keeps the bytes.
    /// Not an operation: never counted nor failed, except with `EFBIG`
    /// past [`MAX_FILE_LEN`].
    pub fn write_raw(&self, name: &str, offset: u64, bytes: &[u8]) -> io::Result<()> {
        checked_end(offset, bytes.len())?;
        let mut disk = self.lock();
        if !disk.names.contains_key(name) {
            disk.add_file(name, FileState::with_image(name, Vec::new()));
        }
        let file = disk.file_mut(name)?;
        apply_write(&mut file.durable, offset, bytes);
        if file.pending.is_empty() {
            apply_write(&mut file.live, offset, bytes);
        } else {
            file.patch_pending(offset, bytes);
            file.replay_live();
        }
        Ok(())
    }
}

impl SimDir {
    /// Takes the directory's lock, shared or exclusive (not an operation).
    fn take_lock(&self, shared: bool) -> io::Result<Box<dyn DirLock>> {
        let mut disk = self.lock();
        if disk.exclusive || (!shared && disk.shared > 0) {
            let holder = if disk.exclusive {
                "a writer"
            } else {
                "a read-only handle"
            };
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("sim:{} is locked by {holder}", self.id),
            ));
        }
        if shared {
            disk.shared += 1;
        } else {
            disk.exclusive = true;
        }
        Ok(Box::new(SimLock {
            disk: Arc::clone(&self.disk),
            dir_id: self.id,
            shared,
        }))
    }

    fn file_handle(&self, name: &str, index: usize, read_only: bool) -> Arc<dyn StoreFile> {
        Arc::new(SimFile {
            disk: Arc::clone(&self.disk),
            dir_id: self.id,
            name: name.to_owned(),
            index,
            read_only,
        })
    }
}

impl StoreDir for SimDir {
    fn open_file(&self, name: &str, create: bool) -> io::Result<Arc<dyn StoreFile>> {
        let mut disk = self.lock();
        if create {
            disk.count_mutating();
        }
        let op = disk.begin_op()?;
        let existing = disk.names.get(name).copied();
        if existing.is_some() || create {
            // A read-write open (or a creation) on read-only media.
            disk.check_writable_media()?;
        }
        let index = match existing {
            Some(index) => index,
            None if create => {
                let index = disk.add_file(
                    name,
                    FileState {
                        name_durable: false,
                        ..FileState::with_image(name, Vec::new())
                    },
                );
                disk.record(op, Some(index), SimEventKind::Create);
                index
            }
            None => return Err(not_found(name)),
        };
        Ok(self.file_handle(name, index, false))
    }

    fn open_file_read_only(&self, name: &str) -> io::Result<Arc<dyn StoreFile>> {
        let mut disk = self.lock();
        disk.begin_op()?;
        match disk.names.get(name) {
            Some(&index) => Ok(self.file_handle(name, index, true)),
            None => Err(not_found(name)),
        }
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        let mut disk = self.lock();
        disk.begin_op()?;
        Ok(disk.names.contains_key(name))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut disk = self.lock();
        disk.begin_op()?;
        Ok(disk.names.keys().cloned().collect())
    }

    fn sync_dir(&self) -> io::Result<()> {
        let mut disk = self.lock();
        disk.count_mutating();
        let op = disk.begin_op()?;
        disk.check_writable_media()?;
        for file in &mut disk.files {
            file.name_durable = true;
        }
        disk.record(op, None, SimEventKind::SyncDir);
        Ok(())
    }

    fn lock_exclusive(&self) -> io::Result<Box<dyn DirLock>> {
        self.take_lock(false)
    }

    fn lock_shared(&self) -> io::Result<Box<dyn DirLock>> {
        self.take_lock(true)
    }

    fn describe(&self) -> String {
        format!("sim:{}", self.id)
    }
}

/// A lock of a [`SimDir`] (the writer's exclusive one or a shared one);
/// released on drop.
struct SimLock {
    disk: Arc<Mutex<Disk>>,
    dir_id: u64,
    shared: bool,
}

impl fmt::Debug for SimLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.shared { "shared" } else { "exclusive" };
        write!(f, "SimLock(sim:{}, {kind})", self.dir_id)
    }
}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut disk = lock_disk(&self.disk);
        if self.shared {
            disk.shared -= 1;
        } else {
            disk.exclusive = false;
        }
    }
}

impl DirLock for SimLock {}

/// An open file of a [`SimDir`], implementing [`StoreFile`]. Obtained from
/// [`StoreDir::open_file`] or [`StoreDir::open_file_read_only`]; every
/// method call is one operation of the directory, except the writes,
/// `set_len` calls and syncs a read-only file refuses.
pub struct SimFile {
    disk: Arc<Mutex<Disk>>,
    dir_id: u64,
    name: String,
    index: usize,
    read_only: bool,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = if self.read_only { ", read-only" } else { "" };
        write!(f, "SimFile(sim:{}/{}{mode})", self.dir_id, self.name)
    }
}

impl SimFile {
    fn lock(&self) -> MutexGuard<'_, Disk> {
        lock_disk(&self.disk)
    }

    /// Locks the disk for a call that would change it: counts the call
    /// and refuses it (no operation index, no effect) if the file was
    /// opened read-only.
    fn lock_for_mutation(&self, what: &str) -> io::Result<MutexGuard<'_, Disk>> {
        let mut disk = self.lock();
        disk.count_mutating();
        if self.read_only {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{what} simulated file {:?}: the file was opened read-only",
                    self.name
                ),
            ));
        }
        Ok(disk)
    }
}

impl StoreFile for SimFile {
    fn read_batch_each(
        &self,
        requests: &[crate::io::ReadRequest],
        done: &mut dyn FnMut(usize, io::Result<Vec<u8>>),
    ) {
        {
            let mut disk = self.lock();
            disk.largest_read_batch = disk.largest_read_batch.max(requests.len());
        }
        for (index, request) in requests.iter().enumerate() {
            let mut buf = vec![0u8; request.len];
            done(
                index,
                self.read_exact_at(&mut buf, request.offset).map(|()| buf),
            );
        }
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut disk = self.lock();
        disk.begin_op()?;
        if buf.is_empty() {
            return Ok(());
        }
        let live = &disk.files[self.index].live;
        match offset.checked_add(buf.len() as u64) {
            Some(end) if end <= live.len() as u64 => {
                buf.copy_from_slice(&live[to_index(offset)..to_index(end)]);
                Ok(())
            }
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read of {} bytes at {offset} past the end ({}) of simulated file {:?}",
                    buf.len(),
                    live.len(),
                    self.name
                ),
            )),
        }
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut disk = self.lock_for_mutation("write to")?;
        let op = disk.begin_allocating_op()?;
        disk.check_writable_media()?;
        checked_end(offset, buf.len())?;
        let file = &mut disk.files[self.index];
        if !buf.is_empty() {
            apply_write(&mut file.live, offset, buf);
            file.push_pending(PendingOp::Write {
                offset,
                data: buf.to_vec(),
            });
        }
        let kind = SimEventKind::Write {
            offset,
            len: buf.len() as u64,
        };
        disk.record(op, Some(self.index), kind);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut disk = self.lock_for_mutation("sync")?;
        let op = disk.begin_op()?;
        disk.check_writable_media()?;
        disk.files[self.index].sync();
        disk.record(op, Some(self.index), SimEventKind::Sync);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut disk = self.lock_for_mutation("set the length of")?;
        let grows = len > disk.files[self.index].live.len() as u64;
        let op = if grows {
            disk.begin_allocating_op()?
        } else {
            disk.begin_op()?
        };
        disk.check_writable_media()?;
        checked_end(len, 0)?;
        let file = &mut disk.files[self.index];
        file.live.resize(to_index(len), 0);
        file.push_pending(PendingOp::SetLen(len));
        disk.record(op, Some(self.index), SimEventKind::SetLen { len });
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let mut disk = self.lock();
        disk.begin_op()?;
        Ok(disk.files[self.index].live.len() as u64)
    }

    fn read_backend(&self) -> ReadBackendKind {
        ReadBackendKind::Sequential
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests;

#[cfg(test)]
mod fault_tests;

#[cfg(test)]
mod read_only_tests;
